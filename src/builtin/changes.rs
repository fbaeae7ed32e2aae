//! File changes made together or not at all.
//!
//! edit, write and apply_patch say what they want written and removed;
//! [`Changes::commit`] then works in two phases. Staging writes every new content
//! to a temporary file beside its target (creating missing directories), so a full
//! disk or a file in the way of a directory fails before anything visible changed.
//! Committing puts the staged files in place by rename (each replacement atomic),
//! then removes what is removed, so a move's source goes only once its destination
//! exists. The originals are set aside, not lost, until the end: on any failure, and
//! when the call is cancelled or timed out (checked before every step), the steps
//! taken are undone in reverse and the directories made are removed again.
//!
//! A replaced file keeps its permissions and, where the process may set it, its
//! owner; it becomes a new file, so other hard links to it keep the old content. A
//! symlink is written through (its target changes); a dangling symlink is replaced.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::fs::{fchown, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt};

use super::workspace::{WorkPath, Workspace};
use super::Stop;

/// What a call will write and remove.
pub(crate) struct Changes<'a> {
    workspace: &'a Workspace,
    writes: Vec<(WorkPath, Vec<u8>)>,
    removals: Vec<WorkPath>,
}

impl<'a> Changes<'a> {
    pub(crate) fn new(workspace: &'a Workspace) -> Self {
        Changes { workspace, writes: Vec::new(), removals: Vec::new() }
    }

    /// Writes `content` to `path`, creating it and its missing directories.
    pub(crate) fn write(&mut self, path: WorkPath, content: Vec<u8>) {
        self.writes.push((path, content));
    }

    /// Removes the file at `path` (a symlink itself, not its target).
    pub(crate) fn remove(&mut self, path: WorkPath) {
        self.removals.push(path);
    }

    /// Makes every change, or none; the error text is for the model.
    pub(crate) fn commit(self, stop: &Stop) -> Result<(), String> {
        let mut journal = Journal { base: self.workspace.base(), steps: Vec::new() };
        match self.apply(&mut journal, stop) {
            Ok(()) => {
                journal.finish();
                Ok(())
            }
            Err(error) => match journal.undo() {
                None => Err(error),
                Some(left) => Err(format!("{error} Undoing the earlier steps failed too: {left}")),
            },
        }
    }

    fn apply(&self, journal: &mut Journal<'_>, stop: &Stop) -> Result<(), String> {
        let workspace = self.workspace;
        let mut placements = Vec::with_capacity(self.writes.len());
        let mut written = HashSet::with_capacity(self.writes.len());
        for (path, content) in &self.writes {
            stop.check()?;
            let explain = |e: io::Error| workspace.explain("write", path, &e);
            let target = workspace.locate(path.file()?, true).map_err(explain)?;
            if !written.insert(target.clone()) {
                return Err(format!("Could not write {}: another name for it is written too.", path.shown));
            }
            let existing = match journal.base.symlink_metadata(&target) {
                Ok(metadata) if metadata.is_dir() => {
                    return Err(format!("Could not write {}: a directory is in the way.", path.shown))
                }
                Ok(metadata) => Some(metadata),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(explain(e)),
            };
            let (directory, name) = split(&target);
            journal.create_directories(directory).map_err(explain)?;
            // Only a file passes on its mode and owner; a dangling link's are not a file's.
            let file = existing.as_ref().filter(|metadata| metadata.is_file());
            let staged = journal.stage(directory, name, content, file).map_err(explain)?;
            placements.push((path, staged, target, existing.is_some()));
        }
        let mut removals = Vec::with_capacity(self.removals.len());
        for path in &self.removals {
            let explain = |e: io::Error| workspace.explain("delete", path, &e);
            let target = workspace.locate(path.file()?, false).map_err(explain)?;
            if written.contains(&target) {
                return Err(format!("Could not delete {}: it is also written.", path.shown));
            }
            if journal.base.symlink_metadata(&target).map_err(explain)?.is_dir() {
                return Err(format!("Could not delete {}: it is a directory.", path.shown));
            }
            removals.push((path, target));
        }
        for (path, staged, target, replaces) in placements {
            stop.check()?;
            let explain = |e: io::Error| workspace.explain("write", path, &e);
            if replaces {
                journal.set_aside(&target, true).map_err(explain)?;
            }
            journal.place(staged, target).map_err(explain)?;
        }
        for (path, target) in removals {
            stop.check()?;
            journal.set_aside(&target, false).map_err(|e| workspace.explain("delete", path, &e))?;
        }
        Ok(())
    }
}

