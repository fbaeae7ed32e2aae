//! The recording of one attempt's exchange. It is shared by the attempt that
//! reads the response and the loop that retries it. The exchange is written
//! when the last of them lets go, whether the response ended, failed, timed
//! out or was abandoned. A whole-request timeout drops the attempt, so the
//! loop is the one that records it.

use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::format::{Chunk, Exchange, RecordedError};
use super::Cassette;
use crate::error::{Error, ErrorCode};

/// One attempt's recording: empty until the response's headers arrive (an
/// attempt answered from the cassette, or one that got no response, records
/// nothing). Cheap to clone; any thread.
#[derive(Clone, Default)]
pub(crate) struct Tape(Arc<Mutex<Option<Recording>>>);

/// An exchange being recorded.
pub(super) struct Recording {
    pub(super) cassette: Arc<Cassette>,
    /// The request and the response's status and headers, masked.
    pub(super) exchange: Exchange,
    /// The body's chunks as read, masked when written.
    pub(super) chunks: Vec<Bytes>,
    /// The response's content ended.
    pub(super) complete: bool,
}

impl Tape {
    /// Starts recording the response of `recording`'s request.
    pub(super) fn start(&self, recording: Recording) {
        *self.lock() = Some(recording);
    }

    /// A chunk of the body, as read.
    pub(crate) fn chunk(&self, chunk: &Bytes) {
        if let Some(recording) = &mut *self.lock() {
            recording.chunks.push(chunk.clone());
        }
    }

    /// The response's content is complete (what follows is only drained).
    pub(crate) fn complete(&self) {
        if let Some(recording) = &mut *self.lock() {
            recording.complete = true;
        }
    }

    /// Reading the response failed with `error` (the first failure counts).
    pub(crate) fn failed(&self, error: &Error) {
        if let Some(recording) = &mut *self.lock() {
            if recording.exchange.error.is_none() && !recording.complete {
                let error = RecordedError { code: error.code, message: error.message.clone() };
                recording.exchange.error = Some(error);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Recording>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let exchange = &mut self.exchange;
        if !self.complete && exchange.error.is_none() && (200..300).contains(&exchange.status) {
            exchange.error = Some(RecordedError {
                code: ErrorCode::Cancelled,
                message: "the response was not read to its end: its run stopped waiting for it".to_owned(),
            });
        }
        if let Some(error) = &mut exchange.error {
            error.message = self.cassette.mask.text(&error.message);
        }
        // The whole stream is masked at once, so a secret split between two
        // chunks is found; masking keeps every byte's place, so the chunks are
        // cut where they were.
        let mut whole = self.chunks.concat();
        self.cassette.mask.apply(&mut whole);
        let mut rest = &whole[..];
        for chunk in &self.chunks {
            let (this, next) = rest.split_at(chunk.len());
            rest = next;
            exchange.chunks.push(Chunk::of(this));
        }
        self.cassette.write(exchange);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::cassette;
    use super::*;

    /// A tape of a request that got a 200 (not written until dropped).
    fn tape(cassette: &Arc<Cassette>) -> Tape {
        let exchange = Exchange {
            method: "POST".into(),
            url: "http://127.0.0.1/v1/messages".into(),
            request_headers: Default::default(),
            body: "{}".into(),
            status: 200,
            headers: Default::default(),
            chunks: Vec::new(),
            error: None,
        };
        let tape = Tape::default();
        tape.start(Recording { cassette: cassette.clone(), exchange, chunks: Vec::new(), complete: false });
        tape
    }

    /// The exchanges written to `cassette`'s file.
    fn written(cassette: &Cassette) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&cassette.path).unwrap();
        text.lines().skip(1).map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    #[test]
    fn a_key_split_between_chunks_is_masked_and_the_boundary_kept() {
        let key = "sk-ferrule-0123456789";
        let (cassette, _dir) = cassette(key, &[]);
        let tape = tape(&cassette);
        tape.chunk(&Bytes::from(format!("data: {}", &key[..9])));
        tape.chunk(&Bytes::from(format!("{} ☃\n\n", &key[9..])));
        tape.failed(&Error::new(ErrorCode::ProviderNetwork, format!("echoed {key}")));
        drop(tape);
        let exchange = &written(&cassette)[0];
        assert_eq!(exchange["chunks"], serde_json::json!(["data: *********", "************ ☃\n\n"]));
        assert_eq!(exchange["error"]["message"], "echoed *********************");
    }

    #[test]
    fn a_chunk_that_splits_a_character_is_kept_as_bytes() {
        let (cassette, _dir) = cassette("", &[]);
        let tape = tape(&cassette);
        let snowman = "☃".as_bytes();
        tape.chunk(&Bytes::copy_from_slice(&snowman[..1]));
        tape.chunk(&Bytes::copy_from_slice(&snowman[1..]));
        tape.complete();
        drop(tape);
        let exchange = &written(&cassette)[0];
        assert_eq!(exchange["chunks"][0], serde_json::json!({"base64": "4g=="}));
        let recorded = super::super::format::read(&std::fs::read(&cassette.path).unwrap()).unwrap();
        assert_eq!(recorded[0].exchange.chunks.concat(), snowman);
    }

    #[test]
    fn an_abandoned_response_is_written_with_what_arrived_and_a_timeout_as_such() {
        let (cassette, _dir) = cassette("", &[]);
        let abandoned = tape(&cassette);
        abandoned.chunk(&Bytes::from_static(b"event: ping\n"));
        drop(abandoned);
        let timed_out = tape(&cassette);
        let attempt = timed_out.clone();
        drop(attempt);
        timed_out.failed(&Error::new(ErrorCode::Timeout, "waited 200 ms for the whole request"));
        drop(timed_out);
        let exchanges = written(&cassette);
        assert_eq!(exchanges[0]["error"]["code"], "CANCELLED");
        assert_eq!(exchanges[0]["chunks"], serde_json::json!(["event: ping\n"]));
        assert_eq!(exchanges[1]["error"]["code"], "TIMEOUT");
    }
}
