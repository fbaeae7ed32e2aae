//! Server-sent events, parsed incrementally from a byte stream.
//!
//! Written here rather than taken from a crate because provider streams need what
//! the SSE specification leaves out or forbids: the last event of a stream that
//! ends without a blank line is dispatched (Anthropic does this), and an event
//! larger than a bound fails the stream instead of growing memory without end.
//! Lines end in LF, CRLF or CR (Gemini uses CRLF); `:` comment lines (OpenRouter)
//! are skipped. The last `id` and `retry` seen are kept for a reader that
//! resumes a stream (MCP's handshake era); providers ignore them.

use crate::error::{Error, ErrorCode};

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// One event: its `event:` name (if any) and its `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) name: Option<String>,
    pub(crate) data: String,
}

/// An incremental parser. Feed it chunks as they arrive, then `finish` at the end.
pub(crate) struct SseParser {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended in CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    name: Option<String>,
    data: String,
    has_data: bool,
    max_event_bytes: usize,
    at_start: bool,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// A parser that fails on any event (or line) larger than `max_event_bytes`.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            name: None,
            data: String::new(),
            has_data: false,
            max_event_bytes,
            at_start: true,
            last_event_id: None,
            retry_ms: None,
        }
    }

    /// The last event id the stream gave (`id:`), empty ids included.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection time the stream asked for (`retry:`), in milliseconds.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Parses `chunk`, appending every event it completes to `events`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], events: &mut Vec<SseEvent>) -> Result<(), Error> {
        if self.at_start {
            // A UTF-8 byte order mark may open the stream, split over chunks too:
            // the bytes of one held so far wait in `line`.
            let held = self.line.len();
            let wanted = (BYTE_ORDER_MARK.len() - held).min(chunk.len());
            if chunk[..wanted] != BYTE_ORDER_MARK[held..held + wanted] {
                self.at_start = false;
            } else {
                self.line.extend_from_slice(&chunk[..wanted]);
                chunk = &chunk[wanted..];
                if self.line.len() < BYTE_ORDER_MARK.len() {
                    return Ok(());
                }
                self.line.clear();
                self.at_start = false;
            }
        }
        if self.after_cr {
            self.after_cr = false;
            chunk = chunk.strip_prefix(b"\n").unwrap_or(chunk);
        }
        while let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.push_bytes(&chunk[..end])?;
            self.end_line(events)?;
            let terminator = chunk[end];
            chunk = &chunk[end + 1..];
            if terminator == b'\r' {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.push_bytes(chunk)
    }

    /// Ends the stream: a last line without a line break, and a last event without
    /// a blank line, are still dispatched.
    pub(crate) fn finish(&mut self, events: &mut Vec<SseEvent>) -> Result<(), Error> {
        if !self.line.is_empty() {
            self.end_line(events)?;
        }
        self.dispatch(events);
        Ok(())
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if self.line.len() + self.data.len() + bytes.len() > self.max_event_bytes {
            return Err(Error::new(
                ErrorCode::ProviderMalformedStream,
                format!("a stream event is larger than {} bytes", self.max_event_bytes),
            ));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) -> Result<(), Error> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        let line = String::from_utf8(line)
            .map_err(|_| Error::new(ErrorCode::ProviderMalformedStream, "a stream line is not valid UTF-8"))?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.name = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let name = self.name.take();
        if self.has_data {
            self.has_data = false;
            events.push(SseEvent { name, data: std::mem::take(&mut self.data) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new(1 << 20);
        let mut events = Vec::new();
        for chunk in input.chunks(piece) {
            parser.feed(chunk, &mut events).unwrap();
        }
        parser.finish(&mut events).unwrap();
        events
    }

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent { name: name.map(str::to_owned), data: data.to_owned() }
    }

    #[test]
    fn every_line_ending_and_every_chunking_gives_the_same_events() {
        let expected = vec![event(Some("a"), "one\ntwo"), event(None, "three")];
        for text in [
            "event: a\ndata: one\ndata: two\n\ndata: three\n\n",
            "event: a\r\ndata: one\r\ndata: two\r\n\r\ndata: three\r\n\r\n",
            "event: a\rdata: one\rdata: two\r\rdata: three\r\r",
        ] {
            for piece in 1..=text.len() {
                assert_eq!(parse_in_pieces(text.as_bytes(), piece), expected, "{text:?} in pieces of {piece}");
            }
        }
    }

    #[test]
    fn a_byte_order_mark_is_skipped_however_the_chunks_split_it() {
        let text = b"\xEF\xBB\xBFdata: one\n\n";
        for piece in 1..=text.len() {
            assert_eq!(parse_in_pieces(text, piece), vec![event(None, "one")], "in pieces of {piece}");
        }
    }

    #[test]
    fn the_last_event_is_dispatched_without_a_blank_line() {
        assert_eq!(
            parse_in_pieces(b"data: {\"a\":1}\n\ndata: {\"b\":2}", 7),
            vec![event(None, "{\"a\":1}"), event(None, "{\"b\":2}")]
        );
    }

    #[test]
    fn comments_ids_and_retry_are_skipped() {
        let text = ": OPENROUTER PROCESSING\n\nid: 7\nretry: 100\ndata:x\n\n";
        assert_eq!(parse_in_pieces(text.as_bytes(), 3), vec![event(None, "x")]);
    }

    #[test]
    fn an_event_over_the_bound_fails_the_stream() {
        let mut parser = SseParser::new(16);
        let mut events = Vec::new();
        let err = parser.feed(&[b'a'; 64], &mut events).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProviderMalformedStream);
    }

    #[test]
    fn invalid_utf8_fails_the_stream() {
        let mut parser = SseParser::new(1024);
        let err = parser.feed(b"data: \xff\n\n", &mut Vec::new()).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProviderMalformedStream);
    }
}

#[cfg(test)]
mod resumption_tests {
    use super::*;

    #[test]
    fn the_last_id_and_retry_are_kept_for_a_reader_that_resumes() {
        let mut parser = SseParser::new(1 << 20);
        let mut events = Vec::new();
        parser
            .feed(b"id: event-1\nretry: 500\ndata: \n\nid: event-2\ndata: {}\n\nretry: soon\n\n", &mut events)
            .unwrap();
        assert_eq!((parser.last_event_id(), parser.retry_ms()), (Some("event-2"), Some(500)));
        assert_eq!(events.len(), 2, "an event with empty data is one");
    }
}
