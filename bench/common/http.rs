//! The HTTP/1.1 framing of the benchmarks' local model servers: a request's
//! body read from a kept-alive connection, a streamed reply written in one
//! piece.

use std::io::{Read, Write};
use std::net::TcpStream;

/// One connection's reads, with what arrived past the last request.
pub struct Requests {
    socket: TcpStream,
    buffer: Vec<u8>,
    chunk: Vec<u8>,
}

impl Requests {
    pub fn new(socket: TcpStream) -> Self {
        let _ = socket.set_nodelay(true);
        Requests { socket, buffer: Vec::new(), chunk: vec![0u8; 64 << 10] }
    }

    /// The next request's body; `None` once the client closed the connection.
    pub fn next_body(&mut self) -> Option<Vec<u8>> {
        let head_end = loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            self.fill()?;
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while self.buffer.len() < head_end + 4 + length {
            self.fill()?;
        }
        Some(self.buffer.drain(..head_end + 4 + length).skip(head_end + 4).collect())
    }

    /// Writes an event stream `reply`; `false` when the client is gone. One
    /// write: a second small one would wait for the client's delayed ACK.
    pub fn reply(&mut self, reply: &[u8], keep_alive: bool) -> bool {
        let mut response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n",
            reply.len(),
            if keep_alive { "keep-alive" } else { "close" }
        )
        .into_bytes();
        response.extend_from_slice(reply);
        self.socket.write_all(&response).is_ok()
    }

    fn fill(&mut self) -> Option<()> {
        match self.socket.read(&mut self.chunk) {
            Ok(0) | Err(_) => None,
            Ok(n) => {
                self.buffer.extend_from_slice(&self.chunk[..n]);
                Some(())
            }
        }
    }
}
