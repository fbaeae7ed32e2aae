//! The working directory the built-in tools act in: path resolution, file access
//! that cannot leave it when confined, and the per-path locks that serialise writes
//! to one file across concurrent runs.
//!
//! Every file operation goes through one directory handle, `base`. When confined,
//! `base` is the working directory and each operation resolves its path beneath it
//! in the same step as it acts (`openat2` with `RESOLVE_BENEATH` on Linux, checked
//! component by component elsewhere; see `cap-std`): a symlink that leads out,
//! dangling or not, and a link swapped between two operations both end in an error,
//! never in a file outside. Unconfined, `base` is `/` and paths are made real
//! (symlinks resolved) before each operation.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, FileType, Metadata, OpenOptions, OpenOptionsExt};

use crate::error::{Error, Result};

/// Largest file that edit and apply_patch load, and that read decodes as an image.
pub(crate) const MAX_LOADED_FILE: u64 = 64 << 20;

/// Shared by every built-in tool of one agent.
pub(crate) struct Workspace {
    root: PathBuf,
    confine: bool,
    /// The working directory when confined, else `/`.
    base: Dir,
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// A path argument resolved against the workspace.
#[derive(Debug, Clone)]
pub(crate) struct WorkPath {
    /// As the model wrote it, for messages.
    pub(crate) shown: String,
    /// Absolute, with `.` and `..` resolved lexically.
    pub(crate) absolute: PathBuf,
    /// The same path relative to the workspace's base directory (`.` for the base).
    relative: PathBuf,
    /// Whether the text can only name a directory (it ends in `/`, `/.` or `/..`).
    directory_only: bool,
}

impl WorkPath {
    /// `Err` (for the model) when the path can only name a directory.
    pub(crate) fn file(&self) -> Result<&Self, String> {
        match self.directory_only {
            true => Err(format!("{} names a directory, not a file.", self.shown)),
            false => Ok(self),
        }
    }
}

impl Workspace {
    /// A workspace at `directory` (relative to the process directory; empty means
    /// the process directory), captured now.
    pub(crate) fn new(directory: Option<&str>, confine: bool) -> Result<Self> {
        let current = std::env::current_dir()
            .map_err(|e| Error::invalid_arg(format!("builtin_tools: the process directory is unusable: {e}")))?;
        let root = match directory.filter(|d| !d.is_empty()) {
            Some(directory) => current.join(directory),
            None => current,
        };
        let root = root
            .canonicalize()
            .map_err(|e| Error::invalid_arg(format!("builtin_tools.working_directory {}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(Error::invalid_arg(format!(
                "builtin_tools.working_directory {} is not a directory",
                root.display()
            )));
        }
        let base_path = if confine { root.as_path() } else { Path::new("/") };
        let base = Dir::open_ambient_dir(base_path, ambient_authority())
            .map_err(|e| Error::invalid_arg(format!("builtin_tools.working_directory {}: {e}", root.display())))?;
        Ok(Workspace { root, confine, base, locks: Mutex::new(HashMap::new()) })
    }

    /// The working directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The directory handle every operation goes through.
    pub(crate) fn base(&self) -> &Dir {
        &self.base
    }

    /// Resolves a path argument: relative paths against the working directory,
    /// absolute and parent paths as given, unless the workspace is confined, in
    /// which case a path that leaves it is refused here (by its text) or when it is
    /// used (through a symlink). The error text is for the model.
    pub(crate) fn resolve(&self, path: &str) -> Result<WorkPath, String> {
        if path.trim().is_empty() {
            return Err("The path is empty.".to_owned());
        }
        let absolute = normalize(&self.root.join(path));
        let base = if self.confine { self.root.as_path() } else { Path::new("/") };
        let relative = match absolute.strip_prefix(base) {
            Ok(relative) if relative.as_os_str().is_empty() => PathBuf::from("."),
            Ok(relative) => relative.to_path_buf(),
            Err(_) => return Err(self.outside(path)),
        };
        let directory_only = [".", ".."].contains(&path) || ["/", "/.", "/.."].iter().any(|end| path.ends_with(end));
        Ok(WorkPath { shown: path.to_owned(), absolute, relative, directory_only })
    }

