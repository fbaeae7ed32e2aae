//! Confining one bash command on Linux.
//!
//! Everything that allocates is made before the fork ([`Confinement::prepare`]):
//! the Landlock ruleset (a file descriptor holding the rules), the seccomp
//! program, the user namespace's maps. Between fork and exec, in a child of a
//! process with many threads, only system calls are made
//! ([`Confinement::enter`]):
//!
//! 1. `unshare` user, mount and PID namespaces (and a network namespace when
//!    the network is off), the user namespace mapping the host's user to itself;
//! 2. fork again: the new child is the first process of the new PID namespace
//!    and becomes the shell; the process between stays outside it, waits for
//!    the shell and ends as it ended (it is what ferrule waits for and kills,
//!    and when it dies the shell is killed with it, and with the shell every
//!    process of the namespace);
//! 3. in the shell's process: mount propagation made private and a `/proc` of
//!    the new namespace mounted (so `/proc` shows the sandbox's processes
//!    alone, never the host's environment), file descriptors other than the
//!    standard three closed at exec, `RLIMIT_NPROC` bounded for a user other
//!    than root (counted in the user namespace: the sandbox's processes only),
//!    then Landlock's rules, `no_new_privs` and the seccomp filter.
//!
//! When a step fails, the child writes which into a pipe of its own before the
//! spawn reports the error, so the model is told what is missing.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use nix::fcntl::OFlag;
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{kill, signal, SigHandler, Signal};
use nix::sys::stat::Mode;
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

use super::{Sandbox, SYSTEM_READABLE, SYSTEM_WRITABLE_DEVICES};

/// The most processes a command may have at once when the host's user is not
/// root (the kernel does not bound root's).
const MAX_PROCESSES: u64 = 512;

/// One command's confinement, made before its fork; consumed by the child.
pub(crate) struct Confinement {
    ruleset: Option<RulesetCreated>,
    filter: Option<BpfProgram>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    network: bool,
    bound_processes: bool,
    /// Where the child says which step failed: the read end stays here.
    failed_step: Option<(OwnedFd, OwnedFd)>,
}

/// The steps of [`Confinement::enter`], as the child reports a failure.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Step {
    Namespaces = 1,
    UserMap,
    Fork,
    Mounts,
    ProcessLimit,
    Landlock,
    Seccomp,
}

impl Step {
    fn from_byte(byte: u8) -> Option<Self> {
        [Step::Namespaces, Step::UserMap, Step::Fork, Step::Mounts, Step::ProcessLimit, Step::Landlock, Step::Seccomp]
            .into_iter()
            .find(|step| *step as u8 == byte)
    }

    /// What the kernel refused, for the model.
    fn missing(self) -> &'static str {
        match self {
            Step::Namespaces => "new user, PID and mount namespaces (unprivileged user namespaces may be disabled)",
            Step::UserMap => "a user namespace mapping the host's user",
            Step::Fork => "a process in the new PID namespace",
            Step::Mounts => "a /proc of the sandbox's own (mounting proc in the new namespaces)",
            Step::ProcessLimit => "a bound on the number of processes",
            Step::Landlock => "Landlock's restrictions",
            Step::Seccomp => "the seccomp filter",
        }
    }
}

impl Confinement {
    /// The confinement of one command of `sandbox`: `temporary` is the
    /// command's private temporary directory (writable), `extra_readable`
    /// further trees it may read (the spill files). The error is for the model:
    /// what the kernel lacks.
    pub(crate) fn prepare(sandbox: &Sandbox, temporary: &Path, extra_readable: &[&Path]) -> Result<Self, String> {
        let ruleset = ruleset(sandbox, temporary, extra_readable)?;
        let filter = match sandbox.network {
            true => None,
            false => Some(socket_filter()?),
        };
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let failed_step = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
            .map_err(|e| format!("The sandbox could not be prepared: {e}."))?;
        Ok(Confinement {
            ruleset: Some(ruleset),
            filter,
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            network: sandbox.network,
            bound_processes: uid != 0,
            failed_step: Some(failed_step),
        })
    }

