//! The cassette file: JSON lines, the first `{"ferrule_cassette":1}`, then one
//! [`Exchange`] a line (docs/recording.md).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorCode};

/// The first line of every cassette.
pub(super) const HEADER: &str = r#"{"ferrule_cassette":1}"#;

/// One request and the response it got, as a cassette line holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Exchange {
    /// `POST`.
    pub(super) method: String,
    /// The request's URL, without credentials.
    pub(super) url: String,
    /// The request's headers, without secret values (for reading; never
    /// matched).
    #[serde(default)]
    pub(super) request_headers: BTreeMap<String, String>,
    /// The request body as sent, secrets masked.
    pub(super) body: String,
    /// The response's HTTP status.
    pub(super) status: u16,
    /// The response's headers, without cookies or secret values.
    #[serde(default)]
    pub(super) headers: BTreeMap<String, String>,
    /// The response body as it arrived, chunk by chunk.
    #[serde(default)]
    pub(super) chunks: Vec<Chunk>,
    /// How reading the response failed, when it did (after `chunks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) error: Option<RecordedError>,
}

/// A chunk of a response body.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum Chunk {
    /// Its text, when it is UTF-8 on its own.
    Text(String),
    /// Its bytes in base64 (a character split between two chunks).
    Bytes {
        /// The bytes.
        base64: String,
    },
}

impl Chunk {
    /// A chunk of `bytes`, as text when they are UTF-8.
    pub(super) fn of(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => Chunk::Text(text.to_owned()),
            Err(_) => Chunk::Bytes { base64: base64::engine::general_purpose::STANDARD.encode(bytes) },
        }
    }
}

/// A failure while a response was read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordedError {
    /// Its code.
    pub(super) code: ErrorCode,
    /// Its message, secrets masked.
    pub(super) message: String,
}

/// A recorded exchange, with what a request is matched on.
pub(super) struct Recorded {
    /// The request's path and query.
    pub(super) path: String,
    pub(super) exchange: Arc<ReplayedExchange>,
}

/// An exchange ready to be served: its chunks decoded.
pub(crate) struct ReplayedExchange {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) chunks: Vec<Bytes>,
    pub(crate) error: Option<Error>,
    pub(super) method: String,
    pub(super) body: String,
}

/// Reads a cassette's text. A last line cut short (no line break after it,
/// and not JSON: a process ended while writing it) is left out, as the
/// writer cuts it off; any other line that is not an exchange is an error
/// naming it.
pub(super) fn read(text: &[u8]) -> Result<Vec<Recorded>, String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("it is not UTF-8: {e}"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()).peekable();
    match lines.next() {
        Some((_, first)) if is_header(first) => {}
        _ => return Err(format!("it is not a ferrule cassette (its first line is not {HEADER})")),
    }
    let mut recorded = Vec::new();
    while let Some((at, line)) = lines.next() {
        let line_name = format!("line {}", at + 1);
        let exchange = crate::json::parse_document::<Exchange>(&line_name, line).map_err(|e| e.message);
        let cut_short = lines.peek().is_none()
            && !text.ends_with('\n')
            && serde_json::from_str::<serde::de::IgnoredAny>(line).is_err();
        match exchange {
            Ok(exchange) => recorded.push(replayable(exchange).map_err(|e| format!("{line_name}: {e}"))?),
            Err(_) if cut_short => {}
            Err(error) => return Err(error),
        }
    }
    Ok(recorded)
}

fn is_header(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).ok() == serde_json::from_str(HEADER).ok()
}

/// An exchange read from a cassette, made ready to serve.
fn replayable(exchange: Exchange) -> Result<Recorded, String> {
    let mut headers = HeaderMap::new();
    for (name, value) in &exchange.headers {
        let name = HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {name}: {e}"))?;
        headers.insert(name, value);
    }
    let chunks = exchange.chunks.into_iter().map(|chunk| match chunk {
        Chunk::Text(text) => Ok(Bytes::from(text)),
        Chunk::Bytes { base64 } => base64::engine::general_purpose::STANDARD
            .decode(base64)
            .map(Bytes::from)
            .map_err(|e| format!("a chunk's base64: {e}")),
    });
    let chunks = chunks.collect::<Result<Vec<_>, _>>()?;
    Ok(Recorded {
        path: path_and_query(&exchange.url).to_owned(),
        exchange: Arc::new(ReplayedExchange {
            status: exchange.status,
            headers,
            chunks,
            error: exchange.error.map(|e| Error::new(e.code, e.message)),
            method: exchange.method,
            body: exchange.body,
        }),
    })
}

/// What a request is matched on beside its method and body: the path and
/// query of a URL written as a cassette holds it (read as text: masking may
/// have left a URL that no longer parses).
pub(super) fn path_and_query(url: &str) -> &str {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    after_scheme.find('/').map_or("/", |at| &after_scheme[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXCHANGE: &str = r#"{"method":"POST","url":"http://h/v1/x","body":"{}","status":200,"chunks":["a"]}"#;

    #[test]
    fn a_byte_order_mark_crlf_and_a_last_line_cut_short_are_read() {
        let text = format!("\u{feff}{HEADER}\r\n{EXCHANGE}\r\n\r\n{EXCHANGE}\r\n{{\"method\":\"PO");
        assert_eq!(read(text.as_bytes()).unwrap().len(), 2);
        let whole_last = format!("{HEADER}\n{EXCHANGE}");
        assert_eq!(read(whole_last.as_bytes()).unwrap().len(), 1);
    }

    #[test]
    fn a_path_is_read_from_the_url_as_text() {
        assert_eq!(
            path_and_query("https://h:1/v1beta/models/m:streamGenerateContent?alt=sse"),
            "/v1beta/models/m:streamGenerateContent?alt=sse"
        );
        assert_eq!(path_and_query("******************/v1/chat/completions"), "/v1/chat/completions");
        assert_eq!(path_and_query("http://h"), "/");
    }

    #[test]
    fn a_line_that_is_not_an_exchange_is_named() {
        let text = format!("{HEADER}\n{EXCHANGE}\n{{\"method\":\"POST\"}}\n{EXCHANGE}\n");
        assert!(read(text.as_bytes()).err().unwrap().starts_with("line 3: "));
        let repeated = format!("{HEADER}\n{}\n", EXCHANGE.replace(r#""status":200"#, r#""status":200,"status":500"#));
        assert!(read(repeated.as_bytes()).err().unwrap().contains("status"));
        assert!(read(b"{\"hello\":1}\n").err().unwrap().contains("not a ferrule cassette"));
    }
}
