//! `bash {command, timeout?}`: runs a command with `bash -c` in the working
//! directory, non-interactively.
//!
//! The command gets its own process group, stdin from /dev/null, and the
//! process environment without the model provider's key variables (unless the
//! configuration passes them on); stdout and stderr share one pipe, so their
//! output interleaves as written. The timeout covers the whole call: at it, or on
//! cancellation (including the run dropping the call), the whole group is killed.
//! The call returns when the shell exits, after reading what is left in the pipe
//! for at most 100 ms more (a background child may hold it open; what was read so
//! far is kept).
//!
//! Memory stays bounded: the result holds the last 2,000 lines or 50 KiB, and
//! longer output is spilled to a file the result names, up to 64 MiB. Spill files
//! are created exclusively, readable by the process's user only, in a private
//! directory (mode 0700, random name) under the temporary directory, which is
//! removed when the agent is dropped. Progress updates show the tail as it grows.
//!
//! With a sandbox (sandbox/), each command starts confined, with `TMPDIR` (and
//! `TMP`, `TEMP`) a private directory of the agent's, removed with it, and
//! `HOME` too unless the sandbox may read the host's home; the
//! tool's description tells the model the sandbox's rules. A command the
//! sandbox cannot confine does not run: the call is an error result saying
//! what the system lacks.

use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;

use super::object_schema;
use super::sandbox::{Confined, Confinement, Root, Sandbox};
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
/// The most output kept in a spill file.
const MAX_SPILL_BYTES: u64 = 64 << 20;
/// Key variables no command sees unless passed on by name: the model's key
/// variable joins them.
const PROVIDER_KEY_VARIABLES: [&str; 2] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// How the bash tool of one agent runs commands.
pub(crate) struct BashSettings {
    /// Seconds, for calls that give no timeout.
    pub(crate) default_timeout_s: Option<u64>,
    /// Environment variables removed from every command.
    pub(crate) hidden_variables: Vec<String>,
    /// The sandbox every command starts in, if any.
    pub(crate) sandbox: Option<Sandbox>,
}

impl BashSettings {
    /// Hides the provider key variables and `model_key_variable`, except those
    /// in `passed`; confines every command in `sandbox`.
    pub(crate) fn new(
        default_timeout_s: Option<u64>,
        model_key_variable: Option<&str>,
        passed: &[String],
        sandbox: Option<Sandbox>,
    ) -> Self {
        let hidden_variables = PROVIDER_KEY_VARIABLES
            .into_iter()
            .chain(model_key_variable)
            .filter(|name| !passed.iter().any(|p| p == name))
            .map(str::to_owned)
            .collect();
        BashSettings { default_timeout_s, hidden_variables, sandbox }
    }
}

