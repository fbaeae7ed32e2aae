//! Confining one bash command on Linux.
//!
//! Everything that allocates is made before the fork ([`Confinement::prepare`]):
//! the Landlock ruleset (a file descriptor holding the rules, made from the
//! trees the agent holds open), the seccomp program, the user namespace's maps,
//! the paths the child mounts. Between fork and exec, in a child of a process
//! with many threads, the child makes system calls only
//! ([`Confinement::enter`]; `fork` is the C library's):
//!
//! 1. join the command's cgroup (a root host's process bound), then `unshare`
//!    user, mount, PID and cgroup namespaces (and a network namespace when the
//!    network is off), the user namespace mapping the host's user to itself;
//!    this process dies with the thread of ferrule's that started it;
//! 2. fork again: the new child is the first process of the new PID namespace
//!    and becomes the shell; the process between stays outside it, waits for
//!    the shell and ends as it ended (it is what ferrule waits for and kills,
//!    and when it dies the shell is killed with it, and with the shell every
//!    process of the namespace); neither dumps core before the exec;
//! 3. in the shell's process: a session of its own (no controlling terminal)
//!    and a session keyring of its own (not the host's), mount propagation made
//!    private, a `/proc` of the new namespace (so `/proc` shows the sandbox's
//!    processes alone, never the host's environment), no user namespace to be
//!    made inside, the system's secret files and directories covered, every
//!    mount made read-only but the writable trees (so no file outside them
//!    changes mode, owner, times or attributes either), file descriptors other
//!    than the standard three closed at exec, `RLIMIT_NPROC` bounded for a user
//!    other than root (counted in the user namespace: the sandbox's processes
//!    only), every capability dropped for good, then Landlock's rules,
//!    `no_new_privs` and the seccomp filters.
//!
//! When a step fails, the child writes which into a pipe of its own before the
//! spawn reports the error, so the model is told what is missing.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use nix::errno::Errno;
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

use super::process_cgroup::ProcessCgroup;
use super::{Root, Sandbox, SYSTEM_READABLE, SYSTEM_READABLE_DEVICES, SYSTEM_SECRETS, SYSTEM_WRITABLE_DEVICES};

/// The most processes a command may have at once (by `RLIMIT_NPROC`, or for a
/// root host, whose count the kernel does not bound, by a cgroup).
const MAX_PROCESSES: u64 = 512;

/// One command's confinement, made before its fork; consumed by the child.
pub(crate) struct Confinement {
    ruleset: Option<RulesetCreated>,
    filters: Vec<BpfProgram>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    network: bool,
    bound_processes: bool,
    /// The highest capability number this kernel has.
    last_capability: u32,
    /// The command's cgroup when the host is root, and the file its first
    /// process writes itself into.
    cgroup: Option<ProcessCgroup>,
    cgroup_procs: Option<CString>,
    /// The process the child must die with (ferrule's).
    host: Pid,
    /// The writable trees: their paths, and the device and inode the paths
    /// must still lead to.
    writable: Vec<(CString, u64, u64)>,
    /// Room for the child's handles on the writable trees, and its copies of
    /// them (detached mounts).
    places: Vec<(RawFd, RawFd)>,
    /// The system's secret files and directories (`true`) that exist.
    secrets: Vec<(CString, bool)>,
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
    Keyring,
    Mounts,
    Descriptors,
    ProcessLimit,
    Capabilities,
    Landlock,
    Seccomp,
}

impl Step {
    fn from_byte(byte: u8) -> Option<Self> {
        [
            Step::Namespaces,
            Step::UserMap,
            Step::Fork,
            Step::Keyring,
            Step::Mounts,
            Step::Descriptors,
            Step::ProcessLimit,
            Step::Capabilities,
            Step::Landlock,
            Step::Seccomp,
        ]
        .into_iter()
        .find(|step| *step as u8 == byte)
    }

