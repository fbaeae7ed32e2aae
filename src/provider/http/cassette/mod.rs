//! Cassettes (`model.record`): a model's HTTP exchanges written to a file as
//! they happen, and served from it in their place, with no network
//! (docs/recording.md).
//!
//! Nothing secret reaches the file. Sensitive headers and the model's own
//! `headers` are written as `[redacted]`, and so is a `key` query parameter's
//! value. Every piece of 8 bytes or more of the API key, and every
//! `model.headers` value of 8 bytes or more, is overwritten with `*` wherever
//! it appears: in the URL, the bodies, the response headers and the recorded
//! failure. The streamed response is masked whole, so a key split between two
//! chunks is caught, and the chunks keep their boundaries. Shorter values
//! cannot be told from ordinary text, so they are not masked in bodies.
//!
//! Replay matches a request on its method, its path with the query, and its
//! exact body (masked the same way). ferrule writes the same request bytes for
//! the same transcript. While a cassette is in use, the ids ferrule makes up
//! for calls that came without one follow from the request's body
//! ([`made_up_ids_seed`]), so the next body matches too. Each recorded
//! exchange answers one request: the first unused one that matches.

mod format;
mod mask;
mod report;
mod tape;
mod writer;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use reqwest::header::HeaderMap;

pub(crate) use self::format::ReplayedExchange;
use self::format::{path_and_query, Exchange, Recorded};
use self::mask::Mask;
pub use self::report::{UnusedExchange, UnusedRecordings};
use self::tape::Recording;
pub(crate) use self::tape::Tape;
use self::writer::Writer;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::{RecordConfig, RecordMode};

/// Bytes of a body shown either side of where a request first differs from the
/// nearest recorded one.
const DIFF_CONTEXT: usize = 48;

/// One model's cassette. Shared by the model's requests, on any thread.
pub(crate) struct Cassette {
    mode: RecordMode,
    path: PathBuf,
    /// The key and header values masked out of everything written.
    mask: Mask,
    /// What was read at build (replay modes).
    recorded: Vec<Recorded>,
    /// Which of `recorded` answered a request.
    used: Mutex<Vec<bool>>,
    /// Where new exchanges go (record modes).
    writer: Option<Arc<Writer>>,
    /// The URL every request goes to, as the cassette keeps it, and the
    /// path and query a request is matched on.
    url: String,
    path_and_query: String,
    /// The headers every request carries, as the cassette keeps them.
    request_headers: BTreeMap<String, String>,
}

impl Cassette {
    /// Opens the cassette `config` names: read now in the replay modes, and in
    /// the record modes written from the first exchange on (`record` replaces
    /// the file then). `INVALID_ARG` when it is not a regular file, cannot be
    /// read, or is not a cassette. Every request goes to `url` with
    /// `request_headers`; `key` and the values of `model_headers` are masked
    /// out of what is written.
    pub(crate) fn open(
        config: &RecordConfig,
        url: &reqwest::Url,
        key: Option<&str>,
        model_headers: &BTreeMap<String, String>,
        request_headers: &HeaderMap,
    ) -> Result<Self> {
        if config.path.trim().is_empty() {
            return Err(Error::invalid_arg("model.record.path must name a file"));
        }
        let path = PathBuf::from(&config.path);
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            Error::invalid_arg(format!("model.record.path: {what} {}: {e}", path.display()))
        };
        // A pipe or a device would block the build or a run (a directory
        // would fail later): refused at once.
        if std::fs::metadata(&path).is_ok_and(|metadata| !metadata.is_file()) {
            return Err(Error::invalid_arg(format!("model.record.path: {} is not a regular file", path.display())));
        }
        let text = match config.mode {
            RecordMode::Record => None,
            RecordMode::Replay => Some(std::fs::read(&path).map_err(|e| fail("cannot read", &e))?),
            RecordMode::ReplayOrRecord => match std::fs::read(&path) {
                Ok(text) => Some(text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(fail("cannot read", &e)),
            },
        };
        let recorded = match &text {
            Some(text) => format::read(text).map_err(|e| fail("cannot replay", &e))?,
            None => Vec::new(),
        };
        let writer = match config.mode {
            RecordMode::Replay => None,
            mode => Some(Writer::of(&path, mode == RecordMode::Record)),
        };
        let mask = Mask::new(key, model_headers.values().map(String::as_str))?;
        let url = mask.url(url);
        let own: Vec<&str> = model_headers.keys().map(String::as_str).collect();
        Ok(Cassette {
            mode: config.mode,
            path,
            used: Mutex::new(vec![false; recorded.len()]),
            recorded,
            writer,
            path_and_query: path_and_query(&url).to_owned(),
            url,
            request_headers: mask.headers(request_headers, &own),
            mask,
        })
    }

    /// Whether requests are answered from the cassette.
    pub(crate) fn replays(&self) -> bool {
        self.mode != RecordMode::Record
    }

