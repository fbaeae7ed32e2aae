//! An MCP server started as a child process, spoken to over its stdin and
//! stdout.
//!
//! The server runs in a process group of its own, with a minimal environment
//! (the host's `PATH`, `HOME`, `LANG` and the like, plus the configured
//! variables: never the host's whole environment) and none of the host's
//! other file descriptors (on kernels with `close_range` and its CLOEXEC flag,
//! 5.11 and later; elsewhere those the host left inheritable stay open). The server process itself dies with the process
//! that started it (`PR_SET_PDEATHSIG`), even when that process exits without
//! stopping it; what the server started outlives such a crash (stopping or
//! dropping the server ends them). Its stderr is always read, so a server that
//! writes much there never blocks; the last lines are kept for error messages.
//! When the server exits, what it wrote is still read (for a moment, should a
//! process it started hold its stdout open), then every request in flight
//! fails, and whatever else is left of its group is killed. Stopping it closes its stdin,
//! then sends the group SIGTERM and, after a grace period, SIGKILL; dropping
//! it kills the group at once. A host that exits through `exit` (returning
//! from `main` included) kills the groups of the servers still running in
//! an exit handler; one that ends otherwise (`_exit`, a signal, Go's
//! `os.Exit`) leaves what a server started behind, while the server itself
//! dies with it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::Command;
use tokio::sync::watch;

use super::connection::{Connection, WhyClosed};
use super::error::McpError;
use super::line_reader::{next_frame, Frame};
use super::log::{LogSource, ServerLog};
use crate::provider::http::Secret;

/// The host's variables a server sees (when the host has them).
const PASSED_VARIABLES: &[&str] =
    &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ"];
/// The stderr lines a closed connection's reason gives, and the bytes kept of
/// each line.
const STDERR_LINES: usize = 8;
const STDERR_LINE_BYTES: usize = 1024;
/// How long the reason a connection closed waits for the server's stderr to end.
const STDERR_AFTER_EXIT: Duration = Duration::from_millis(200);

/// How to start a server: its program, arguments, added environment and
/// working directory. Its `Debug` leaves out the variables' values.
#[derive(Clone, Default)]
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

impl std::fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioCommand")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// A running server and the connection to it. Owned by one holder; its
/// methods may be called from any thread of the runtime.
pub struct StdioServer {
    /// The server's process group; 0 once it is gone (after the server was
    /// reaped its id may be reused, so it is signalled no more).
    group: Arc<AtomicI32>,
    connection: Arc<Connection>,
    log: Arc<ServerLog>,
    /// Becomes true when the server has exited and was reaped.
    exited: watch::Receiver<bool>,
}

impl StdioServer {
    /// Starts the server; `max_message_bytes` bounds every message read from
    /// it, and its stderr goes to `log`. Must be called within the Tokio
    /// runtime, on a thread that lives as long as the server (a worker
    /// thread, not the blocking pool): the server's death signal is tied to
    /// that thread.
    pub fn spawn(
        command: &StdioCommand,
        max_message_bytes: usize,
        log: Arc<ServerLog>,
    ) -> Result<StdioServer, McpError> {
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
                // None of the host's descriptors but stdin, stdout and stderr
                // (a kernel without close_range leaves them as they are).
                libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_uint);
                Ok(())
            });
        }
        let mut child = process.spawn().map_err(|e| {
            let place = command.cwd.as_ref().map(|cwd| format!(" in {}", cwd.display())).unwrap_or_default();
            McpError::Spawn(format!("{}{place}: {e}", command.command))
        })?;
        let group = Arc::new(AtomicI32::new(child.id().map(|pid| pid as i32).unwrap_or_default()));
        live_groups::add(group.load(Ordering::SeqCst));
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(McpError::Spawn("the server's pipes are missing".into()));
        };
        let (drained, drained_watch) = watch::channel(false);
        let draining = tokio::spawn({
            let log = Arc::clone(&log);
            let secrets: Vec<Secret> = command.env.values().filter_map(|value| Secret::header_value(value)).collect();
            async move {
                drain(stderr, &log, &secrets).await;
                let _ = drained.send(true);
            }
        });
        let connection =
            Connection::open(stdout, stdin, max_message_bytes, last_words(drained_watch.clone(), Arc::clone(&log)));
        let (exited, exited_watch) = watch::channel(false);
        tokio::spawn({
            let (connection, why) = (Arc::downgrade(&connection), last_words(drained_watch, Arc::clone(&log)));
            let group = Arc::clone(&group);
            async move {
                let status = child.wait().await;
                // What is left of the group goes with the server, before its id can be reused.
                signal_group(&group, libc::SIGKILL);
                live_groups::remove(group.swap(0, Ordering::SeqCst));
                let _ = exited.send(true);
                let why = why().await;
                if let Some(connection) = connection.upgrade() {
                    let _ = tokio::time::timeout(STDERR_AFTER_EXIT, connection.all_read()).await;
                    let status = status.map_or_else(|e| e.to_string(), |status| status.to_string());
                    connection.fail_all(&format!("it exited ({status}){why}"));
                    connection.close_input();
                    connection.abandon_io();
                }
                // The pipes are let go, whoever else holds them.
                draining.abort();
            }
        });
        Ok(StdioServer { group, connection, log, exited: exited_watch })
    }

    /// The connection to the server.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.log.stderr_tail(usize::MAX)
    }

    /// The server's process id (its group's too); 0 once it is gone.
    pub fn pid(&self) -> i32 {
        self.group.load(Ordering::SeqCst)
    }

    /// Stops the server: closes its stdin, waits `grace` for it to exit, then
    /// sends its group SIGTERM, waits `grace` again, then SIGKILL, and reaps it.
    /// Whatever it started in its group goes with it.
    pub async fn stop(self, grace: Duration) {
        self.connection.close_input();
        // After SIGKILL too, at most `grace`: a process in uninterruptible
        // sleep dies when it wakes, and stop does not wait for that.
        for signal in [None, Some(libc::SIGTERM), Some(libc::SIGKILL)] {
            if let Some(signal) = signal {
                self.signal(signal);
            }
            if self.exits_within(grace).await {
                break;
            }
        }
        self.signal(libc::SIGKILL);
    }

    /// Whether the server exits (and is reaped) within `grace`.
    async fn exits_within(&self, grace: Duration) -> bool {
        let mut exited = self.exited.clone();
        // A closed watch means the exit task is gone, the server with it.
        let exit = async move {
            let _ = exited.wait_for(|gone| *gone).await;
        };
        tokio::time::timeout(grace, exit).await.is_ok()
    }

    fn signal(&self, signal: libc::c_int) {
        signal_group(&self.group, signal);
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        self.connection.fail_all("the server was stopped");
        self.signal(libc::SIGKILL);
    }
}