/// The directory and file name of a located path.
fn split(target: &Path) -> (&Path, &OsStr) {
    let name = target.file_name().unwrap_or(OsStr::new("."));
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => (parent, name),
        _ => (Path::new("."), name),
    }
}

/// A step taken, and how to take it back.
enum Step {
    /// A directory that did not exist.
    CreatedDirectory(PathBuf),
    /// A staged file, not yet in place.
    Staged(PathBuf),
    /// An original kept under `backup` (a hard link to it, or the file moved).
    SetAside { original: PathBuf, backup: PathBuf },
    /// A staged file now at `target`.
    Placed(PathBuf),
}

/// The steps of one commit, in order.
struct Journal<'a> {
    base: &'a Dir,
    steps: Vec<Step>,
}

impl Journal<'_> {
    /// Creates the missing directories of `directory`, outermost first.
    fn create_directories(&mut self, directory: &Path) -> io::Result<()> {
        let missing: Vec<&Path> = directory
            .ancestors()
            .filter(|d| !d.as_os_str().is_empty() && *d != Path::new("."))
            .take_while(|d| matches!(self.base.symlink_metadata(d), Err(e) if e.kind() == io::ErrorKind::NotFound))
            .collect();
        for directory in missing.into_iter().rev() {
            self.base.create_dir(directory)?;
            self.steps.push(Step::CreatedDirectory(directory.to_path_buf()));
        }
        Ok(())
    }

    /// Writes `content` to a new temporary file in `directory`, with the
    /// permissions and owner of the file it will replace.
    fn stage(
        &mut self,
        directory: &Path,
        name: &OsStr,
        content: &[u8],
        replaces: Option<&Metadata>,
    ) -> io::Result<PathBuf> {
        let staged = directory.join(side_name(name, "new"));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(if replaces.is_some() { 0o600 } else { 0o666 });
        let mut file = self.base.open_with(&staged, &options)?.into_std();
        self.steps.push(Step::Staged(staged.clone()));
        if let Some(original) = replaces {
            let fresh = file.metadata()?;
            if (original.uid(), original.gid()) != (fresh.uid(), fresh.gid()) {
                // Only a privileged process may give a file away; others keep theirs.
                let _ = fchown(&file, Some(original.uid()), Some(original.gid()));
            }
            // Without the setuid and setgid bits, as the kernel clears them on
            // a write: new content never inherits a privilege of the old.
            file.set_permissions(std::fs::Permissions::from_mode(original.mode() & 0o1777))?;
        }
        file.write_all(content)?;
        Ok(staged)
    }

    /// Keeps the file at `original` under a side name: as a second link when
    /// `keep` (the file is about to be replaced atomically), else moved there.
    fn set_aside(&mut self, original: &Path, keep: bool) -> io::Result<()> {
        let (directory, name) = split(original);
        let backup = directory.join(side_name(name, "old"));
        let linked = keep && self.base.hard_link(original, self.base, &backup).is_ok();
        if !linked {
            self.base.rename(original, self.base, &backup)?;
        }
        self.steps.push(Step::SetAside { original: original.to_path_buf(), backup });
        Ok(())
    }

    fn place(&mut self, staged: PathBuf, target: PathBuf) -> io::Result<()> {
        // The staged step stays: undoing it finds nothing there.
        self.base.rename(&staged, self.base, &target)?;
        self.steps.push(Step::Placed(target));
        Ok(())
    }

    /// After success: drops the originals set aside.
    fn finish(self) {
        for step in self.steps {
            if let Step::SetAside { backup, .. } = step {
                let _ = self.base.remove_file(backup);
            }
        }
    }

    /// After a failure: takes every step back, newest first. Returns what could
    /// not be restored, if anything.
    fn undo(self) -> Option<String> {
        let mut failures = Vec::new();
        for step in self.steps.into_iter().rev() {
            let undone = match &step {
                Step::Placed(target) => self.base.remove_file(target),
                Step::SetAside { original, backup } => {
                    // Renaming one link of a file onto another does nothing; the
                    // second link then goes.
                    let restored = self.base.rename(backup, self.base, original);
                    let _ = self.base.remove_file(backup);
                    restored
                }
                Step::Staged(staged) => self.base.remove_file(staged),
                Step::CreatedDirectory(directory) => self.base.remove_dir(directory),
            };
            if let (Err(e), Step::SetAside { original, backup }) = (undone, &step) {
                failures.push(format!("{} is kept as {} ({e})", original.display(), backup.display()));
            }
        }
        (!failures.is_empty()).then(|| failures.join("; "))
    }
}