pub(crate) fn tool(workspace: Arc<Workspace>, settings: BashSettings, options: ToolOptions) -> Result<Tool> {
    let schema = object_schema(
        json!({"command": {"type": "string", "description": "The bash command line."},
               "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the command and everything it started are killed."}}),
        &["command"],
    );
    let description = match &settings.sandbox {
        Some(sandbox) => format!("{DESCRIPTION} {}", sandbox.rules()),
        None => DESCRIPTION.to_owned(),
    };
    let settings = Arc::new(settings);
    let directories = Arc::new(Directories::default());
    Tool::new("bash", &description, schema, options, move |call: Invocation| {
        let (workspace, settings, directories) = (workspace.clone(), settings.clone(), directories.clone());
        async move {
            match run(&workspace, &settings, &directories, &call).await {
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

async fn run(
    workspace: &Workspace,
    settings: &BashSettings,
    directories: &Directories,
    call: &Invocation,
) -> Result<ToolResult, String> {
    let command = call.arguments()["command"].as_str().unwrap_or_default();
    let timeout = match call.arguments().get("timeout").and_then(Value::as_f64) {
        // Past what a Duration holds, a timeout is as good as none.
        Some(seconds) => Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)),
        None => settings.default_timeout_s.map(Duration::from_secs),
    };
    let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
    let (reader, writer) = std::io::pipe().map_err(|e| format!("Could not start bash: {e}"))?;
    let (mut child, confined) = {
        let mut bash = tokio::process::Command::new("bash");
        bash.arg("-c")
            .arg(command)
            .current_dir(workspace.root())
            .stdin(Stdio::null())
            .stdout(writer.try_clone().map_err(|e| format!("Could not start bash: {e}"))?)
            .stderr(writer)
            .process_group(0);
        for name in &settings.hidden_variables {
            bash.env_remove(name);
        }
        let confined = match &settings.sandbox {
            Some(sandbox) => Some(confine(&mut bash, sandbox, directories)?),
            None => None,
        };
        let spawned = bash.spawn();
        // `bash` goes here, closing ferrule's copies of the pipe's write end
        // (and of the confinement's).
        drop(bash);
        match (spawned, confined) {
            (Ok(child), confined) => (child, confined),
            (Err(e), Some(confined)) => return Err(confined.explain(&e)),
            (Err(e), None) => return Err(format!("Could not start bash: {e}")),
        }
    };
    let group = ProcessGroup(child.id().map(|pid| pid as i32));
    let mut pipe = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| format!("Could not read bash's output: {e}"))?;
    let mut output = Output::new(&directories.spills);
    let mut buffer = vec![0u8; 16 * 1024];
    let mut open = true;
    let mut ticker = tokio::time::interval(UPDATE_EVERY);
    let mut reported = 0u64;
    let ending = loop {
        tokio::select! {
            status = child.wait() => break Ending::Exited(status.map_err(|e| format!("Could not wait for bash: {e}"))?),
            _ = sleep_until(deadline) => {
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
    let drain_until = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    let drain_until = deadline.map_or(drain_until, |deadline| deadline.min(drain_until));
    while open {
        match tokio::time::timeout_at(drain_until, pipe.read(&mut buffer)).await {
            Ok(Ok(n)) if n > 0 => output.push(&buffer[..n]),
            _ => open = false,
        }
    }
    let past_deadline = deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline);
    group.disarm(matches!(ending, Ending::Exited(_)) && !past_deadline);
    if let Some(confined) = confined {
        confined.release().await;
    }
    Ok(output.result(&ending))
}

/// Makes `bash` start in `sandbox`, its temporary directory the agent's
/// private one; what to tell the model when the sandbox cannot be made.
fn confine(
    bash: &mut tokio::process::Command,
    sandbox: &Sandbox,
    directories: &Directories,
) -> Result<Confined, String> {
    let temporary =
        directories.temporary.root().map_err(|e| format!("Could not make the sandbox's temporary directory: {e}"))?;
    let spills = directories.spills.existing();
    let confinement = Confinement::prepare(sandbox, temporary, spills.as_slice())?;
    for name in ["TMPDIR", "TMP", "TEMP"] {
        bash.env(name, &temporary.path);
    }
    // A home the sandbox cannot read would fail every program that reads its
    // settings there (git, for one): the temporary directory stands in.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if !home.is_some_and(|home| home.canonicalize().is_ok_and(|home| sandbox.may_read(&home))) {
        bash.env("HOME", &temporary.path);
    }
    Ok(confinement.install(bash))
}

/// Sleeps until `deadline`, or for ever.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
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

/// The agent's private directories: the spill files', and the sandbox's
/// temporary directory.
struct Directories {
    spills: PrivateDirectory,
    temporary: PrivateDirectory,
}

impl Default for Directories {
    fn default() -> Self {
        Directories { spills: PrivateDirectory::new("ferrule-bash-"), temporary: PrivateDirectory::new("ferrule-tmp-") }
    }
}

/// A directory of the agent's own under the temporary directory (mode 0700,
/// random name), made when first needed and removed, with what it holds, when
/// the agent's bash tool is dropped; held open from when it was made.
struct PrivateDirectory {
    prefix: &'static str,
    directory: OnceLock<(tempfile::TempDir, Root)>,
}

impl PrivateDirectory {
    fn new(prefix: &'static str) -> Self {
        PrivateDirectory { prefix, directory: OnceLock::new() }
    }

    /// The directory, made now if it was not yet.
    fn root(&self) -> std::io::Result<&Root> {
        if let Some((_, root)) = self.directory.get() {
            return Ok(root);
        }
        let private = std::fs::Permissions::from_mode(0o700);
        let made = tempfile::Builder::new().prefix(self.prefix).permissions(private).tempdir()?;
        let root = Root::open(made.path().to_path_buf())?;
        Ok(&self.directory.get_or_init(|| (made, root)).1)
    }

    /// The directory, if it was made.
    fn existing(&self) -> Option<&std::path::Path> {
        self.directory.get().map(|(directory, _)| directory.path())
    }

    /// A new spill file in the directory: created exclusively, mode 0600, random name.
    fn create_file(&self) -> Option<(PathBuf, File)> {
        let file = tempfile::Builder::new()
            .prefix("output-")
            .suffix(".log")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.root().ok()?.path)
            .ok()?;
        let (file, path) = file.keep().ok()?;
        Some((path, file))
    }
}

/// The output so far: a bounded tail in memory, and the first
/// [`MAX_SPILL_BYTES`] in a spill file once it outgrows the tail.
struct Output<'a> {
    spills: &'a PrivateDirectory,
    tail: Vec<u8>,
    total: u64,
    lines: usize,
    spill: Option<(PathBuf, File)>,
    spill_tried: bool,
}

impl<'a> Output<'a> {
    fn new(spills: &'a PrivateDirectory) -> Self {
        Output { spills, tail: Vec::new(), total: 0, lines: 0, spill: None, spill_tried: false }
    }

    fn push(&mut self, bytes: &[u8]) {
        let spilled = self.total.min(MAX_SPILL_BYTES);
        self.total += bytes.len() as u64;
        self.lines += bytes.iter().filter(|&&b| b == b'\n').count();
        if !self.spill_tried && (self.total as usize > MAX_BYTES || self.lines > MAX_LINES) {
            self.spill_tried = true;
            self.spill = self.spills.create_file().map(|(path, mut file)| {
                let _ = file.write_all(&self.tail);
                (path, file)
            });
        }
        if let Some((_, file)) = &mut self.spill {
            let room = (MAX_SPILL_BYTES - spilled).min(bytes.len() as u64) as usize;
            let _ = file.write_all(&bytes[..room]);
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
            let kept = match self.total > MAX_SPILL_BYTES {
                true => format!("its first {MAX_SPILL_BYTES} bytes are in"),
                false => "the whole output is in".to_owned(),
            };
            text = format!(
                "[output cut: showing the last {shown_lines} lines of {} bytes; {kept} {}]\n{text}",
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