    /// Makes `command` enter this confinement between its fork and its exec.
    pub(crate) fn install(mut self, command: &mut tokio::process::Command) -> FailedStep {
        let (read, write) = self.failed_step.take().expect("a confinement is installed once");
        let mut confinement = Some((self, write));
        // SAFETY: the closure runs in the forked child and makes only system
        // calls on memory prepared before the fork (see `enter`).
        unsafe {
            command.pre_exec(move || match confinement.take() {
                Some((mut confinement, report)) => confinement.enter(&report),
                None => Err(io::Error::other("the confinement was entered twice")),
            });
        }
        FailedStep(read)
    }

    /// Enters the confinement; runs in the forked child, where only system
    /// calls are safe. Returns in the shell's process; the process between
    /// never returns. On failure the step is written to `report`.
    fn enter(&mut self, report: &OwnedFd) -> io::Result<()> {
        let failed = |step: Step, error: io::Error| {
            let _ = nix::unistd::write(report.as_fd(), &[step as u8]);
            error
        };
        let mut namespaces = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
        if !self.network {
            namespaces |= CloneFlags::CLONE_NEWNET;
        }
        unshare(namespaces).map_err(|e| failed(Step::Namespaces, e.into()))?;
        write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_file(c"/proc/self/uid_map", &self.uid_map))
            .and_then(|()| write_file(c"/proc/self/gid_map", &self.gid_map))
            .map_err(|e| failed(Step::UserMap, e))?;
        // This process and the shell's until its exec hold a copy of the
        // host's memory: never in a core dump (exec makes the shell dumpable).
        nix::sys::prctl::set_dumpable(false).map_err(|e| failed(Step::Fork, e.into()))?;
        // SAFETY: the child is single-threaded; both sides go on with system calls only.
        match unsafe { fork() }.map_err(|e| failed(Step::Fork, e.into()))? {
            ForkResult::Parent { child } => wait_for_shell(child),
            ForkResult::Child => {}
        }
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| failed(Step::Fork, e.into()))?;
        mount(None::<&CStr>, c"/", None::<&CStr>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&CStr>)
            .and_then(|()| {
                let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
                mount(Some(c"proc"), c"/proc", Some(c"proc"), flags, None::<&CStr>)
            })
            .map_err(|e| failed(Step::Mounts, e.into()))?;
        close_inherited_at_exec();
        if self.bound_processes {
            setrlimit(Resource::RLIMIT_NPROC, MAX_PROCESSES, MAX_PROCESSES)
                .map_err(|e| failed(Step::ProcessLimit, e.into()))?;
        }
        if let Some(ruleset) = self.ruleset.take() {
            // The /proc just mounted is not the one the rules made before
            // the fork name: it is readable by a rule of its own.
            let proc = nix::fcntl::open(c"/proc", OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty())
                .map_err(|e| failed(Step::Landlock, e.into()))?;
            ruleset
                .add_rule(PathBeneath::new(proc, readable_access()))
                .and_then(|ruleset| ruleset.restrict_self())
                .map_err(|e| failed(Step::Landlock, io::Error::other(e)))?;
        }
        if let Some(filter) = &self.filter {
            seccompiler::apply_filter(filter).map_err(|e| failed(Step::Seccomp, io::Error::other(e)))?;
        }
        Ok(())
    }
}

/// The read end of the pipe a confined child reports a failed step into.
pub(crate) struct FailedStep(OwnedFd);

impl FailedStep {
    /// What to tell the model when the spawn failed with `error`.
    pub(crate) fn explain(self, error: &io::Error) -> String {
        let mut byte = [0u8; 1];
        let step = match std::fs::File::from(self.0).read(&mut byte) {
            Ok(1) => Step::from_byte(byte[0]),
            _ => None,
        };
        match step {
            Some(step) => format!(
                "bash could not start in the sandbox: this system does not give {} ({error}). The command did not run.",
                step.missing()
            ),
            None => format!("Could not start bash in the sandbox: {error}"),
        }
    }
}

