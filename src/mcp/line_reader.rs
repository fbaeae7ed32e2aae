//! Newline-delimited frames from a byte stream, each bounded in size.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The last bytes kept of a line over the limit.
pub(crate) const TAIL_BYTES: usize = 256;

/// One frame of a newline-delimited stream.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame {
    /// A line, without its newline (and a `\r` before it).
    Line(Vec<u8>),
    /// A line longer than the limit, skipped unread: its length in bytes,
    /// its first bytes (as many as the limit) and its last ones (at most
    /// [`TAIL_BYTES`]).
    Oversized { length: usize, head: Vec<u8>, tail: Vec<u8> },
    /// The stream ended (a last line without a newline is still a line).
    End,
}

/// Reads the next frame of `input`, keeping at most `limit` bytes of a line:
/// the rest of a longer line is read and dropped, so memory stays bounded
/// whatever the other side writes.
pub(crate) async fn next_frame<R: AsyncBufRead + Unpin>(input: &mut R, limit: usize) -> std::io::Result<Frame> {
    let mut line = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut length = 0usize;
    let oversized = |length: usize, mut head: Vec<u8>, mut tail: Vec<u8>| {
        head.truncate(limit);
        tail.drain(..tail.len().saturating_sub(TAIL_BYTES));
        Frame::Oversized { length, head, tail }
    };
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match length {
                0 => Frame::End,
                _ if length > limit => oversized(length, line, tail),
                _ => Frame::Line(line),
            });
        }
        let (taken, ended) = match buffer.iter().position(|&byte| byte == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (buffer.len(), false),
        };
        let piece = &buffer[..if ended { taken - 1 } else { taken }];
        // Past the limit only the head is kept.
        let room = (limit + 1).saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        tail.extend_from_slice(&piece[piece.len().saturating_sub(TAIL_BYTES)..]);
        tail.drain(..tail.len().saturating_sub(TAIL_BYTES));
        length += piece.len();
        input.consume(taken);
        if ended {
            if length > limit {
                return Ok(oversized(length, line, tail));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Frame::Line(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_a_long_one_is_skipped_whole() {
        let text = format!("{{\"a\":1}}\r\n{}\nshort\nlast", "x".repeat(100));
        let mut input = tokio::io::BufReader::with_capacity(7, text.as_bytes());
        let mut frames = Vec::new();
        loop {
            let frame = next_frame(&mut input, 16).await.unwrap();
            let end = frame == Frame::End;
            frames.push(frame);
            if end {
                break;
            }
        }
        assert_eq!(
            frames,
            [
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Oversized { length: 100, head: b"x".repeat(16), tail: b"x".repeat(100) },
                Frame::Line(b"short".to_vec()),
                Frame::Line(b"last".to_vec()),
                Frame::End
            ]
        );
    }
}
