//! `edit {path, edits: [{oldText, newText}]}`: replacements checked against the
//! original file, all or none.
//!
//! Each `oldText` must occur exactly once (overlapping occurrences count). When it
//! does not occur at all, a fuzzy match is tried: curly quotes, dashes, odd spaces
//! and trailing whitespace are normalised on both sides, and the match must still
//! be unique. Edits that overlap (or repeat) are refused. Only the matched spans
//! change; a byte order mark and the file's newline convention are kept.

use serde_json::{json, Value};

use super::changes::Changes;
use super::matching::{self, Budget};
use super::workspace::Workspace;
use super::{fold_typography as fold, object_schema, Stop};
use crate::tool::ToolResult;

pub(crate) const DESCRIPTION: &str = "Edit a file by replacing exact text. Each oldText must match exactly one place in the file as it is now (copy it from read output, with enough surrounding lines to be unique); all edits are checked against the original file and applied together, or none is.";

pub(crate) fn schema() -> Value {
    object_schema(
        json!({
            "path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
            "edits": {"type": "array", "minItems": 1, "items": object_schema(
                json!({"oldText": {"type": "string", "description": "The exact text to replace."},
                       "newText": {"type": "string", "description": "The text to put in its place."}}),
                &["oldText", "newText"])}
        }),
        &["path", "edits"],
    )
}

const BOM: &str = "\u{FEFF}";

/// Most places an `oldText` is counted in before the count is given as "or more".
const MOST_COUNTED: usize = 1000;
/// Most bytes one call's searches may read, all edits together (about 0.5 s on the
/// project's machine).
pub(crate) const MAX_SEARCH_BYTES: usize = 256 << 20;
/// Building the fuzzy index costs about this many search bytes per byte of file.
const INDEX_COST: usize = 16;

pub(crate) fn run(workspace: &Workspace, arguments: &Value, stop: &Stop) -> Result<ToolResult, String> {
    let path = workspace.resolve(arguments["path"].as_str().unwrap_or_default())?;
    let shown = path.shown.clone();
    let shown = shown.as_str();
    let _locked = workspace.lock([&path]);
    let bytes = workspace.load(&path)?;
    let original =
        String::from_utf8(bytes).map_err(|_| format!("{shown} is not a UTF-8 text file; edit cannot change it."))?;
    let (bom, body) = match original.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", original.as_str()),
    };
    let crlf = body.find('\n').is_some_and(|i| body[..i].ends_with('\r'));
    let edits: Vec<(String, String)> = arguments["edits"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |key: &str| in_convention(e[key].as_str().unwrap_or_default(), crlf);
            (text("oldText"), text("newText"))
        })
        .collect();
    let (updated, fuzzy) = apply(body, &edits, shown, &mut Budget::new(MAX_SEARCH_BYTES), stop)?;
    let mut changes = Changes::new(workspace);
    changes.write(path, format!("{bom}{updated}").into_bytes());
    changes.commit(stop)?;
    let mut text = format!("Applied {} edit(s) to {shown}.", edits.len());
    if !fuzzy.is_empty() {
        let numbers: Vec<String> = fuzzy.iter().map(|i| (i + 1).to_string()).collect();
        text.push_str(&format!(
            " Edit(s) {} matched only after normalising quotes, dashes and whitespace.",
            numbers.join(", ")
        ));
    }
    Ok(ToolResult::text(text))
}

/// `text` with its line breaks in the file's convention.
fn in_convention(text: &str, crlf: bool) -> String {
    let lf = text.replace("\r\n", "\n");
    if crlf {
        lf.replace('\n', "\r\n")
    } else {
        lf
    }
}