    /// What the kernel refused, for the model.
    fn missing(self) -> &'static str {
        match self {
            Step::Namespaces => "new user, PID and mount namespaces (unprivileged user namespaces may be disabled)",
            Step::UserMap => "a user namespace mapping the host's user",
            Step::Fork => "a process in the new PID namespace",
            Step::Keyring => "a session keyring of its own",
            Step::Mounts => {
                "the sandbox's mounts (a /proc of its own with no user namespaces inside, read-only mounts: mount_setattr, open_tree, move_mount)"
            }
            Step::Descriptors => "closing the host's file descriptors (close_range)",
            Step::ProcessLimit => "a bound on the number of processes",
            Step::Capabilities => "dropping every capability",
            Step::Landlock => "Landlock's restrictions",
            Step::Seccomp => "the seccomp filter",
        }
    }
}

impl Confinement {
    /// The confinement of one command of `sandbox`: `temporary` is the
    /// command's private temporary directory (writable, held open),
    /// `extra_readable` further trees it may read (the spill files). The error
    /// is for the model: what the kernel lacks.
    pub(crate) fn prepare(sandbox: &Sandbox, temporary: &Root, extra_readable: &[&Path]) -> Result<Self, String> {
        let writable: Vec<&Root> = sandbox.writable.iter().chain([temporary]).collect();
        let ruleset = ruleset(sandbox, &writable, extra_readable)?;
        let filters = seccomp_filters(sandbox.network)?;
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        let failed_step = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)
            .map_err(|e| format!("The sandbox could not be prepared: {e}."))?;
        let mut trees = Vec::new();
        for root in &writable {
            let held = root.handle.metadata().map_err(|e| format!("The sandbox could not be prepared: {e}."))?;
            let path = CString::new(root.path.as_os_str().as_bytes())
                .map_err(|_| "The sandbox could not be prepared: a path holds NUL.".to_owned())?;
            trees.push((path, held.dev(), held.ino()));
        }
        let cgroup = match uid {
            0 => ProcessCgroup::make(MAX_PROCESSES),
            _ => None,
        };
        Ok(Confinement {
            cgroup_procs: cgroup.as_ref().map(|cgroup| cgroup.procs().clone()),
            cgroup,
            ruleset: Some(ruleset),
            filters,
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            network: sandbox.network,
            bound_processes: uid != 0,
            last_capability: std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .unwrap_or(63),
            host: Pid::this(),
            places: vec![(-1, -1); trees.len()],
            writable: trees,
            secrets: system_secrets(),
            failed_step: Some(failed_step),
        })
    }

    /// Makes `command` enter this confinement between its fork and its exec.
    pub(crate) fn install(mut self, command: &mut tokio::process::Command) -> Confined {
        let (read, write) = self.failed_step.take().expect("a confinement is installed once");
        let cgroup = self.cgroup.take();
        let mut confinement = Some((self, write));
        // SAFETY: the closure runs in the forked child and makes only system
        // calls on memory prepared before the fork (see `enter`).
        unsafe {
            command.pre_exec(move || match confinement.take() {
                Some((mut confinement, report)) => confinement.enter(&report),
                None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
            });
        }
        Confined { failed_step: read, cgroup }
    }

    /// Enters the confinement; runs in the forked child, where only system
    /// calls are safe. Returns in the shell's process; the process between
    /// never returns. On failure the step is written to `report`.
    fn enter(&mut self, report: &OwnedFd) -> io::Result<()> {
        let failed = |step: Step| {
            let error = io::Error::last_os_error();
            let _ = nix::unistd::write(report.as_fd(), &[step as u8]);
            error
        };
        // Every process of the command counts towards its cgroup's bound.
        if let Some(procs) = &self.cgroup_procs {
            write_file(procs, b"0").map_err(|_| failed(Step::ProcessLimit))?;
        }
        // Dies with the thread that spawned it, and at once if that is gone.
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|_| failed(Step::Fork))?;
        if nix::unistd::getppid() != self.host {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // A cgroup namespace too: the command can name no cgroup outside its
        // own (clone3's CLONE_INTO_CGROUP would otherwise leave the bound).
        let mut namespaces = CloneFlags::CLONE_NEWUSER
            | CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWPID
            | CloneFlags::CLONE_NEWCGROUP;
        if !self.network {
            namespaces |= CloneFlags::CLONE_NEWNET;
        }
        unshare(namespaces).map_err(|_| failed(Step::Namespaces))?;
        write_file(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_file(c"/proc/self/uid_map", &self.uid_map))
            .and_then(|()| write_file(c"/proc/self/gid_map", &self.gid_map))
            .map_err(|_| failed(Step::UserMap))?;
        // This process and the shell's until its exec hold a copy of the
        // host's memory: never in a core dump (exec makes the shell dumpable).
        nix::sys::prctl::set_dumpable(false).map_err(|_| failed(Step::Fork))?;
        // SAFETY: the child is single-threaded; both sides go on with system calls only.
        match unsafe { fork() }.map_err(|_| failed(Step::Fork))? {
            ForkResult::Parent { child } => wait_for_shell(child),
            ForkResult::Child => {}
        }
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|_| failed(Step::Fork))?;
        nix::unistd::setsid().map_err(|_| failed(Step::Fork))?;
        // SAFETY: keyctl with plain values: join a new, empty session keyring.
        Errno::result(unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0usize) })
            .map_err(|_| failed(Step::Keyring))?;
        self.find_the_writable_trees().map_err(|_| failed(Step::Mounts))?;
        self.mount_the_sandbox().map_err(|_| failed(Step::Mounts))?;
        // SAFETY: close_range has no memory effects.
        Errno::result(unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) })
            .map_err(|_| failed(Step::Descriptors))?;
        if self.bound_processes {
            setrlimit(Resource::RLIMIT_NPROC, MAX_PROCESSES, MAX_PROCESSES).map_err(|_| failed(Step::ProcessLimit))?;
        }
        self.drop_capabilities().map_err(|_| failed(Step::Capabilities))?;
        if let Some(ruleset) = self.ruleset.take() {
            // The /proc just mounted is not the one the rules made before
            // the fork name: it is readable by a rule of its own.
            let proc = nix::fcntl::open(c"/proc", OFlag::O_PATH | OFlag::O_CLOEXEC, Mode::empty())
                .map_err(|_| failed(Step::Landlock))?;
            ruleset
                .add_rule(PathBeneath::new(proc, readable_access()))
                .and_then(|ruleset| ruleset.restrict_self())
                .map_err(|_| failed(Step::Landlock))?;
        }
        for filter in &self.filters {
            seccompiler::apply_filter(filter).map_err(|_| failed(Step::Seccomp))?;
        }
        Ok(())
    }

    /// Opens each writable tree by its path in the new mount namespace, if
    /// that still leads to the tree the agent holds. A command may have moved
    /// it (within another writable tree: nothing else is writable) and put
    /// something else there: that path then stays read-only, while the tree,
    /// wherever it went, is writable through the tree around it.
    fn find_the_writable_trees(&mut self) -> nix::Result<()> {
        for ((path, device, inode), (place, _)) in self.writable.iter().zip(self.places.iter_mut()) {
            let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            let Ok(found) = nix::fcntl::open(path.as_c_str(), flags, Mode::empty()) else { continue };
            let stat = nix::sys::stat::fstat(&found)?;
            if stat.st_dev == *device && stat.st_ino == *inode {
                *place = found.into_raw_fd();
            }
        }
        Ok(())
    }

    /// Leaves the shell no capability in its namespaces, now or after any
    /// exec: the user namespace gives its first process all of them, and a
    /// host's root is root inside (the securebits keep exec from granting them
    /// again; the bounding set keeps file capabilities from it).
    fn drop_capabilities(&self) -> nix::Result<()> {
        let locked = libc::SECBIT_NOROOT
            | libc::SECBIT_NOROOT_LOCKED
            | libc::SECBIT_NO_SETUID_FIXUP
            | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
            | libc::SECBIT_KEEP_CAPS_LOCKED
            | libc::SECBIT_NO_CAP_AMBIENT_RAISE
            | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
        let header = CapabilityHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let none = [CapabilityData::default(); 2];
        // SAFETY: prctl and capset with plain values and stack memory.
        unsafe {
            Errno::result(libc::prctl(libc::PR_SET_SECUREBITS, locked as libc::c_ulong, 0, 0, 0))?;
            for capability in 0..=self.last_capability {
                Errno::result(libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0))?;
            }
            Errno::result(libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0))?;
            Errno::result(libc::syscall(libc::SYS_capset, &header as *const CapabilityHeader, none.as_ptr()))?;
        }
        Ok(())
    }

    /// The shell's mounts: private, its own `/proc`, the secrets covered,
    /// everything read-only but the writable trees.
    fn mount_the_sandbox(&mut self) -> nix::Result<()> {
        mount(None::<&CStr>, c"/", None::<&CStr>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&CStr>)?;
        let proc_flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        mount(Some(c"proc"), c"/proc", Some(c"proc"), proc_flags, None::<&CStr>)?;
        // No user namespace inside, where a process would hold every
        // capability again (in this user namespace, for good: /proc is
        // read-only from below).
        write_file(c"/proc/sys/user/max_user_namespaces", b"0").map_err(|_| Errno::last())?;
        let empty = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        for (secret, directory) in &self.secrets {
            match directory {
                true => mount(Some(c"tmpfs"), secret.as_c_str(), Some(c"tmpfs"), empty, None::<&CStr>)?,
                false => mount(Some(c"/dev/null"), secret.as_c_str(), None::<&CStr>, MsFlags::MS_BIND, None::<&CStr>)?,
            }
        }
        // Copies of the writable trees, taken while they are writable, go
        // back over them once everything else is read-only.
        for (place, copy) in self.places.iter_mut().filter(|(place, _)| *place >= 0) {
            let flags =
                libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | (libc::AT_EMPTY_PATH | libc::AT_RECURSIVE) as u32;
            // SAFETY: a system call on a live descriptor and a static empty path.
            let made = unsafe { libc::syscall(libc::SYS_open_tree, *place, c"".as_ptr(), flags) };
            *copy = Errno::result(made)? as RawFd;
        }
        let read_only =
            libc::mount_attr { attr_set: libc::MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
        // SAFETY: the attribute lives on the stack for the call; its size is given.
        Errno::result(unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                c"/".as_ptr(),
                libc::AT_RECURSIVE,
                &read_only as *const libc::mount_attr,
                std::mem::size_of::<libc::mount_attr>(),
            )
        })?;
        for (place, copy) in self.places.iter().filter(|(place, _)| *place >= 0) {
            // SAFETY: system calls on descriptors made above and static empty paths.
            Errno::result(unsafe {
                libc::syscall(
                    libc::SYS_move_mount,
                    *copy,
                    c"".as_ptr(),
                    *place,
                    c"".as_ptr(),
                    libc::MOVE_MOUNT_F_EMPTY_PATH | libc::MOVE_MOUNT_T_EMPTY_PATH,
                )
            })?;
        }
        // The working directory was entered before the writable copies were
        // mounted: enter it again by its path, through them.
        let mut cwd = [0u8; libc::PATH_MAX as usize];
        // SAFETY: the buffer is on the stack and its length is given.
        if unsafe { libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()) }.is_null() {
            return Err(Errno::last());
        }
        nix::unistd::chdir(CStr::from_bytes_until_nul(&cwd).map_err(|_| Errno::ENAMETOOLONG)?)
    }
}

