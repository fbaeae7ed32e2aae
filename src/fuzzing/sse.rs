//! Server-sent events, parsed incrementally.

use crate::provider::http::sse::{SseEvent, SseParser};

/// The bound on one event's size the target parses with, small enough that
/// inputs reach it.
const MAX_EVENT_BYTES: usize = 512;

/// Input: bytes giving chunk lengths, a NUL, then the stream. Holds: the
/// events, the error that ends the stream, the last event id and the retry
/// time are the same whether the stream arrives whole or in chunks; no event
/// is larger than the bound.
pub fn sse(data: &[u8]) {
    let [lengths, stream] = super::parts(data, 2)[..] else { return };
    let whole = parse(&[stream]);
    let chunked = parse(&super::pieces(stream, lengths));
    assert_eq!(whole, chunked, "chunks changed what the stream gave");
    for event in &whole.0 {
        assert!(event.data.len() <= MAX_EVENT_BYTES, "an event of {} bytes passed the bound", event.data.len());
    }
}

type Parsed = (Vec<SseEvent>, Option<String>, Option<String>, Option<u64>);

fn parse(pieces: &[&[u8]]) -> Parsed {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut events = Vec::new();
    let mut failure = None;
    for piece in pieces {
        if let Err(error) = parser.feed(piece, &mut events) {
            failure = Some(error.message);
            break;
        }
    }
    if failure.is_none() {
        failure = parser.finish(&mut events).err().map(|error| error.message);
    }
    (events, failure, parser.last_event_id().map(str::to_owned), parser.retry_ms())
}