/// A hidden name beside `name` for a staged (`new`) or set-aside (`old`) file.
fn side_name(name: &OsStr, role: &str) -> String {
    let name = name.to_string_lossy();
    let mut keep = name.len().min(200);
    while !name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!(".{}.{:08x}.ferrule-{role}", &name[..keep], fastrand::u32(..))
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old").unwrap();
        std::fs::write(dir.path().join("b.txt"), "bee").unwrap();
        let workspace = Workspace::new(Some(dir.path().to_str().unwrap()), true).unwrap();
        (dir, workspace)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    #[test]
    fn every_kind_of_step_is_undone() {
        let (dir, workspace) = workspace();
        let mut journal = Journal { base: workspace.base(), steps: Vec::new() };
        journal.create_directories(Path::new("x/y")).unwrap();
        journal.stage(Path::new("x/y"), OsStr::new("new.txt"), b"new", None).unwrap();
        let original = workspace.base().symlink_metadata("a.txt").unwrap();
        let staged = journal.stage(Path::new("."), OsStr::new("a.txt"), b"changed", Some(&original)).unwrap();
        journal.set_aside(Path::new("a.txt"), true).unwrap();
        journal.place(staged, PathBuf::from("a.txt")).unwrap();
        journal.set_aside(Path::new("b.txt"), false).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "changed");
        assert!(!dir.path().join("b.txt").exists());
        assert_eq!(journal.undo(), None);
        assert_eq!(names(dir.path()), ["a.txt", "b.txt"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "old");
        assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "bee");
    }

    #[test]
    fn a_cancelled_call_commits_nothing() {
        let (dir, workspace) = workspace();
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        let mut changes = Changes::new(&workspace);
        changes.write(workspace.resolve("a.txt").unwrap(), b"changed".to_vec());
        changes.remove(workspace.resolve("b.txt").unwrap());
        assert!(changes.commit(&Stop(cancelled)).unwrap_err().contains("cancelled"));
        assert_eq!(names(dir.path()), ["a.txt", "b.txt"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "old");
    }

    #[test]
    fn a_commit_writes_and_removes_and_leaves_nothing_else() {
        let (dir, workspace) = workspace();
        let mut changes = Changes::new(&workspace);
        changes.write(workspace.resolve("a.txt").unwrap(), b"changed".to_vec());
        changes.write(workspace.resolve("deep/c.txt").unwrap(), b"c".to_vec());
        changes.remove(workspace.resolve("b.txt").unwrap());
        changes.commit(&Stop::never()).unwrap();
        assert_eq!(names(dir.path()), ["a.txt", "deep"]);
        assert_eq!(names(&dir.path().join("deep")), ["c.txt"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "changed");
    }
}
