//! A server's log: the last lines it wrote to stderr and what ferrule noticed
//! of it (lines it ignored, notices it dropped), numbered so that each reader
//! takes what is new to it. Bounded: the oldest lines go first. Each line also
//! goes to the host's logger (`ferrule::mcp`): stderr at `info`, ferrule's
//! notes at `warn`.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::bounded::{bounded, TEXT_BYTES};

/// The lines kept.
const KEPT_LINES: usize = 64;
/// The longest line kept as it is: 1 KiB and the note of how long a line
/// cut to it was.
const LINE_BYTES: usize = TEXT_BYTES + 32;

/// Where a line of the log comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    /// The server's stderr.
    Stderr,
    /// ferrule, about the server.
    Ferrule,
}

/// The lines new to a reader since the number it last saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewLines {
    /// The lines, oldest first; ferrule's own begin with `ferrule: `.
    pub lines: Vec<String>,
    /// Lines that went before the reader took them.
    pub missed: u64,
    /// The number to read from next time.
    pub next: u64,
}

/// A server's log. Shared by the server's tasks and its readers; any thread.
#[derive(Debug, Default)]
pub struct ServerLog {
    /// The server's name in the agent's configuration.
    server: String,
    inner: Mutex<Lines>,
}

#[derive(Debug, Default)]
struct Lines {
    kept: VecDeque<(LogSource, String)>,
    /// The number of the line after the last one.
    next: u64,
}

impl ServerLog {
    /// The empty log of the server `server`.
    pub fn new(server: &str) -> ServerLog {
        ServerLog { server: server.to_owned(), inner: Mutex::default() }
    }

    /// Adds a line (cut to about 1 KiB), dropping the oldest past the bound.
    pub fn push(&self, source: LogSource, line: String) {
        let line = match line.len() > LINE_BYTES {
            true => bounded(&line, TEXT_BYTES),
            false => line,
        };
        match source {
            LogSource::Stderr => {
                crate::log::log!(Info, "ferrule::mcp", line.clone(), "server" => self.server, "stream" => "stderr")
            }
            LogSource::Ferrule => crate::log::log!(Warn, "ferrule::mcp", line.clone(), "server" => self.server),
        }
        let Ok(mut lines) = self.inner.lock() else { return };
        if lines.kept.len() == KEPT_LINES {
            lines.kept.pop_front();
        }
        lines.kept.push_back((source, line));
        lines.next += 1;
    }

    /// The lines numbered `from` and later.
    pub fn since(&self, from: u64) -> NewLines {
        let Ok(lines) = self.inner.lock() else { return NewLines { next: from, ..NewLines::default() } };
        let first = lines.next - lines.kept.len() as u64;
        let missed = first.saturating_sub(from);
        let skip = from.saturating_sub(first) as usize;
        let text = lines.kept.iter().skip(skip).map(|(source, line)| match source {
            LogSource::Stderr => line.clone(),
            LogSource::Ferrule => format!("ferrule: {line}"),
        });
        NewLines { lines: text.collect(), missed, next: lines.next.max(from) }
    }

    /// The last `count` lines the server wrote to stderr.
    pub fn stderr_tail(&self, count: usize) -> Vec<String> {
        let Ok(lines) = self.inner.lock() else { return Vec::new() };
        let stderr: Vec<&String> =
            lines.kept.iter().filter(|(source, _)| *source == LogSource::Stderr).map(|(_, line)| line).collect();
        stderr[stderr.len().saturating_sub(count)..].iter().map(|line| (*line).clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_take_what_is_new_to_them_and_count_what_they_missed() {
        let log = ServerLog::new("s");
        log.push(LogSource::Stderr, "starting".into());
        log.push(LogSource::Ferrule, "ignored a line".into());
        let first = log.since(0);
        assert_eq!(first.lines, ["starting", "ferrule: ignored a line"]);
        assert_eq!((first.missed, first.next), (0, 2));
        assert_eq!(log.since(first.next), NewLines { next: 2, ..NewLines::default() });
        for i in 0..100 {
            log.push(LogSource::Stderr, format!("line {i}"));
        }
        let later = log.since(first.next);
        assert_eq!((later.lines.len(), later.missed, later.next), (KEPT_LINES, 100 - KEPT_LINES as u64, 102));
        assert_eq!(later.lines.last().map(String::as_str), Some("line 99"));
        assert_eq!(log.stderr_tail(2), ["line 98", "line 99"]);
    }
}
