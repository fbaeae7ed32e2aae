//! The working directory the built-in tools act in: path resolution, the opt-in
//! confinement, and the per-path locks that serialise writes to one file across
//! concurrent runs.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// Shared by every built-in tool of one agent.
pub(crate) struct Workspace {
    root: PathBuf,
    confine: bool,
    locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
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
        Ok(Workspace { root, confine, locks: Mutex::new(HashMap::new()) })
    }

    /// The working directory.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path argument: relative paths against the working directory,
    /// absolute and parent paths as given, unless the workspace is confined, in
    /// which case a path that leaves it (symlinks followed) is refused. The error
    /// text is for the model.
    pub(crate) fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        if path.trim().is_empty() {
            return Err("The path is empty.".to_owned());
        }
        let joined = normalize(&self.root.join(path));
        if self.confine && !real_path(&joined).starts_with(&self.root) {
            return Err(format!(
                "The path {path} is outside the working directory {}, and this agent may only use files inside it.",
                self.root.display()
            ));
        }
        Ok(joined)
    }

    /// Takes the write locks of `paths` (blocking; call it from the blocking
    /// pool). edit, write and apply_patch hold them while they read, change and
    /// write files. Locks are keyed by real path and taken once each, in one order,
    /// so two names for one file cannot deadlock and concurrent runs cannot either.
    pub(crate) fn lock<'a>(&self, paths: impl IntoIterator<Item = &'a Path>) -> Vec<tokio::sync::OwnedMutexGuard<()>> {
        let mut keys: Vec<PathBuf> = paths.into_iter().map(real_path).collect();
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

/// The real location of `path`: symlinks of its deepest existing ancestor
/// resolved, the rest appended.
fn real_path(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
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
        assert_eq!(workspace.resolve("a/b.txt").unwrap(), root.join("a/b.txt"));
        assert_eq!(workspace.resolve("../x").unwrap(), root.parent().unwrap().join("x"));
        assert_eq!(workspace.resolve("/etc/hosts").unwrap(), PathBuf::from("/etc/hosts"));
    }

    #[test]
    fn confinement_refuses_paths_outside_even_through_symlinks() {
        let (dir, workspace) = workspace(true);
        assert!(workspace.resolve("inside/new.txt").is_ok());
        assert!(workspace.resolve("../outside").unwrap_err().contains("outside the working directory"));
        assert!(workspace.resolve("/etc/hosts").is_err());
        std::os::unix::fs::symlink("/etc", dir.path().join("escape")).unwrap();
        assert!(workspace.resolve("escape/hosts").is_err());
    }

    #[test]
    fn two_names_for_one_file_take_one_lock() {
        let (dir, workspace) = workspace(false);
        std::fs::write(dir.path().join("real.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real.txt", dir.path().join("alias.txt")).unwrap();
        let real = workspace.resolve("real.txt").unwrap();
        let alias = workspace.resolve("alias.txt").unwrap();
        let other = workspace.resolve("sub/../real.txt").unwrap();
        assert_eq!(workspace.lock([real.as_path(), alias.as_path(), other.as_path()]).len(), 1);
    }
}