/// The system's files and directories of secrets that exist, the SSH host
/// keys among them; `true` for a directory.
fn system_secrets() -> Vec<(CString, bool)> {
    let host_keys =
        std::fs::read_dir("/etc/ssh").into_iter().flatten().flatten().map(|entry| entry.path()).filter(|path| {
            path.file_name().is_some_and(|name| {
                name.to_string_lossy().starts_with("ssh_host_") && !name.to_string_lossy().ends_with(".pub")
            })
        });
    SYSTEM_SECRETS
        .iter()
        .map(PathBuf::from)
        .chain(host_keys)
        .filter_map(|path| {
            let metadata = std::fs::symlink_metadata(&path).ok()?;
            let path = CString::new(path.as_os_str().as_bytes()).ok()?;
            (metadata.is_dir() || metadata.is_file()).then_some((path, metadata.is_dir()))
        })
        .collect()
}

/// keyctl's operation joining a new session keyring (linux/keyctl.h).
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// `capset`'s header (linux/capability.h), version 3: two data sets.
#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: i32,
}

/// `capset`'s data (linux/capability.h): one 32-bit half of each set.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// What a confined spawn leaves to its call: the pipe the child reports a
/// failed step into, and the command's cgroup (a root host's), removed when
/// released.
pub(crate) struct Confined {
    failed_step: OwnedFd,
    cgroup: Option<ProcessCgroup>,
}