/// The process groups of the servers still running, which an exit handler
/// kills when the host exits through `exit`.
mod live_groups {
    use std::sync::{Mutex, Once};

    static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
    static HANDLER: Once = Once::new();

    /// Adds a server's group (0: none).
    pub(super) fn add(group: i32) {
        if group <= 0 {
            return;
        }
        HANDLER.call_once(|| {
            // SAFETY: registers a function without arguments that touches only a static.
            unsafe { libc::atexit(kill_all) };
        });
        if let Ok(mut groups) = GROUPS.lock() {
            groups.push(group);
        }
    }

    /// Removes a group whose server was reaped.
    pub(super) fn remove(group: i32) {
        if let Ok(mut groups) = GROUPS.lock() {
            groups.retain(|&g| g != group);
        }
    }

    /// The exit handler: never waits for the lock (a thread that held it when
    /// the host called exit will never let go).
    extern "C" fn kill_all() {
        if let Ok(groups) = GROUPS.try_lock() {
            for &group in groups.iter() {
                // SAFETY: killpg has no memory effects.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
        }
    }
}

/// Sends `signal` to the process group `group`, unless it is gone (0).
fn signal_group(group: &AtomicI32, signal: libc::c_int) {
    let group = group.load(Ordering::SeqCst);
    if group > 0 {
        // SAFETY: killpg has no memory effects; a group that is gone fails harmlessly.
        unsafe { libc::killpg(group, signal) };
    }
}

/// The server's last stderr lines, for the reason its connection closed:
/// read once its stderr ended too, or after a moment (a process it started
/// may hold stderr open).
fn last_words(mut drained: watch::Receiver<bool>, log: Arc<ServerLog>) -> WhyClosed {
    Box::new(move || {
        Box::pin(async move {
            let _ = tokio::time::timeout(STDERR_AFTER_EXIT, drained.wait_for(|done| *done)).await;
            let lines = log.stderr_tail(STDERR_LINES);
            match lines.is_empty() {
                true => String::new(),
                false => format!("; its stderr ended: {}", lines.join(" | ")),
            }
        })
    })
}

/// Reads the server's stderr to its end, into its log, with the values of
/// its `env` that may be secrets (eight characters or more) scrubbed.
async fn drain(stderr: tokio::process::ChildStderr, log: &ServerLog, secrets: &[Secret]) {
    let mut input = BufReader::new(stderr);
    loop {
        let line = match next_frame(&mut input, STDERR_LINE_BYTES).await {
            Ok(Frame::Line(line)) => String::from_utf8_lossy(&line).into_owned(),
            Ok(Frame::Oversized { length, head, .. }) => {
                format!("{}... ({length} bytes)", String::from_utf8_lossy(&head))
            }
            Ok(Frame::End) | Err(_) => return,
        };
        log.push(LogSource::Stderr, secrets.iter().fold(line, |line, secret| secret.scrub(&line)));
    }
}