    /// The request body as the cassette holds it: every secret masked.
    pub(crate) fn masked_body(&self, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        self.mask.apply(&mut body);
        body
    }

    /// The recorded exchange that answers a request (its body masked), if the
    /// cassette replays and one still unused matches; else, in `replay` mode,
    /// `REPLAY_MISMATCH` saying what the nearest recorded request differs in.
    /// `Ok(None)`: the request goes to the network.
    pub(crate) fn answer(&self, body: &[u8]) -> Result<Option<Arc<ReplayedExchange>>> {
        if !self.replays() {
            return Ok(None);
        }
        let path = &self.path_and_query;
        let mut used = self.used.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let matches = |recorded: &Recorded| {
            recorded.exchange.method == "POST" && &recorded.path == path && recorded.exchange.body.as_bytes() == body
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
        let same_path = (0..self.recorded.len()).filter(|&i| !used[i] && &self.recorded[i].path == path);
        let prefix = |i: usize| common_prefix(self.recorded[i].exchange.body.as_bytes(), body);
        if let Some(nearest) = same_path.max_by_key(|&i| prefix(i)) {
            let at = prefix(nearest);
            message.push_str(&format!(
                "; the body differs from unused exchange {} at byte {at}: recorded {:?}, sent {:?}",
                nearest + 1,
                excerpt(self.recorded[nearest].exchange.body.as_bytes(), at),
                excerpt(body, at)
            ));
        }
        Err(Error::new(ErrorCode::ReplayMismatch, message))
    }

    /// Whether exchanges are written; `INVALID_ARG` once writing failed, so a
    /// run learns that its cassette is incomplete.
    pub(crate) fn records(&self) -> Result<bool> {
        let Some(writer) = &self.writer else { return Ok(false) };
        match writer.failure() {
            Some(failure) => Err(Error::invalid_arg(format!(
                "model.record.path: writing {} failed, so the cassette is incomplete: {failure}",
                self.path.display()
            ))),
            None => Ok(true),
        }
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

    /// Starts recording onto `tape` the exchange of a request (its body
    /// masked) whose response's status and headers are in.
    pub(crate) fn record(self: &Arc<Self>, tape: &Tape, masked_body: &[u8], response: &reqwest::Response) {
        let exchange = Exchange {
            method: "POST".to_owned(),
            url: self.url.clone(),
            request_headers: self.request_headers.clone(),
            body: String::from_utf8_lossy(masked_body).into_owned(),
            status: response.status().as_u16(),
            headers: self.mask.headers(response.headers(), &[]),
            chunks: Vec::new(),
            error: None,
        };
        tape.start(Recording { cassette: self.clone(), exchange, chunks: Vec::new(), complete: false });
    }

    /// Writes `exchange` as the cassette's next line (record modes).
    fn write(&self, exchange: &Exchange) {
        let Some(writer) = &self.writer else { return };
        match serde_json::to_vec(exchange) {
            Ok(line) => writer.append(&line),
            Err(e) => writer.append_failed(&e.to_string()),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A cassette of requests to a local server, recorded in a directory that
    /// lasts as long as the returned guard.
    pub(super) fn cassette(key: &str, headers: &[(&str, &str)]) -> (Arc<Cassette>, tempfile::TempDir) {
        cassette_to("http://127.0.0.1/v1/messages", key, headers)
    }

    /// The same, of requests to `url`.
    fn cassette_to(url: &str, key: &str, headers: &[(&str, &str)]) -> (Arc<Cassette>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.jsonl").to_str().unwrap().to_owned();
        let config = RecordConfig { path, mode: RecordMode::Record };
        let model_headers: BTreeMap<String, String> =
            headers.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())).collect();
        let mut request_headers = HeaderMap::new();
        for (name, value) in headers {
            request_headers.insert(reqwest::header::HeaderName::try_from(*name).unwrap(), value.parse().unwrap());
        }
        let key = (!key.is_empty()).then_some(key);
        let url = reqwest::Url::parse(url).unwrap();
        (Arc::new(Cassette::open(&config, &url, key, &model_headers, &request_headers).unwrap()), dir)
    }

    #[test]
    fn urls_lose_credentials_and_key_parameters() {
        let url = "https://user:pw@example.com/v1/x?alt=sse&key=sk-abcdefghijkl&n=sk-abcdefghijkl";
        let (cassette, _dir) = cassette_to(url, "sk-abcdefghijkl", &[]);
        assert_eq!(cassette.url, "https://example.com/v1/x?alt=sse&key=%5Bredacted%5D&n=***************");
        assert_eq!(cassette.path_and_query, "/v1/x?alt=sse&key=%5Bredacted%5D&n=***************");
    }

    #[test]
    fn every_model_header_is_redacted_in_request_headers() {
        let (cassette, _dir) = cassette("", &[("x-team", "team-secret-42"), ("x-flag", "true")]);
        let written = &cassette.request_headers;
        assert_eq!((written["x-team"].as_str(), written["x-flag"].as_str()), ("[redacted]", "[redacted]"));
    }
}