impl Confined {
    /// What to tell the model when the spawn failed with `error`.
    pub(crate) fn explain(&self, error: &io::Error) -> String {
        let mut byte = [0u8; 1];
        let step = match nix::unistd::read(&self.failed_step, &mut byte) {
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

    /// Removes the command's cgroup, once its processes are gone.
    pub(crate) async fn release(self) {
        if let Some(cgroup) = self.cgroup {
            cgroup.release().await;
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
            Err(Errno::EINTR) | Ok(_) => continue,
            Err(_) => break 127,
        }
    };
    // SAFETY: ends this process at once, running nothing of the host's.
    unsafe { libc::_exit(code) }
}

/// Writes `bytes` to the file at `path` (a file of /proc).
fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let file = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    nix::unistd::write(&file, bytes)?;
    Ok(())
}

/// Landlock's rules for `sandbox`: reads in the system's trees, its devices,
/// the readable roots and `extra_readable`, writes in `writable`, and, without
/// network, no TCP bind or connect. Requires Landlock ABI 3 (ABI 4 without
/// network); later rights (device ioctls, scopes) are added where the kernel
/// has them.
fn ruleset(sandbox: &Sandbox, writable: &[&Root], extra_readable: &[&Path]) -> Result<RulesetCreated, String> {
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
    let system: Vec<PathBuf> = SYSTEM_READABLE
        .iter()
        .chain(&SYSTEM_READABLE_DEVICES)
        .map(PathBuf::from)
        .chain(extra_readable.iter().map(|p| p.to_path_buf()))
        .collect();
    let write = AccessFs::from_all(ABI::V5) & !AccessFs::IoctlDev;
    ruleset
        .add_rules(path_beneath_rules(&system, AccessFs::from_read(ABI::V5)))
        .and_then(|r| r.add_rules(tree_rules(sandbox.readable.iter(), readable_access())))
        .and_then(|r| r.add_rules(path_beneath_rules(SYSTEM_WRITABLE_DEVICES, write)))
        .and_then(|r| r.add_rules(tree_rules(writable.iter().copied(), write)))
        .map_err(|e| missing("Landlock rules for the sandbox's paths", e))
}

/// Rules giving `access` beneath each of `roots`, as held open (a file's
/// rule keeps the rights a file can have).
fn tree_rules<'a>(
    roots: impl Iterator<Item = &'a Root>,
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<BorrowedFd<'a>>, landlock::RulesetError>> {
    roots.map(move |root| {
        let access = match root.handle.metadata() {
            Ok(metadata) if !metadata.is_dir() => access & AccessFs::from_file(ABI::V5),
            _ => access,
        };
        Ok(PathBeneath::new(root.handle.as_fd(), access))
    })
}