/// Applies `edits` to `body`; returns the new text and the (zero-based) edits that
/// matched fuzzily. Errors name the edit and say what to do.
pub(crate) fn apply(
    body: &str,
    edits: &[(String, String)],
    shown: &str,
    budget: &mut Budget,
    stop: &Stop,
) -> Result<(String, Vec<usize>), String> {
    let count = edits.len();
    let mut spans = Vec::with_capacity(count);
    let mut fuzzy = Vec::new();
    // Built when an edit first needs a fuzzy match.
    let mut normalized: Option<Normalized> = None;
    let too_much = |which: &str| {
        format!(
            "{which}: these edits need more searching than one call may do in a file of {} bytes; send them in several calls of fewer edits.",
            body.len()
        )
    };
    for (i, (old, _)) in edits.iter().enumerate() {
        stop.check()?;
        let which = format!("Edit {} of {count}", i + 1);
        if old.is_empty() {
            return Err(format!("{which}: oldText is empty; give the exact text to replace."));
        }
        if !budget.spend(body.len()) {
            return Err(too_much(&which));
        }
        let exact = occurrences(body, old);
        let span = match exact.as_slice() {
            [start] => (*start, start + old.len()),
            [] => {
                if normalized.is_none() && !budget.spend(body.len() * INDEX_COST) {
                    return Err(too_much(&which));
                }
                let normalized = normalized.get_or_insert_with(|| Normalized::new(body));
                if !budget.spend(normalized.text.len()) {
                    return Err(too_much(&which));
                }
                let matches = normalized.find(old);
                match matches.as_slice() {
                    [span] => {
                        fuzzy.push(i);
                        *span
                    }
                    [] => return Err(format!(
                        "{which}: oldText was not found in {shown}. Read the file again and copy the text exactly, including whitespace and line breaks."
                    )),
                    many => return Err(format!(
                        "{which}: oldText was not found exactly, and after normalising quotes, dashes and whitespace it matches {} places in {shown}; copy the exact text with more surrounding lines.",
                        places(many)
                    )),
                }
            }
            many => {
                return Err(format!(
                    "{which}: oldText matches {} places in {shown}; include more surrounding lines so it matches exactly one.",
                    places(many)
                ))
            }
        };
        spans.push((span, i));
    }
    spans.sort();
    for pair in spans.windows(2) {
        let ((first, a), (second, b)) = (pair[0], pair[1]);
        if second.0 < first.1 {
            let (a, b) = (a.min(b) + 1, a.max(b) + 1);
            return Err(if first == second {
                format!("Edits {a} and {b} replace the same text; merge them into one edit.")
            } else {
                format!("Edits {a} and {b} overlap in {shown}; merge them into one edit.")
            });
        }
    }
    let mut updated = String::with_capacity(body.len());
    let mut at = 0;
    for ((start, end), i) in spans {
        updated.push_str(&body[at..start]);
        updated.push_str(&edits[i].1);
        at = end;
    }
    updated.push_str(&body[at..]);
    Ok((updated, fuzzy))
}

/// Byte offsets of the occurrences of `needle` (overlapping ones included), the
/// first [`MOST_COUNTED`] of them. A UTF-8 needle only matches on character
/// boundaries.
fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    matching::occurrences(haystack.as_bytes(), needle.as_bytes(), 0, MOST_COUNTED)
}

/// How many places `found` says, "1000 or more" at the counting limit.
fn places<T>(found: &[T]) -> String {
    match found.len() {
        MOST_COUNTED => format!("{MOST_COUNTED} or more"),
        n => n.to_string(),
    }
}

/// A text with quotes, dashes and spaces folded, trailing whitespace dropped and
/// CRLF read as LF, remembering where each character came from.
struct Normalized {
    text: String,
    /// For each byte of `text` that starts a character: the original span.
    origin: Vec<(usize, usize, usize)>,
}