/// Waits for the shell and ends as it ended: with its exit code, or killed by
/// its signal. Never returns.
fn wait_for_shell(shell: Pid) -> ! {
    // Only the shell keeps the pipe that tells the spawn whether exec worked,
    // and the command's output; this process keeps nothing open.
    // SAFETY: close_range has no memory effects.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    // Ending by the shell's signal must never dump this copy of the host's memory.
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    let code = loop {
        match waitpid(shell, None) {
            Ok(WaitStatus::Exited(_, code)) => break code,
            Ok(WaitStatus::Signaled(_, killed_by, _)) => {
                // SAFETY: the default action, then the same signal, in a single-threaded process.
                let _ = unsafe { signal(killed_by, SigHandler::SigDfl) };
                let _ = kill(Pid::this(), killed_by);
                break 128 + killed_by as i32;
            }
            Err(nix::errno::Errno::EINTR) | Ok(_) => continue,
            Err(_) => break 127,
        }
    };
    // SAFETY: ends this process at once, running nothing of the host's.
    unsafe { libc::_exit(code) }
}

/// Marks every descriptor past the standard three close-on-exec, so that none
/// the host left inheritable reaches the shell.
fn close_inherited_at_exec() {
    // SAFETY: close_range has no memory effects.
    unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
}

/// Writes `bytes` to the file at `path` (a file of /proc).
fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let file = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    nix::unistd::write(&file, bytes)?;
    Ok(())
}

/// Landlock's rules for `sandbox`: reads in the system's trees and the
/// readable roots, writes in the writable roots and `temporary`, and, without
/// network, no TCP bind or connect. Requires Landlock ABI 3 (ABI 4 without
/// network); later rights (device ioctls, scopes) are added where the kernel
/// has them.
fn ruleset(sandbox: &Sandbox, temporary: &Path, extra_readable: &[&Path]) -> Result<RulesetCreated, String> {
    let missing = |what: &str, e: landlock::RulesetError| {
        format!("bash cannot run in the sandbox: this kernel does not give {what} ({e}). The command did not run.")
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .map_err(|e| missing("Landlock (ABI 3) for files", e))?;
    if !sandbox.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| missing("Landlock's TCP rules (ABI 4)", e))?;
    }
    let ruleset = ruleset
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI::V5))
        .and_then(|r| r.scope(Scope::from_all(ABI::V6)))
        .and_then(|r| r.create())
        .map_err(|e| missing("a Landlock ruleset", e))?;
    let readable: Vec<PathBuf> = SYSTEM_READABLE
        .iter()
        .map(PathBuf::from)
        .chain(sandbox.readable.iter().cloned())
        .chain(extra_readable.iter().map(|p| p.to_path_buf()))
        .collect();
    let writable: Vec<&Path> = sandbox.writable.iter().map(PathBuf::as_path).chain([temporary]).collect();
    ruleset
        .add_rules(path_beneath_rules(&readable, readable_access()))
        .and_then(|r| r.add_rules(path_beneath_rules(SYSTEM_WRITABLE_DEVICES, AccessFs::from_all(ABI::V5))))
        .and_then(|r| r.add_rules(path_beneath_rules(&writable, AccessFs::from_all(ABI::V5))))
        .map_err(|e| missing("Landlock rules for the sandbox's paths", e))
}

/// What a readable tree allows: reading, listing and running, and device
/// ioctls (on terminals and the like).
fn readable_access() -> BitFlags<AccessFs> {
    AccessFs::from_read(ABI::V5) | AccessFs::IoctlDev
}

/// A seccomp program refusing (EPERM) sockets of any family but AF_UNIX, and
/// io_uring (whose operations open and connect sockets outside the filter).
fn socket_filter() -> Result<BpfProgram, String> {
    let missing = |e: &dyn std::fmt::Display| {
        format!("bash cannot run in the sandbox without network: no seccomp filter for this machine ({e}). The command did not run.")
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| missing(&e))?;
    let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map_err(|e| missing(&e))?;
    let rules = BTreeMap::from([(libc::SYS_socket, vec![not_unix]), (libc::SYS_io_uring_setup, vec![])]);
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| missing(&e))?;
    filter.try_into().map_err(|e: seccompiler::BackendError| missing(&e))
}
