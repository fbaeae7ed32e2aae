//! An MCP server started as a child process, spoken to over its stdin and
//! stdout.
//!
//! The server runs in a process group of its own, with a minimal environment
//! (the host's `PATH`, `HOME`, `LANG` and the like, plus the configured
//! variables: never the host's whole environment), and dies with the process
//! that started it (`PR_SET_PDEATHSIG`), even when that process exits without
//! stopping it. Its stderr is always read, so a server that writes much there
//! never blocks; the last lines are kept for error messages. Stopping it closes
//! its stdin, then sends the group SIGTERM and, after a grace period, SIGKILL;
//! dropping it kills the group at once.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::{Child, Command};

use super::connection::{Connection, WhyClosed};
use super::error::McpError;
use super::line_reader::{next_frame, Frame};

/// The host's variables a server sees (when the host has them).
const PASSED_VARIABLES: &[&str] =
    &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ"];
/// The stderr lines kept, and the bytes kept of each.
const STDERR_LINES: usize = 32;
const STDERR_LINE_BYTES: usize = 1024;
/// How long the reason a connection closed waits for the server's stderr to end.
const STDERR_AFTER_EXIT: Duration = Duration::from_millis(200);

/// How to start a server: its program, arguments, added environment and
/// working directory.
#[derive(Debug, Clone, Default)]
pub struct StdioCommand {
    /// The program, found on `PATH` when not a path.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the minimal environment.
    pub env: BTreeMap<String, String>,
    /// The working directory; the host's when `None`.
    pub cwd: Option<PathBuf>,
}

/// A running server and the connection to it. Owned by one holder; its
/// methods may be called from any thread of the runtime.
pub struct StdioServer {
    child: Child,
    group: i32,
    connection: Arc<Connection>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl StdioServer {
    /// Starts the server; `max_message_bytes` bounds every message read from
    /// it. Must be called within the Tokio runtime, on a thread that lives as
    /// long as the server (a worker thread, not the blocking pool): the
    /// server's death signal is tied to that thread.
    pub fn spawn(command: &StdioCommand, max_message_bytes: usize) -> Result<StdioServer, McpError> {
        let mut process = Command::new(&command.command);
        process.args(&command.args).env_clear().stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for name in PASSED_VARIABLES {
            if let Some(value) = std::env::var_os(name) {
                process.env(name, value);
            }
        }
        process.envs(&command.env);
        if let Some(cwd) = &command.cwd {
            process.current_dir(cwd);
        }
        process.process_group(0).kill_on_drop(true);
        // SAFETY: the closure runs in the child between fork and exec and calls
        // only async-signal-safe functions (prctl, getppid, _exit).
        let parent = std::process::id() as libc::pid_t;
        unsafe {
            process.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died before the signal was asked for.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let mut child = process.spawn().map_err(|e| McpError::Spawn(format!("{}: {e}", command.command)))?;
        let group = child.id().map(|pid| pid as i32).unwrap_or_default();
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(McpError::Spawn("the server's pipes are missing".into()));
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let drained = tokio::spawn(drain(stderr, Arc::clone(&tail)));
        let connection = Connection::open(stdout, stdin, max_message_bytes, last_words(drained, Arc::clone(&tail)));
        Ok(StdioServer { child, group, connection, stderr: tail })
    }

    /// The connection to the server.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().map(|lines| lines.iter().cloned().collect()).unwrap_or_default()
    }

    /// The server's process id (its group's too).
    pub fn pid(&self) -> i32 {
        self.group
    }

    /// Stops the server: closes its stdin, waits `grace` for it to exit, then
    /// sends its group SIGTERM, waits `grace` again, then SIGKILL, and reaps it.
    /// Whatever it started in its group goes with it.
    pub async fn stop(mut self, grace: Duration) {
        self.connection.close_input().await;
        if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
            self.signal(libc::SIGTERM);
            if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
                self.signal(libc::SIGKILL);
                let _ = self.child.wait().await;
            }
        }
        // Members of the group that outlived the server.
        self.signal(libc::SIGKILL);
        self.group = 0;
    }

    fn signal(&self, signal: libc::c_int) {
        if self.group > 0 {
            // SAFETY: killpg has no memory effects; a group that is gone fails harmlessly.
            unsafe { libc::killpg(self.group, signal) };
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        self.connection.fail_all("the server was stopped");
        self.signal(libc::SIGKILL);
    }
}

/// The server's last stderr lines, for the reason its connection closed:
/// read once its stderr ended too, or after a moment (a process it started
/// may hold stderr open).
fn last_words(drained: tokio::task::JoinHandle<()>, tail: Arc<Mutex<VecDeque<String>>>) -> WhyClosed {
    Box::new(move || {
        Box::pin(async move {
            let _ = tokio::time::timeout(STDERR_AFTER_EXIT, drained).await;
            let lines = tail.lock().map(|lines| lines.iter().cloned().collect::<Vec<_>>()).unwrap_or_default();
            match lines.is_empty() {
                true => String::new(),
                false => format!("; its stderr ended: {}", lines.join(" | ")),
            }
        })
    })
}

/// Reads the server's stderr to its end, keeping the last lines.
async fn drain(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut input = BufReader::new(stderr);
    loop {
        let line = match next_frame(&mut input, STDERR_LINE_BYTES).await {
            Ok(Frame::Line(line)) => String::from_utf8_lossy(&line).into_owned(),
            Ok(Frame::Oversized(length)) => format!("(a line of {length} bytes)"),
            Ok(Frame::End) | Err(_) => return,
        };
        if let Ok(mut lines) = tail.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }
}
