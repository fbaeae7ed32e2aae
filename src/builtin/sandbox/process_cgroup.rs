//! A bound on the processes of one sandboxed command whose host runs as root.
//!
//! The kernel bounds no process count of root's (`RLIMIT_NPROC` does not apply
//! to it), so a root host gives each command a cgroup of its own under the
//! `pids` controller, with `pids.max` set, which the command's first process
//! joins before anything else (every process it starts is then counted), and
//! in a cgroup namespace of its own it can name no other. The cgroup is made
//! under the host's own (cgroup v1's `pids` hierarchy, or v2's when the host's
//! cgroup delegates `pids` to its children) and removed when the call ends,
//! or, when its processes are still dying then (a cancelled call), moments
//! later; those a host killed before it could left are removed by the next.
//! Where neither hierarchy is at hand, the command runs without the bound.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A cgroup of one command's, removed when released (or dropped).
pub(crate) struct ProcessCgroup {
    directory: PathBuf,
    /// Its `cgroup.procs`, which the command's first process writes itself into.
    procs: CString,
}

impl ProcessCgroup {
    /// A new cgroup allowing at most `max` processes, or `None` when this
    /// system gives no `pids` controller the host may make cgroups under.
    pub(crate) fn make(max: u64) -> Option<Self> {
        static MADE: AtomicU64 = AtomicU64::new(0);
        let parent = pids_cgroup()?;
        remove_abandoned(&parent);
        let name = format!("{PREFIX}{}-{}", std::process::id(), MADE.fetch_add(1, Ordering::Relaxed));
        let directory = parent.join(name);
        std::fs::create_dir(&directory).ok()?;
        let cgroup = ProcessCgroup {
            procs: CString::new(directory.join("cgroup.procs").as_os_str().as_bytes()).ok()?,
            directory,
        };
        std::fs::write(cgroup.directory.join("pids.max"), max.to_string()).ok()?;
        Some(cgroup)
    }

    /// The file the command's first process writes `0` into to join.
    pub(crate) fn procs(&self) -> &CString {
        &self.procs
    }

    /// Removes the cgroup once its processes are gone (they die with the
    /// command's PID namespace, moments after the shell), waiting up to 2 s.
    pub(crate) async fn release(self) {
        remove_when_empty(self.into_directory()).await;
    }

    /// The directory, which this cgroup no longer removes when dropped.
    fn into_directory(mut self) -> PathBuf {
        std::mem::take(&mut self.directory)
    }
}

impl Drop for ProcessCgroup {
    /// Removes the cgroup now, or once its processes are gone if a runtime
    /// is at hand to wait (a call dropped while its command was killed).
    fn drop(&mut self) {
        let directory = std::mem::take(&mut self.directory);
        if directory.as_os_str().is_empty() || std::fs::remove_dir(&directory).is_ok() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(remove_when_empty(directory));
        }
    }
}

/// The names of the cgroups made here: the prefix, then the process id.
const PREFIX: &str = "ferrule-bash-";

/// Removes the cgroup `directory` once its processes are gone, waiting up to 2 s.
async fn remove_when_empty(directory: PathBuf) {
    for _ in 0..200 {
        if std::fs::remove_dir(&directory).is_ok() || !directory.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Removes the empty cgroups under `parent` of processes that no longer run
/// (a host killed before it removed them).
fn remove_abandoned(parent: &Path) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let owner = name.to_str().and_then(|name| name.strip_prefix(PREFIX)).and_then(|rest| rest.split('-').next());
        if owner.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// The host's cgroup in a hierarchy with the `pids` controller that it may
/// make children in: cgroup v1's `pids`, or v2's when `pids` is delegated.
fn pids_cgroup() -> Option<PathBuf> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        if controllers.split(',').any(|c| c == "pids") {
            let pids = |kind: &str, options: &str| kind == "cgroup" && options.split(',').any(|o| o == "pids");
            if let Some((mount, root)) = mount_point(&mounts, pids) {
                return Some(mount.join(Path::new(path).strip_prefix(root).ok()?));
            }
        } else if controllers.is_empty() {
            let (mount, root) = mount_point(&mounts, |kind, _| kind == "cgroup2")?;
            let own = mount.join(Path::new(path).strip_prefix(root).ok()?);
            let delegated = std::fs::read_to_string(own.join("cgroup.subtree_control")).ok()?;
            if delegated.split_whitespace().any(|c| c == "pids") {
                return Some(own);
            }
        }
    }
    None
}

/// The mount point of the first mount of `/proc/self/mountinfo`'s `mounts`
/// whose file system type and super options `wanted` accepts, and the path in
/// its hierarchy mounted there (a container's cgroup, say, rather than the
/// hierarchy's root).
fn mount_point(mounts: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<(&Path, &Path)> {
    mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut left = left.split(' ').skip(3);
        let (root, point) = (left.next()?, left.next()?);
        let mut right = right.split(' ');
        let (kind, _, options) = (right.next()?, right.next()?, right.next()?);
        wanted(kind, options).then_some((Path::new(point), Path::new(root)))
    })
}