impl Normalized {
    fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut origin = Vec::with_capacity(original.len());
        let mut line_start = 0;
        for line in original.split_inclusive('\n') {
            let content = line.trim_end_matches(['\n', '\r']);
            let kept = content.trim_end_matches(|c: char| fold(c) == ' ');
            for (offset, c) in kept.char_indices() {
                origin.push((text.len(), line_start + offset, line_start + offset + c.len_utf8()));
                text.push(fold(c));
            }
            if line.ends_with('\n') {
                let newline = line_start + line.len() - if line.ends_with("\r\n") { 2 } else { 1 };
                origin.push((text.len(), newline, line_start + line.len()));
                text.push('\n');
            }
            line_start += line.len();
        }
        Normalized { text, origin }
    }

    /// The original spans of every fuzzy occurrence of `needle`.
    fn find(&self, needle: &str) -> Vec<(usize, usize)> {
        let needle = Normalized::new(needle).text;
        if needle.is_empty() {
            return Vec::new();
        }
        occurrences(&self.text, &needle)
            .into_iter()
            .map(|start| {
                let first = self.origin.partition_point(|o| o.0 < start);
                let last = self.origin.partition_point(|o| o.0 < start + needle.len()) - 1;
                (self.origin[first].1, self.origin[last].2)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(body: &str, edits: &[(&str, &str)]) -> Result<String, String> {
        let edits: Vec<(String, String)> = edits.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        apply(body, &edits, "f.txt", &mut Budget::new(MAX_SEARCH_BYTES), &Stop::never()).map(|(text, _)| text)
    }

    #[test]
    fn exact_edits_change_only_their_spans() {
        assert_eq!(edit("a\nb\nc\n", &[("b", "B"), ("c\n", "C\n")]).unwrap(), "a\nB\nC\n");
    }

    #[test]
    fn ambiguous_and_missing_text_is_refused_with_its_edit_number() {
        let err = edit("x x", &[("y", "z"), ("x", "z")]).unwrap_err();
        assert!(err.starts_with("Edit 1 of 2") && err.contains("not found"), "{err}");
        let err = edit("x x", &[("x", "z")]).unwrap_err();
        assert!(err.contains("matches 2 places"), "{err}");
    }

    #[test]
    fn many_searches_of_a_large_file_hit_the_budget() {
        let body = "x".repeat(1000) + "a b c";
        let edits =
            [("a".to_owned(), "A".to_owned()), ("b".to_owned(), "B".to_owned()), ("c".to_owned(), "C".to_owned())];
        let err = apply(&body, &edits, "f.txt", &mut Budget::new(2 * body.len()), &Stop::never()).unwrap_err();
        assert!(err.starts_with("Edit 3 of 3") && err.contains("several calls"), "{err}");
        assert!(apply(&body, &edits, "f.txt", &mut Budget::new(3 * body.len()), &Stop::never()).is_ok());
    }

    #[test]
    fn overlapping_occurrences_count() {
        assert!(edit("aaa", &[("aa", "b")]).unwrap_err().contains("matches 2 places"));
    }

    #[test]
    fn overlapping_and_duplicate_edits_are_refused() {
        assert!(edit("abcdef", &[("abcd", "x"), ("cdef", "y")]).unwrap_err().contains("overlap"));
        assert!(edit("abc", &[("b", "x"), ("b", "y")]).unwrap_err().contains("same text"));
    }

    #[test]
    fn fuzzy_matching_table() {
        let cases = [
            ("say \u{201C}hi\u{201D} now", "say \"hi\"", "X", "X now"),
            ("it\u{2019}s here", "it's", "it is", "it is here"),
            ("a \u{2013} b \u{2014} c", "a - b - c", "abc", "abc"),
            ("one\u{00A0}two", "one two", "1 2", "1 2"),
            ("keep  \nnext", "keep\nnext", "K\nN", "K\nN"),
            ("tab\there", "tab here", "T", "T"),
        ];
        for (body, old, new, expected) in cases {
            assert_eq!(edit(body, &[(old, new)]).unwrap(), expected, "{body:?} / {old:?}");
        }
    }

    #[test]
    fn a_fuzzy_match_must_be_unique() {
        let err = edit("\u{201C}a\u{201D} and \u{201C}a\u{201D}", &[("\"a\"", "b")]).unwrap_err();
        assert!(err.contains("matches 2 places"), "{err}");
    }

    #[test]
    fn crlf_lines_match_lf_text_and_keep_their_bytes() {
        let body = "one\r\ntwo  \r\nthree\r\n";
        assert_eq!(
            edit(body, &[(&in_convention("two\nthree", true), &in_convention("2\n3", true))]).unwrap(),
            "one\r\n2\r\n3\r\n"
        );
        assert_eq!(edit(body, &[("one", "1")]).unwrap(), "1\r\ntwo  \r\nthree\r\n");
    }
}
