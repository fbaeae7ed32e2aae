//! Cassettes (`model.record`): a model's HTTP exchanges written to a file as
//! they happen, and served from it in their place, with no network.
//!
//! A cassette is JSON lines (docs/recording.md): the line
//! `{"ferrule_cassette":1}`, then one [`Exchange`] a line in the order the
//! requests were sent. Nothing secret reaches the file: the values of
//! sensitive headers are left out, a `key` query parameter's value too, and
//! every piece of the API key or of a `model.headers` value is overwritten
//! with `*` wherever it appears (URL, bodies, response headers, the streamed
//! response taken whole, so a key split between two chunks is caught and the
//! chunk boundaries stay where they were).
//!
//! Replay matches a request on its method, its path with the query, and its
//! exact body (masked the same way): ferrule's request bodies are the same
//! bytes for the same transcript, and the ids ferrule makes up for calls that
//! came without one are derived from the request's body while a cassette is
//! in use (see [`made_up_ids_seed`]), so the next body matches too. Each
//! recorded exchange answers one request, the first unused one that matches.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use reqwest::header::HeaderMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Secret;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::{RecordConfig, RecordMode};

/// The first line of every cassette.
const HEADER: &str = r#"{"ferrule_cassette":1}"#;
/// What stands for a value left out of a cassette.
const REDACTED: &str = "[redacted]";
/// Bytes of a body shown either side of where a request first differs from the
/// nearest recorded one.
const DIFF_CONTEXT: usize = 48;

/// One request and the response it got, as a cassette line holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Exchange {
    /// `POST`.
    pub(crate) method: String,
    /// The request's URL, without credentials.
    pub(crate) url: String,
    /// The request's headers, without secret values (for reading; never
    /// matched).
    #[serde(default)]
    pub(crate) request_headers: BTreeMap<String, String>,
    /// The request body as sent.
    pub(crate) body: String,
    /// The response's HTTP status.
    pub(crate) status: u16,
    /// The response's headers, without cookies or secret values.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// The response body as it arrived, chunk by chunk.
    #[serde(default)]
    pub(crate) chunks: Vec<Chunk>,
    /// How reading the response failed, when it did (after `chunks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<RecordedError>,
}

/// A chunk of a response body: its text, or its bytes in base64 when they are
/// not UTF-8 on their own (a character split between two chunks).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Chunk {
    Text(String),
    Bytes { base64: String },
}

/// A failure while a response was read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordedError {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
}

/// A recorded exchange, with what a request is matched on.
struct Recorded {
    path: String,
    exchange: Arc<ReplayedExchange>,
}

/// An exchange ready to be served: its chunks decoded.
pub(crate) struct ReplayedExchange {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) chunks: Vec<Bytes>,
    pub(crate) error: Option<Error>,
    method: String,
    body: String,
}

/// What `ferrule_agent_unused_recordings` writes: the exchanges of a replayed
/// cassette that no request used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct UnusedRecordings {
    /// The exchanges, in cassette order.
    pub unused: Vec<UnusedExchange>,
}

/// A recorded exchange no request used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct UnusedExchange {
    /// Its place in the cassette: 1 for the first exchange.
    pub index: usize,
    /// Its method.
    pub method: String,
    /// Its path and query.
    pub path: String,
}

/// One model's cassette. Shared by the model's requests, on any thread.
pub(crate) struct Cassette {
    mode: RecordMode,
    path: PathBuf,
    /// The secrets masked out of everything written.
    secrets: Vec<Secret>,
    /// What was read at build (replay modes).
    recorded: Vec<Recorded>,
    /// Which of `recorded` answered a request.
    used: Mutex<Vec<bool>>,
    /// Where new exchanges go (record modes), and why writing stopped.
    writer: Option<Mutex<Writer>>,
    /// The headers every request carries, as the cassette keeps them.
    request_headers: BTreeMap<String, String>,
}

struct Writer {
    file: File,
    failed: Option<String>,
}

