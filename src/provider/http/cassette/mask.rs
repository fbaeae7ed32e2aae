//! What a cassette masks: every piece of 8 bytes or more of the API key, and
//! every `model.headers` value of 8 bytes or more, whole. Each is overwritten
//! with `*`, and every other byte stays where it is. Shorter keys and values
//! cannot be told from ordinary text, so they are not looked for. What a
//! cassette leaves out (credentials in a URL, sensitive headers, cookies) is
//! decided here too.

use std::collections::BTreeMap;

use aho_corasick::AhoCorasick;
use reqwest::header::HeaderMap;

use super::super::error::KEY_FRAGMENT;
use crate::error::{Error, Result};

/// What stands for a value left out of a cassette.
const REDACTED: &str = "[redacted]";

/// The secrets of one model, searched for at once. Any thread.
pub(super) struct Mask {
    /// Every piece of the key and every long header value; `None` when there
    /// is nothing to look for.
    patterns: Option<AhoCorasick>,
}

impl Mask {
    /// The mask of `key` and `header_values`. `INVALID_ARG` when they cannot
    /// be searched for (never for keys and headers of any sensible size): a
    /// cassette is never written unmasked.
    pub(super) fn new<'a>(key: Option<&'a str>, header_values: impl Iterator<Item = &'a str>) -> Result<Self> {
        let pieces = key.into_iter().flat_map(|key| key.as_bytes().windows(KEY_FRAGMENT));
        let values = header_values.map(str::as_bytes).filter(|value| value.len() >= KEY_FRAGMENT);
        let patterns: Vec<&[u8]> = pieces.chain(values).collect();
        if patterns.is_empty() {
            return Ok(Mask { patterns: None });
        }
        let patterns = AhoCorasick::new(patterns).map_err(|e| {
            Error::invalid_arg(format!("model.record: the secrets to mask could not be searched for: {e}"))
        })?;
        Ok(Mask { patterns: Some(patterns) })
    }

    /// Overwrites every secret in `bytes` with `*`, keeping every byte's place.
    /// A match that cuts a character covers the whole character, so UTF-8
    /// stays UTF-8. Matches are found on the bytes as given, overlapping ones
    /// too, before any is overwritten.
    pub(super) fn apply(&self, bytes: &mut [u8]) {
        let Some(patterns) = &self.patterns else { return };
        let found: Vec<(usize, usize)> =
            patterns.find_overlapping_iter(&*bytes).map(|found| (found.start(), found.end())).collect();
        let continues = |byte: u8| byte & 0b1100_0000 == 0b1000_0000;
        for (mut start, mut end) in found {
            while start > 0 && continues(bytes[start]) {
                start -= 1;
            }
            while end < bytes.len() && continues(bytes[end]) {
                end += 1;
            }
            bytes[start..end].fill(b'*');
        }
    }

    /// `text` with every secret masked.
    pub(super) fn text(&self, text: &str) -> String {
        let mut bytes = text.as_bytes().to_vec();
        self.apply(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// `url` without user name, password or the value of a `key` parameter,
    /// every secret masked.
    pub(super) fn url(&self, url: &reqwest::Url) -> String {
        let mut url = url.clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        if url.query_pairs().any(|(name, _)| name.eq_ignore_ascii_case("key")) {
            let pairs: Vec<(String, String)> = url
                .query_pairs()
                .map(|(name, value)| match name.eq_ignore_ascii_case("key") {
                    true => (name.into_owned(), REDACTED.to_owned()),
                    false => (name.into_owned(), value.into_owned()),
                })
                .collect();
            url.query_pairs_mut().clear().extend_pairs(pairs);
        }
        self.text(url.as_str())
    }

    /// Headers as a cassette keeps them: cookies left out, the values of
    /// sensitive headers and of those named in `own` written as `[redacted]`,
    /// secrets masked, repeated names joined with `, `.
    pub(super) fn headers(&self, headers: &HeaderMap, own: &[&str]) -> BTreeMap<String, String> {
        let mut kept = BTreeMap::<String, String>::new();
        for (name, value) in headers {
            if matches!(name.as_str(), "set-cookie" | "cookie") {
                continue;
            }
            let redacted = value.is_sensitive() || own.iter().any(|own| name.as_str().eq_ignore_ascii_case(own));
            let value = match redacted {
                true => REDACTED.to_owned(),
                false => self.text(&String::from_utf8_lossy(value.as_bytes())),
            };
            kept.entry(name.as_str().to_owned())
                .and_modify(|joined| {
                    joined.push_str(", ");
                    joined.push_str(&value);
                })
                .or_insert(value);
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_pieces_and_whole_header_values_are_masked_and_short_ones_not() {
        let mask = Mask::new(Some("a-much-longer-key-0123"), ["team-secret-42", "true"].into_iter()).unwrap();
        let text = "a-much-lo|nger-key-0123 team-secret-42 team-secret true";
        assert_eq!(mask.text(text), "*********|************* ************** team-secret true");
        let short = Mask::new(Some("x"), std::iter::empty()).unwrap();
        assert_eq!(short.text(r#"{"index":0,"x":1}"#), r#"{"index":0,"x":1}"#);
    }

    #[test]
    fn overlapping_secrets_are_all_masked_on_the_bytes_as_given() {
        let mask =
            Mask::new(Some("abcdefgh"), ["12345678", "abc12345678xyz", "abcdefgh-ORGSECRET"].into_iter()).unwrap();
        assert_eq!(mask.text("<abc12345678xyz>"), "<**************>");
        assert_eq!(mask.text("<abcdefgh-ORGSECRET>"), "<******************>");
    }

    #[test]
    fn a_match_that_cuts_a_character_covers_it() {
        let mask = Mask::new(Some("ключ-0123456"), std::iter::empty()).unwrap();
        // "ѻ" (D1 BB) ends with the byte "л" (D0 BB) ends with: the key's piece
        // from the middle of "л" on matches from the middle of "ѻ" on.
        assert_eq!(mask.text("ѻюч-01"), "*".repeat("ѻюч-01".len()));
    }
}