/// What a readable tree allows: reading, listing and running.
fn readable_access() -> BitFlags<AccessFs> {
    AccessFs::from_read(ABI::V5)
}

/// `fchmodat2` (Linux 6.6) and `setxattrat` (6.13), whose numbers are the
/// same on every architecture (not every target of the libc crate has them).
const SYS_FCHMODAT2: libc::c_long = 452;
const SYS_SETXATTRAT: libc::c_long = 463;

/// Two seccomp programs. The first refuses (EPERM), always: a setuid or setgid
/// bit in a mode (chmod, open, mknod and their kin), extended attributes
/// (file capabilities, ACLs), io_uring (whose operations go around this
/// filter) and the kernel's keyrings; and without network: sockets of any family but AF_UNIX, UNIX
/// sockets but stream and seqpacket ones (datagrams go to any path without
/// connecting), and connecting (a UNIX socket's path may lead to a service of
/// the host's). The second answers `openat2`, whose mode this filter cannot
/// read, ENOSYS, so that callers fall back to `openat`. On x86_64, a third
/// refuses x32 system calls.
fn seccomp_filters(network: bool) -> Result<Vec<BpfProgram>, String> {
    let missing = |e: &dyn std::fmt::Display| {
        format!("bash cannot run in the sandbox: no seccomp filter for this machine ({e}). The command did not run.")
    };
    let condition = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(|e| missing(&e))
    };
    let rule = |conditions: Vec<SeccompCondition>| SeccompRule::new(conditions).map_err(|e| missing(&e));
    let set_id_bits = |mode: u8| -> Result<Vec<SeccompRule>, String> {
        [libc::S_ISUID as u64, libc::S_ISGID as u64]
            .into_iter()
            .map(|bit| rule(vec![condition(mode, SeccompCmpOp::MaskedEq(bit), bit)?]))
            .collect()
    };
    let mut rules = BTreeMap::from([
        (libc::SYS_fchmod, set_id_bits(1)?),
        (libc::SYS_fchmodat, set_id_bits(2)?),
        (SYS_FCHMODAT2, set_id_bits(2)?),
        (libc::SYS_openat, set_id_bits(3)?),
        (libc::SYS_mknodat, set_id_bits(2)?),
        (libc::SYS_setxattr, vec![]),
        (libc::SYS_lsetxattr, vec![]),
        (libc::SYS_fsetxattr, vec![]),
        (SYS_SETXATTRAT, vec![]),
        (libc::SYS_io_uring_setup, vec![]),
        (libc::SYS_keyctl, vec![]),
        (libc::SYS_add_key, vec![]),
        (libc::SYS_request_key, vec![]),
    ]);
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        (libc::SYS_chmod, set_id_bits(1)?),
        (libc::SYS_open, set_id_bits(2)?),
        (libc::SYS_creat, set_id_bits(1)?),
        (libc::SYS_mknod, set_id_bits(1)?),
    ]);
    if !network {
        let unix = libc::AF_UNIX as u64;
        let unix_but_stream = || -> Result<Vec<SeccompRule>, String> {
            [libc::SOCK_DGRAM, libc::SOCK_RAW, libc::SOCK_RDM]
                .into_iter()
                .map(|kind| {
                    rule(vec![
                        condition(0, SeccompCmpOp::Eq, unix)?,
                        condition(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                    ])
                })
                .collect()
        };
        let mut socket = unix_but_stream()?;
        socket.push(rule(vec![condition(0, SeccompCmpOp::Ne, unix)?])?);
        rules.insert(libc::SYS_socket, socket);
        rules.insert(libc::SYS_socketpair, unix_but_stream()?);
        rules.insert(libc::SYS_connect, vec![]);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| missing(&e))?;
    let program = |rules, errno: i32| -> Result<BpfProgram, String> {
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch)
            .map_err(|e| missing(&e))?;
        filter.try_into().map_err(|e: seccompiler::BackendError| missing(&e))
    };
    let filters =
        vec![program(rules, libc::EPERM)?, program(BTreeMap::from([(libc::SYS_openat2, vec![])]), libc::ENOSYS)?];
    #[cfg(target_arch = "x86_64")]
    let filters = [filters, vec![x32_filter()]].concat();
    Ok(filters)
}

/// A program answering every x32 system call (a number with bit 30 set, made
/// with x86_64's architecture) EPERM: the rules above name x86_64's own
/// numbers, so without it a kernel with x32 enabled would let each of them
/// through under its x32 number. (32-bit system calls, of another
/// architecture, are killed by the first program's check.)
#[cfg(target_arch = "x86_64")]
fn x32_filter() -> BpfProgram {
    use seccompiler::sock_filter;
    let statement = |code: u32, k: u32| sock_filter { code: code as u16, jt: 0, jf: 0, k };
    vec![
        // The system call's number, the first field of seccomp_data.
        statement(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        sock_filter { code: (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16, jt: 0, jf: 1, k: 0x4000_0000 },
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        statement(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}