impl Cassette {
    /// Opens the cassette `config` names: read (replay modes), created anew
    /// (`record`) or opened to add to (`replay_or_record`). `INVALID_ARG` when
    /// it cannot be read or written, or is not a cassette. `secrets` are masked
    /// out of what is written; `request_headers` are those every request
    /// carries.
    pub(crate) fn open(config: &RecordConfig, secrets: Vec<Secret>, request_headers: &HeaderMap) -> Result<Self> {
        let path = PathBuf::from(&config.path);
        if config.path.trim().is_empty() {
            return Err(Error::invalid_arg("model.record.path must name a file"));
        }
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            Error::invalid_arg(format!("model.record.path: {what} {}: {e}", path.display()))
        };
        let existing = match config.mode {
            RecordMode::Record => None,
            RecordMode::Replay => Some(std::fs::read(&path).map_err(|e| fail("cannot read", &e))?),
            RecordMode::ReplayOrRecord => match std::fs::read(&path) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(fail("cannot read", &e)),
            },
        };
        let recorded = match &existing {
            Some(text) => read(text).map_err(|e| fail("cannot replay", &e))?,
            None => Vec::new(),
        };
        let writer = match (config.mode, &existing) {
            (RecordMode::Replay, _) => None,
            (RecordMode::ReplayOrRecord, Some(_)) => {
                let file = File::options().append(true).open(&path).map_err(|e| fail("cannot write", &e))?;
                Some(Mutex::new(Writer { file, failed: None }))
            }
            _ => {
                let mut file = File::create(&path).map_err(|e| fail("cannot create", &e))?;
                writeln!(file, "{HEADER}").map_err(|e| fail("cannot write", &e))?;
                Some(Mutex::new(Writer { file, failed: None }))
            }
        };
        let used = Mutex::new(vec![false; recorded.len()]);
        let mut cassette =
            Cassette { mode: config.mode, path, secrets, recorded, used, writer, request_headers: BTreeMap::new() };
        cassette.request_headers = cassette.masked_headers(request_headers);
        Ok(cassette)
    }

    /// The request body as the cassette holds it: every secret masked.
    pub(crate) fn masked_body(&self, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        self.mask(&mut body);
        body
    }

    /// The recorded exchange that answers a request (its body masked), if the
    /// cassette replays and one still unused matches; else, in `replay` mode,
    /// `REPLAY_MISMATCH` saying what the nearest recorded request differs in.
    /// `Ok(None)`: the request goes to the network.
    pub(crate) fn answer(&self, url: &reqwest::Url, body: &[u8]) -> Result<Option<Arc<ReplayedExchange>>> {
        if !self.replays() {
            return Ok(None);
        }
        let path = self.path_of(url);
        let mut used = self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let matches = |recorded: &Recorded| {
            recorded.exchange.method == "POST" && recorded.path == path && recorded.exchange.body.as_bytes() == body
        };
        if let Some(index) = (0..self.recorded.len()).find(|&i| !used[i] && matches(&self.recorded[i])) {
            used[index] = true;
            return Ok(Some(self.recorded[index].exchange.clone()));
        }
        if self.mode == RecordMode::ReplayOrRecord {
            return Ok(None);
        }
        let unused = used.iter().filter(|used| !**used).count();
        let mut message = format!(
            "replay: no unused exchange of {} matches POST {path} ({} recorded, {unused} unused)",
            self.path.display(),
            self.recorded.len()
        );
        let same_path = (0..self.recorded.len()).filter(|&i| !used[i] && self.recorded[i].path == path);
        if let Some(nearest) = same_path.max_by_key(|&i| common_prefix(self.recorded[i].exchange.body.as_bytes(), body))
        {
            let recorded = self.recorded[nearest].exchange.body.as_bytes();
            let at = common_prefix(recorded, body);
            message.push_str(&format!(
                "; the body differs from unused exchange {} at byte {at}: recorded {:?}, sent {:?}",
                nearest + 1,
                excerpt(recorded, at),
                excerpt(body, at)
            ));
        }
        Err(Error::new(ErrorCode::ReplayMismatch, message))
    }

    /// Whether exchanges are written; `INVALID_ARG` once writing failed, so a
    /// run learns that its cassette is incomplete.
    pub(crate) fn records(&self) -> Result<bool> {
        let Some(writer) = &self.writer else { return Ok(false) };
        let writer = writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match &writer.failed {
            Some(failure) => Err(Error::invalid_arg(format!(
                "model.record.path: writing {} failed, so the cassette is incomplete: {failure}",
                self.path.display()
            ))),
            None => Ok(true),
        }
    }

    /// Whether requests are answered from the cassette.
    pub(crate) fn replays(&self) -> bool {
        self.mode != RecordMode::Record
    }

    /// The recorded exchanges no request used, in cassette order.
    pub(crate) fn unused(&self) -> Vec<UnusedExchange> {
        let used = self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let unused = self.recorded.iter().enumerate().filter(|(i, _)| !used[*i]);
        unused
            .map(|(i, recorded)| UnusedExchange {
                index: i + 1,
                method: recorded.exchange.method.clone(),
                path: recorded.path.clone(),
            })
            .collect()
    }

    /// Starts the recording of a request (its body masked), its response's
    /// status and headers in: written when the returned tape is dropped, with
    /// whatever of the body was read by then.
    pub(crate) fn tape(self: &Arc<Self>, url: &reqwest::Url, masked_body: &[u8], response: &reqwest::Response) -> Tape {
        let exchange = Exchange {
            method: "POST".to_owned(),
            url: self.masked_url(url).to_string(),
            request_headers: self.request_headers.clone(),
            body: String::from_utf8_lossy(masked_body).into_owned(),
            status: response.status().as_u16(),
            headers: self.masked_headers(response.headers()),
            chunks: Vec::new(),
            error: None,
        };
        Tape { cassette: self.clone(), exchange, chunks: Vec::new(), complete: false }
    }

    fn mask(&self, bytes: &mut [u8]) {
        for secret in &self.secrets {
            secret.mask(bytes);
        }
    }

    /// `url` without user name, password or the value of a `key` parameter,
    /// every secret masked.
    fn masked_url(&self, url: &reqwest::Url) -> reqwest::Url {
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
        let mut text = url.to_string().into_bytes();
        self.mask(&mut text);
        reqwest::Url::parse(&String::from_utf8_lossy(&text)).unwrap_or(url)
    }

    /// The path and query a request is matched on.
    fn path_of(&self, url: &reqwest::Url) -> String {
        path_and_query(&self.masked_url(url))
    }

    /// Headers as a cassette keeps them: cookies left out, sensitive values
    /// replaced, secrets masked, repeated names joined with `, `.
    fn masked_headers(&self, headers: &HeaderMap) -> BTreeMap<String, String> {
        let mut kept = BTreeMap::<String, String>::new();
        for (name, value) in headers {
            if matches!(name.as_str(), "set-cookie" | "cookie") {
                continue;
            }
            let value = match value.is_sensitive() {
                true => REDACTED.to_owned(),
                false => {
                    let mut bytes = value.as_bytes().to_vec();
                    self.mask(&mut bytes);
                    String::from_utf8_lossy(&bytes).into_owned()
                }
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

    fn write(&self, exchange: &Exchange) {
        let Some(writer) = &self.writer else { return };
        let mut line = serde_json::to_vec(exchange).unwrap_or_default();
        line.push(b'\n');
        let mut writer = writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if writer.failed.is_none() {
            if let Err(e) = writer.file.write_all(&line) {
                writer.failed = Some(e.to_string());
            }
        }
    }
}

/// A response on its way to a cassette: its chunks as read, written (masked)
/// when it is dropped, whether the response ended, failed or was abandoned.
pub(crate) struct Tape {
    cassette: Arc<Cassette>,
    exchange: Exchange,
    chunks: Vec<Bytes>,
    complete: bool,
}

impl Tape {
    /// A chunk of the body, as read.
    pub(crate) fn chunk(&mut self, chunk: &Bytes) {
        self.chunks.push(chunk.clone());
    }

    /// The response's content is complete (what follows is only drained).
    pub(crate) fn complete(&mut self) {
        self.complete = true;
    }

    /// Reading the body failed with `error`.
    pub(crate) fn failed(&mut self, error: &Error) {
        self.exchange.error = Some(RecordedError { code: error.code, message: error.message.clone() });
    }
}

impl Drop for Tape {
    fn drop(&mut self) {
        if !self.complete && self.exchange.error.is_none() && (200..300).contains(&self.exchange.status) {
            self.exchange.error = Some(RecordedError {
                code: ErrorCode::Cancelled,
                message: "the response was not read to its end: the request timed out or its run was cancelled"
                    .to_owned(),
            });
        }
        // The whole stream is masked at once, so a secret split between two
        // chunks is found; masking keeps every byte's place, so the chunks are
        // cut where they were.
        let mut whole = self.chunks.concat();
        self.cassette.mask(&mut whole);
        let mut rest = &whole[..];
        for chunk in &self.chunks {
            let (this, next) = rest.split_at(chunk.len());
            rest = next;
            self.exchange.chunks.push(match std::str::from_utf8(this) {
                Ok(text) => Chunk::Text(text.to_owned()),
                Err(_) => Chunk::Bytes { base64: base64::engine::general_purpose::STANDARD.encode(this) },
            });
        }
        self.cassette.write(&self.exchange);
    }
}

/// Reads a cassette's text.
fn read(text: &[u8]) -> std::result::Result<Vec<Recorded>, String> {
    let text = std::str::from_utf8(text).map_err(|e| format!("it is not UTF-8: {e}"))?;
    let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty());
    match lines.next() {
        Some((_, first))
            if serde_json::from_str::<serde_json::Value>(first).ok() == serde_json::from_str(HEADER).ok() => {}
        _ => return Err(format!("it is not a ferrule cassette (its first line is not {HEADER})")),
    }
    lines
        .map(|(at, line)| {
            let line_name = format!("line {}", at + 1);
            let exchange: Exchange = crate::json::parse_document(&line_name, line).map_err(|e| e.message)?;
            replayable(exchange).map_err(|e| format!("{line_name}: {e}"))
        })
        .collect()
}

/// An exchange read from a cassette, made ready to serve.
fn replayable(exchange: Exchange) -> std::result::Result<Recorded, String> {
    let url = reqwest::Url::parse(&exchange.url).map_err(|e| format!("url {:?}: {e}", exchange.url))?;
    let mut headers = HeaderMap::new();
    for (name, value) in &exchange.headers {
        let name = reqwest::header::HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
        let value =
            reqwest::header::HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {name}: {e}"))?;
        headers.insert(name, value);
    }
    let chunks = exchange.chunks.into_iter().map(|chunk| match chunk {
        Chunk::Text(text) => Ok(Bytes::from(text)),
        Chunk::Bytes { base64 } => base64::engine::general_purpose::STANDARD
            .decode(base64)
            .map(Bytes::from)
            .map_err(|e| format!("a chunk's base64: {e}")),
    });
    let chunks = chunks.collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Recorded {
        path: path_and_query(&url),
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

fn path_and_query(url: &reqwest::Url) -> String {
    match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(a, b)| a == b).count()
}

/// Up to [`DIFF_CONTEXT`] bytes of `body` either side of `at`.
fn excerpt(body: &[u8], at: usize) -> String {
    let start = at.saturating_sub(DIFF_CONTEXT);
    let end = (at + DIFF_CONTEXT).min(body.len());
    String::from_utf8_lossy(&body[start.min(end)..end]).into_owned()
}

/// The seed of the ids made up for calls of the response to `body` while a
/// cassette is in use: the same request gets the same ids, recorded or
/// replayed (FNV-1a of the masked body, stable across builds).
pub(crate) fn made_up_ids_seed(body: &[u8]) -> u64 {
    body.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cassette being recorded in a directory that lasts as long as the
    /// returned guard.
    fn cassette(secrets: &[&str]) -> (Cassette, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl").to_str().unwrap().to_owned();
        let secrets = secrets.iter().map(|s| Secret::new((*s).to_owned())).collect();
        let config = RecordConfig { path, mode: RecordMode::Record };
        (Cassette::open(&config, secrets, &HeaderMap::new()).unwrap(), dir)
    }

    /// A tape of a request that got a 200.
    fn tape(cassette: &Arc<Cassette>) -> Tape {
        let exchange = Exchange {
            method: "POST".into(),
            url: "http://127.0.0.1/v1/messages".into(),
            request_headers: BTreeMap::new(),
            body: "{}".into(),
            status: 200,
            headers: BTreeMap::new(),
            chunks: Vec::new(),
            error: None,
        };
        Tape { cassette: cassette.clone(), exchange, chunks: Vec::new(), complete: false }
    }

    #[test]
    fn urls_lose_credentials_and_key_parameters() {
        let (cassette, _dir) = cassette(&["sk-abcdefghijkl"]);
        let url = reqwest::Url::parse("https://user:pw@example.com/v1/x?alt=sse&key=sk-abcdefghijkl&n=sk-abcdefghijkl")
            .unwrap();
        let masked = cassette.masked_url(&url).to_string();
        assert_eq!(masked, "https://example.com/v1/x?alt=sse&key=%5Bredacted%5D&n=***************");
        assert_eq!(cassette.path_of(&url), "/v1/x?alt=sse&key=%5Bredacted%5D&n=***************");
    }

    #[test]
    fn a_short_key_is_masked_whole_and_others_piece_by_piece() {
        let (cassette, _dir) = cassette(&["short", "a-much-longer-key-0123"]);
        let mut text = b"short, a-much-longer-key-0123 and a-much-lo|nger-key-0123".to_vec();
        cassette.mask(&mut text);
        assert_eq!(String::from_utf8(text).unwrap(), "*****, ********************** and *********|*************");
    }

    #[test]
    fn a_chunk_that_splits_a_character_is_kept_as_bytes() {
        let (cassette, _dir) = cassette(&[]);
        let cassette = Arc::new(cassette);
        let snowman = "☃".as_bytes();
        let mut tape = tape(&cassette);
        tape.chunk(&Bytes::copy_from_slice(&snowman[..1]));
        tape.chunk(&Bytes::copy_from_slice(&snowman[1..]));
        tape.complete();
        drop(tape);
        let text = std::fs::read(&cassette.path).unwrap();
        let recorded = read(&text).unwrap();
        assert_eq!(recorded[0].exchange.chunks.concat(), snowman);
        assert!(String::from_utf8(text).unwrap().contains(r#"{"base64":"4g=="}"#));
    }

    #[test]
    fn an_abandoned_response_is_written_with_what_arrived() {
        let (cassette, _dir) = cassette(&[]);
        let cassette = Arc::new(cassette);
        let mut tape = tape(&cassette);
        tape.chunk(&Bytes::from_static(b"event: ping\n"));
        drop(tape);
        let recorded = read(&std::fs::read(&cassette.path).unwrap()).unwrap();
        let error = recorded[0].exchange.error.as_ref().unwrap();
        assert_eq!(error.code, ErrorCode::Cancelled);
    }
}
