//! The bash sandbox: what `builtin_tools.sandbox` asks for, checked when the
//! agent is built, and the confinement each command starts in.
//!
//! On Linux a confined command runs in user, PID and mount namespaces of its
//! own (and a network namespace when the network is off), under Landlock rules
//! for files and TCP ports, a seccomp filter refusing sockets other than
//! AF_UNIX, and `no_new_privs` (linux.rs). Elsewhere a mode other than `off`
//! fails closed: every bash call is an error result saying so.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod process_cgroup;
#[cfg(not(target_os = "linux"))]
mod unsupported;

#[cfg(target_os = "linux")]
pub(crate) use linux::{Confined, Confinement};
#[cfg(not(target_os = "linux"))]
pub(crate) use unsupported::{Confined, Confinement};

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, Result};

/// The `builtin_tools.sandbox` configuration. Unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// What bash may change: `workspace_write` (the working directory, the
    /// writable roots and a private temporary directory), `read_only` (only the
    /// private temporary directory) or `off` (bash runs with the host's
    /// permissions, and no other field may be set). Absent: `workspace_write`
    /// (the sandbox without `sandbox` is `workspace_write` when `confine` is on,
    /// `off` otherwise).
    #[serde(default)]
    pub mode: Option<SandboxMode>,
    /// Whether commands may open network sockets (default false).
    #[serde(default)]
    pub network: bool,
    /// More directories (or files) commands may write, in `workspace_write`
    /// mode; relative paths are taken from the working directory. Each must exist.
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// More directories (or files) commands may read and run; relative paths
    /// are taken from the working directory. Each must exist.
    #[serde(default)]
    pub readable_roots: Vec<String>,
}

/// What a sandboxed bash may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Writes in the working directory, the writable roots and a private
    /// temporary directory.
    WorkspaceWrite,
    /// Writes in the private temporary directory only.
    ReadOnly,
    /// No sandbox: bash runs with the host process's permissions.
    Off,
}

/// The trees every confined command may read and run: the system's own.
/// (`/proc` too, the sandbox's own, made readable where it is mounted.)
const SYSTEM_READABLE: [&str; 10] =
    ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys"];

/// The devices every confined command may read; no other device is readable.
const SYSTEM_READABLE_DEVICES: [&str; 5] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The devices every confined command may write (redirections to /dev/null).
const SYSTEM_WRITABLE_DEVICES: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// Files and directories of the system's readable trees that hold secrets: a
/// confined command reads them empty (the SSH host keys too).
const SYSTEM_SECRETS: [&str; 5] = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private"];

/// A tree of a sandbox, held open since the agent was built: a command that
/// replaces its path with a link changes nothing the next command may reach.
#[derive(Debug, Clone)]
pub(crate) struct Root {
    /// Where it was, for messages and the tool's description.
    pub(crate) path: PathBuf,
    /// The tree itself (`O_PATH` on Linux).
    pub(crate) handle: Arc<File>,
}

impl Root {
    /// Opens the tree at `path` (real: no link in it), without following a link.
    pub(crate) fn open(path: PathBuf) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_PATH | libc::O_NOFOLLOW);
        }
        Ok(Root { handle: Arc::new(options.open(&path)?), path })
    }
}

/// A sandbox as the agent was built with it: the mode's roots made absolute and
/// real. Shared by every bash call of the agent; each call confines its command
/// with a [`Confinement`] made from it.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    /// Trees commands may write (beside the private temporary directory).
    pub(crate) writable: Vec<Root>,
    /// Trees commands may read and run (beside the system's and the writable ones).
    pub(crate) readable: Vec<Root>,
    /// Whether sockets other than AF_UNIX may be opened.
    pub(crate) network: bool,
}

impl Sandbox {
    /// The sandbox `config` asks for, or `None` for mode `off`; `confine`
    /// chooses the mode when the configuration gives none. Roots that do not
    /// exist are INVALID_ARG.
    pub(crate) fn from_config(config: Option<&SandboxConfig>, confine: bool, root: &Path) -> Result<Option<Self>> {
        let mode = match config {
            Some(config) => config.mode.unwrap_or(SandboxMode::WorkspaceWrite),
            None if confine => SandboxMode::WorkspaceWrite,
            None => SandboxMode::Off,
        };
        let default = SandboxConfig::default();
        let config = config.unwrap_or(&default);
        let writable_roots = resolve_roots(&config.writable_roots, root, "writable_roots")?;
        let readable_roots = resolve_roots(&config.readable_roots, root, "readable_roots")?;
        let writable = match mode {
            SandboxMode::Off if config.network || !writable_roots.is_empty() || !readable_roots.is_empty() => {
                return Err(Error::invalid_arg(
                    "builtin_tools.sandbox: mode off takes no network or roots (bash runs with the host's permissions)",
                ))
            }
            SandboxMode::Off => return Ok(None),
            SandboxMode::ReadOnly if !writable_roots.is_empty() => {
                return Err(Error::invalid_arg(
                    "builtin_tools.sandbox: writable_roots are for mode workspace_write; read_only writes nowhere",
                ))
            }
            SandboxMode::ReadOnly => Vec::new(),
            SandboxMode::WorkspaceWrite => std::iter::once(root.to_path_buf()).chain(writable_roots).collect(),
        };
        let readable = std::iter::once(root.to_path_buf()).chain(readable_roots).collect();
        let open = |paths: Vec<PathBuf>| -> Result<Vec<Root>> {
            paths
                .into_iter()
                .map(|path| {
                    Root::open(path.clone()).map_err(|e| {
                        Error::invalid_arg(format!("builtin_tools.sandbox: {} cannot be used: {e}", path.display()))
                    })
                })
                .collect()
        };
        Ok(Some(Sandbox { writable: open(writable)?, readable: open(readable)?, network: config.network }))
    }

    /// Whether commands may read `path` (the system's trees aside).
    pub(crate) fn may_read(&self, path: &Path) -> bool {
        self.readable.iter().chain(&self.writable).any(|root| path.starts_with(&root.path))
    }

    /// The rules as the model is told them, for the bash tool's description.
    pub(crate) fn rules(&self) -> String {
        let listed = |roots: &[Root]| roots.iter().map(|r| r.path.display().to_string()).collect::<Vec<_>>().join(", ");
        let writes = match self.writable.is_empty() {
            true => "only in $TMPDIR".to_owned(),
            false => format!("only in {} and $TMPDIR", listed(&self.writable)),
        };
        let network = match self.network {
            true => "Network access is allowed.",
            false => "There is no network: connections and name lookups fail.",
        };
        format!(
            "Commands run in a sandbox: they can write {writes} (anything else fails with \"Read-only file system\" or \"Permission denied\"), read only the system's directories and {}, and see only their own processes; background processes end with the command. {network}",
            listed(&self.readable)
        )
    }
}

/// `roots` made absolute (from `root`) and real; INVALID_ARG naming `field`
/// for one that does not exist.
fn resolve_roots(roots: &[String], root: &Path, field: &str) -> Result<Vec<PathBuf>> {
    roots
        .iter()
        .map(|given| {
            root.join(given)
                .canonicalize()
                .map_err(|e| Error::invalid_arg(format!("builtin_tools.sandbox.{field}: {given} cannot be used: {e}")))
        })
        .collect()
}
