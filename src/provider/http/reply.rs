//! A response being read: from the network (onto a cassette's tape when one
//! records) or from a cassette's recorded exchange.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::HeaderMap;

use super::cassette::{ReplayedExchange, Tape};
use super::{network, timeout, Failure, DRAIN_TIME, MAX_DRAINED_BYTES};

/// A response whose body is read chunk by chunk. Owned by the request that
/// sent it.
pub(crate) struct Reply {
    source: Source,
    tape: Option<Tape>,
}

enum Source {
    Live(reqwest::Response),
    Replayed { exchange: Arc<ReplayedExchange>, next: usize },
}

impl Reply {
    /// A response from the network, recorded onto `tape` when given.
    pub(crate) fn live(response: reqwest::Response, tape: Option<Tape>) -> Self {
        Reply { source: Source::Live(response), tape }
    }

    /// A response served from a cassette.
    pub(crate) fn replayed(exchange: Arc<ReplayedExchange>) -> Self {
        Reply { source: Source::Replayed { exchange, next: 0 }, tape: None }
    }

    /// The HTTP status.
    pub(crate) fn status(&self) -> u16 {
        match &self.source {
            Source::Live(response) => response.status().as_u16(),
            Source::Replayed { exchange, .. } => exchange.status,
        }
    }

    /// The response's headers.
    pub(crate) fn headers(&self) -> &HeaderMap {
        match &self.source {
            Source::Live(response) => response.headers(),
            Source::Replayed { exchange, .. } => &exchange.headers,
        }
    }

    /// The next chunk of the body, `None` at its end. A live response waits at
    /// most `idle_ms` for it (0: as long as it takes); a replayed one ends
    /// with the failure it was recorded with, if any.
    pub(crate) async fn chunk(&mut self, provider: &str, idle_ms: u64) -> Result<Option<Bytes>, Failure> {
        let chunk = match &mut self.source {
            Source::Live(response) => match idle_ms {
                0 => response.chunk().await.map_err(|e| network(provider, &e)),
                ms => match tokio::time::timeout(Duration::from_millis(ms), response.chunk()).await {
                    Ok(chunk) => chunk.map_err(|e| network(provider, &e)),
                    Err(_) => Err(timeout("the next part of the stream", ms)),
                },
            },
            Source::Replayed { exchange, next } => match exchange.chunks.get(*next) {
                Some(chunk) => {
                    *next += 1;
                    Ok(Some(chunk.clone()))
                }
                None => exchange.error.clone().map_or(Ok(None), |error| Err(Failure::new(error))),
            },
        };
        if let Some(tape) = &self.tape {
            match &chunk {
                Ok(Some(bytes)) => tape.chunk(bytes),
                Ok(None) => tape.complete(),
                Err(failure) => tape.failed(&failure.error),
            }
        }
        chunk
    }

    /// The response's content is complete though its body has not ended.
    pub(crate) fn complete(&self) {
        if let Some(tape) = &self.tape {
            tape.complete();
        }
    }

    /// Reads what is left of a live response whose content is complete (the
    /// end of a chunked body follows the last event at once from a
    /// well-behaved server), so that its connection goes back to the pool for
    /// the next request instead of being closed. A server that sends more, or
    /// lingers, is cut off.
    pub(crate) async fn release(self) {
        let Source::Live(mut response) = self.source else { return };
        let drain = async {
            let mut left = MAX_DRAINED_BYTES;
            while let Ok(Some(chunk)) = response.chunk().await {
                left = match left.checked_sub(chunk.len()) {
                    Some(left) => left,
                    None => return,
                };
            }
        };
        let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
    }
}
