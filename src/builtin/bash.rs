//! `bash {command, timeout?}`: runs a command with `bash -c` in the working
//! directory, non-interactively.
//!
//! The command gets its own process group and stdin from /dev/null; stdout and
//! stderr share one pipe, so their output interleaves as written. On timeout or
//! cancellation (including the run dropping the call) the whole group is killed.
//! The call returns when the shell exits, even if a background child keeps the
//! pipe open (what was read so far is kept). Memory stays bounded: the result
//! holds the last 2,000 lines or 50 KiB, and longer output is spilled whole to a
//! temporary file the result names. Progress updates show the tail as it grows.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::object_schema;
use super::workspace::Workspace;
use crate::error::Result;
use crate::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};

pub(crate) const DESCRIPTION: &str = "Run a bash command in the working directory and return its combined stdout and stderr (the last 2000 lines or 50 KiB; longer output is saved to a file whose path is given). Non-interactive: stdin is empty. Give timeout (seconds) for commands that may hang.";
const MAX_LINES: usize = 2000;
const MAX_BYTES: usize = 50 * 1024;
const UPDATE_EVERY: Duration = Duration::from_millis(500);
const UPDATE_TAIL_BYTES: usize = 4096;
/// How long output is still read after the shell exited (a background child may
/// hold the pipe open forever).
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);

pub(crate) fn tool(workspace: Arc<Workspace>, default_timeout_s: Option<u64>) -> Result<Tool> {
    let schema = object_schema(
        json!({"command": {"type": "string", "description": "The bash command line."},
               "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the command and everything it started are killed."}}),
        &["command"],
    );
    Tool::new("bash", DESCRIPTION, schema, ToolOptions::default(), move |call: Invocation| {
        let workspace = workspace.clone();
        async move {
            match run(&workspace, &call, default_timeout_s).await {
                Ok(result) => ToolOutcome::Completed(result),
                Err(message) => ToolOutcome::Failed(message),
            }
        }
    })
}

/// How the command ended.
enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
}

async fn run(workspace: &Workspace, call: &Invocation, default_timeout_s: Option<u64>) -> Result<ToolResult, String> {
    let command = call.arguments()["command"].as_str().unwrap_or_default();
    let timeout = match call.arguments().get("timeout").and_then(Value::as_f64) {
        Some(seconds) => Some(Duration::from_secs_f64(seconds)),
        None => default_timeout_s.map(Duration::from_secs),
    };
    let (reader, writer) = std::io::pipe().map_err(|e| format!("Could not start bash: {e}"))?;
    let mut child = {
        let mut bash = tokio::process::Command::new("bash");
        bash.arg("-c")
            .arg(command)
            .current_dir(workspace.root())
            .stdin(Stdio::null())
            .stdout(writer.try_clone().map_err(|e| format!("Could not start bash: {e}"))?)
            .stderr(writer)
            .process_group(0);
        bash.spawn().map_err(|e| format!("Could not start bash: {e}"))?
        // `bash` goes here, closing ferrule's copies of the pipe's write end.
    };
    let group = ProcessGroup(child.id().map(|pid| pid as i32));
    let mut pipe = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| format!("Could not read bash's output: {e}"))?;
    let mut output = Output::default();
    let mut buffer = vec![0u8; 16 * 1024];
    let mut open = true;
    let mut ticker = tokio::time::interval(UPDATE_EVERY);
    let mut reported = 0u64;
    let sleep = tokio::time::sleep(timeout.unwrap_or(Duration::MAX));
    tokio::pin!(sleep);
    let ending = loop {
        tokio::select! {
            status = child.wait() => break Ending::Exited(status.map_err(|e| format!("Could not wait for bash: {e}"))?),
            _ = &mut sleep, if timeout.is_some() => {
                group.kill();
                let _ = child.wait().await;
                break Ending::TimedOut(timeout.unwrap_or_default());
            }
            read = pipe.read(&mut buffer), if open => match read {
                Ok(0) | Err(_) => open = false,
                Ok(n) => output.push(&buffer[..n]),
            },
            _ = ticker.tick() => {
                if output.total > reported {
                    reported = output.total;
                    let partial = ToolResult { display: Some("terminal".into()), ..ToolResult::text(output.tail(UPDATE_TAIL_BYTES)) };
                    call.updates().send(partial).await;
                }
            }
        }
    };
    while open {
        match tokio::time::timeout(DRAIN_AFTER_EXIT, pipe.read(&mut buffer)).await {
            Ok(Ok(n)) if n > 0 => output.push(&buffer[..n]),
            _ => open = false,
        }
    }
    group.disarm(matches!(ending, Ending::Exited(_)));
    Ok(output.result(&ending))
}

/// The command's process group; killed when dropped unless disarmed, so a call
/// that is cancelled or abandoned leaves no process behind.
struct ProcessGroup(Option<i32>);

impl ProcessGroup {
    fn kill(&self) {
        if let Some(group) = self.0 {
            // SAFETY: killpg has no memory effects; a stale group id fails harmlessly.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
    }

    /// After a normal exit, background children are the command's own business.
    fn disarm(mut self, exited: bool) {
        if exited {
            self.0 = None;
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The output so far: a bounded tail in memory, the whole of it in a spill file
/// once it outgrows the tail.
#[derive(Default)]
struct Output {
    tail: Vec<u8>,
    total: u64,
    lines: usize,
    spill: Option<(PathBuf, File)>,
}

impl Output {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count();
        if self.spill.is_none() && (self.total as usize > MAX_BYTES || self.lines > MAX_LINES) {
            self.spill = spill_file().map(|(path, mut file)| {
                let _ = file.write_all(&self.tail);
                (path, file)
            });
        }
        if let Some((_, file)) = &mut self.spill {
            let _ = file.write_all(bytes);
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * MAX_BYTES {
            self.tail.drain(..self.tail.len() - MAX_BYTES);
        }
    }

    /// The last `max_bytes` of output (whole characters), then its last 2,000 lines.
    fn tail(&self, max_bytes: usize) -> String {
        let start = self.tail.len().saturating_sub(max_bytes);
        let text = String::from_utf8_lossy(&self.tail[start..]);
        let text = text.trim_start_matches('\u{FFFD}');
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        lines[lines.len().saturating_sub(MAX_LINES)..].concat()
    }

    fn result(&self, ending: &Ending) -> ToolResult {
        let mut text = self.tail(MAX_BYTES);
        if let Some((path, _)) = &self.spill {
            let shown_lines = text.lines().count();
            text = format!(
                "[output cut: showing the last {shown_lines} lines of {} bytes; the whole output is in {}]\n{text}",
                self.total,
                path.display()
            );
        }
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let is_error = match ending {
            Ending::Exited(status) => {
                use std::os::unix::process::ExitStatusExt;
                match (status.code(), status.signal()) {
                    (Some(code), _) => text.push_str(&format!("[exit code {code}]")),
                    (None, Some(signal)) => text.push_str(&format!("[killed by signal {signal}]")),
                    _ => text.push_str("[exited]"),
                }
                !status.success()
            }
            Ending::TimedOut(limit) => {
                text.push_str(&format!(
                    "[timed out after {} s; the command and its children were killed]",
                    limit.as_secs_f64()
                ));
                true
            }
        };
        ToolResult { is_error, display: Some("terminal".into()), ..ToolResult::text(text) }
    }
}

fn spill_file() -> Option<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let name = format!("ferrule-bash-{}-{}.log", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let path = std::env::temp_dir().join(name);
    File::create(&path).ok().map(|file| (path, file))
}