    fn outside(&self, shown: &str) -> String {
        format!(
            "The path {shown} leads outside the working directory {}, and this agent may only use files inside it.",
            self.root.display()
        )
    }

    /// The model-facing text of an I/O error met while `doing` (`"read"`) `path`.
    pub(crate) fn explain(&self, doing: &str, path: &WorkPath, error: &io::Error) -> String {
        // cap-std reports an escape as PermissionDenied without an OS error code.
        if self.confine && error.kind() == io::ErrorKind::PermissionDenied && error.raw_os_error().is_none() {
            return self.outside(&path.shown);
        }
        format!("Could not {doing} {}: {error}.", path.shown)
    }

    /// Where `path` really is, relative to the base: symlinks of the part that
    /// exists resolved (the last component's too when `follow_last`), the rest as
    /// written. Confined, the answer is always beneath the working directory.
    pub(crate) fn locate(&self, path: &WorkPath, follow_last: bool) -> io::Result<PathBuf> {
        let relative = path.relative.as_path();
        if !follow_last {
            if let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) {
                return Ok(match parent.as_os_str().is_empty() {
                    true => PathBuf::from(name),
                    false => self.real(parent)?.join(name),
                });
            }
        }
        self.real(relative)
    }

    /// `relative` with the symlinks of its deepest existing ancestor resolved.
    fn real(&self, relative: &Path) -> io::Result<PathBuf> {
        let mut existing = relative.to_path_buf();
        let mut rest = Vec::new();
        loop {
            match self.canonical(&existing) {
                Ok(real) => {
                    let real = if real == Path::new(".") { PathBuf::new() } else { real };
                    let real = rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part));
                    return Ok(if real.as_os_str().is_empty() { PathBuf::from(".") } else { real });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    existing = if parent.as_os_str().is_empty() { PathBuf::from(".") } else { parent.to_path_buf() };
                }
                _ => return Err(io::ErrorKind::NotFound.into()),
            }
        }
    }

    fn canonical(&self, relative: &Path) -> io::Result<PathBuf> {
        if self.confine {
            return self.base.canonicalize(relative);
        }
        let real = Path::new("/").join(relative).canonicalize()?;
        Ok(real.strip_prefix("/").map(Path::to_path_buf).unwrap_or_default())
    }

    /// Metadata of `path` itself: a symlink (dangling or not) is not followed.
    pub(crate) fn symlink_metadata(&self, path: &WorkPath) -> io::Result<Metadata> {
        let real = self.locate(path, false)?;
        self.base.symlink_metadata(real)
    }

    /// Metadata of `path`, symlinks followed.
    pub(crate) fn metadata(&self, path: &WorkPath) -> io::Result<Metadata> {
        let real = self.locate(path, true)?;
        self.base.metadata(real)
    }

    /// Opens `path` for reading if it is a regular file. A directory, FIFO, device
    /// or socket is refused without blocking. The error text is for the model.
    pub(crate) fn open_file(&self, path: &WorkPath) -> Result<(File, std::fs::Metadata), String> {
        let opened = self.locate(path.file()?, true).and_then(|real| {
            let mut options = OpenOptions::new();
            options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
            self.base.open_with(real, &options)
        });
        let file = opened.map_err(|e| self.explain("read", path, &e))?.into_std();
        let metadata = file.metadata().map_err(|e| self.explain("read", path, &e))?;
        if metadata.is_dir() {
            return Err(format!("{} is a directory; list it with list_files or bash.", path.shown));
        }
        if !metadata.is_file() {
            return Err(format!(
                "{} is not a regular file (it is a FIFO, socket or device), so it was not opened.",
                path.shown
            ));
        }
        Ok((file, metadata))
    }

    /// The whole of a regular file of at most [`MAX_LOADED_FILE`] bytes.
    pub(crate) fn load(&self, path: &WorkPath) -> Result<Vec<u8>, String> {
        let (file, metadata) = self.open_file(path)?;
        if metadata.len() > MAX_LOADED_FILE {
            return Err(format!(
                "{} has {} bytes, more than the {MAX_LOADED_FILE} this tool loads; change it with bash.",
                path.shown,
                metadata.len()
            ));
        }
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        file.take(MAX_LOADED_FILE + 1).read_to_end(&mut bytes).map_err(|e| self.explain("read", path, &e))?;
        Ok(bytes)
    }

    /// The names and kinds (symlinks not followed) of the entries of the
    /// directory at `located` (a path [`Workspace::locate`] gave, or one below it),
    /// sorted by name.
    pub(crate) fn entries(&self, located: &Path) -> io::Result<Vec<(OsString, FileType)>> {
        let mut entries = Vec::new();
        for entry in self.base.read_dir(located)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            entries.push((entry.file_name(), kind));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(entries)
    }

    /// Takes the write locks of `paths` (blocking; call it from the blocking
    /// pool). edit, write and apply_patch hold them while they read, change and
    /// write files. Locks are keyed by real path and taken once each, in one order,
    /// so two names for one file cannot deadlock and concurrent runs cannot either.
    pub(crate) fn lock<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a WorkPath>,
    ) -> Vec<tokio::sync::OwnedMutexGuard<()>> {
        let mut keys: Vec<PathBuf> =
            paths.into_iter().map(|path| self.locate(path, true).unwrap_or_else(|_| path.absolute.clone())).collect();
        keys.sort();
        keys.dedup();
        let locks: Vec<_> = {
            let mut table = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            keys.into_iter().map(|key| table.entry(key).or_default().clone()).collect()
        };
        locks.into_iter().map(|lock| lock.blocking_lock_owned()).collect()
    }
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(confine: bool) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(Some(dir.path().to_str().unwrap()), confine).unwrap();
        (dir, workspace)
    }

    #[test]
    fn relative_absolute_and_parent_paths_resolve() {
        let (dir, workspace) = workspace(false);
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(workspace.resolve("a/b.txt").unwrap().absolute, root.join("a/b.txt"));
        assert_eq!(workspace.resolve("../x").unwrap().absolute, root.parent().unwrap().join("x"));
        assert_eq!(workspace.resolve("/etc/hosts").unwrap().absolute, PathBuf::from("/etc/hosts"));
        assert!(workspace.open_file(&workspace.resolve("/etc/hosts").unwrap()).is_ok());
    }

    #[test]
    fn confinement_refuses_paths_outside_even_through_symlinks() {
        let (dir, workspace) = workspace(true);
        assert!(workspace.resolve("inside/new.txt").is_ok());
        assert!(workspace.resolve("../outside").unwrap_err().contains("outside the working directory"));
        assert!(workspace.resolve("/etc/hosts").is_err());
        std::os::unix::fs::symlink("/etc", dir.path().join("escape")).unwrap();
        let through_link = workspace.resolve("escape/hosts").unwrap();
        assert!(workspace.open_file(&through_link).unwrap_err().contains("outside the working directory"));
        assert!(workspace.locate(&through_link, true).is_err());
    }

    #[test]
    fn locate_follows_the_last_link_only_when_asked() {
        let (dir, workspace) = workspace(true);
        std::fs::write(dir.path().join("real.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("alias.txt")).unwrap();
        let alias = workspace.resolve("alias.txt").unwrap();
        assert_eq!(workspace.locate(&alias, true).unwrap(), PathBuf::from("real.txt"));
        assert_eq!(workspace.locate(&alias, false).unwrap(), PathBuf::from("alias.txt"));
        let missing = workspace.resolve("new/dir/file.txt").unwrap();
        assert_eq!(workspace.locate(&missing, true).unwrap(), PathBuf::from("new/dir/file.txt"));
    }

    #[test]
    fn two_names_for_one_file_take_one_lock() {
        let (dir, workspace) = workspace(false);
        std::fs::write(dir.path().join("real.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("alias.txt")).unwrap();
        let real = workspace.resolve("real.txt").unwrap();
        let alias = workspace.resolve("alias.txt").unwrap();
        let other = workspace.resolve("sub/../real.txt").unwrap();
        assert_eq!(workspace.lock([&real, &alias, &other]).len(), 1);
    }
}
