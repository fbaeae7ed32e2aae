//! Where a cassette's new exchanges go: one writer per file in the process, so
//! agents recording to one path add to one cassette instead of writing over
//! each other, and the file is opened when the first exchange is written (a
//! build that fails leaves it as it was).

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use super::format::HEADER;

/// The writers of the process, by file.
static WRITERS: Mutex<Vec<Weak<Writer>>> = Mutex::new(Vec::new());

/// Appends lines to one cassette file. Shared by the cassettes of every agent
/// that records to it; any thread.
pub(super) struct Writer {
    path: PathBuf,
    state: Mutex<State>,
}

enum State {
    /// Nothing written yet: the file is replaced (`record`) or added to.
    Unopened {
        replace: bool,
    },
    Open(File),
    /// Why writing stopped.
    Failed(String),
}

impl Writer {
    /// The writer of `path`: the one a cassette of the process already writes
    /// with, or a new one that replaces the file (`replace`) or adds to it.
    pub(super) fn of(path: &Path, replace: bool) -> Arc<Writer> {
        let path = canonical(path);
        let mut writers = WRITERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        writers.retain(|writer| writer.strong_count() > 0);
        if let Some(writer) = writers.iter().filter_map(Weak::upgrade).find(|writer| writer.path == path) {
            return writer;
        }
        let writer = Arc::new(Writer { path, state: Mutex::new(State::Unopened { replace }) });
        writers.push(Arc::downgrade(&writer));
        writer
    }

    /// Appends `line` and a line break, in one write; after a failure, nothing.
    pub(super) fn append(&self, line: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let State::Unopened { replace } = *state {
            *state = match self.open(replace) {
                Ok(file) => State::Open(file),
                Err(e) => self.failed(e.to_string()),
            };
        }
        if let State::Open(file) = &mut *state {
            let mut text = Vec::with_capacity(line.len() + 1);
            text.extend_from_slice(line);
            text.push(b'\n');
            if let Err(e) = file.write_all(&text) {
                *state = self.failed(e.to_string());
            }
        }
    }

    /// Stops writing: what was to be written could not be made.
    pub(super) fn append_failed(&self, why: &str) {
        *self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = self.failed(why.to_owned());
    }

    /// The state after a failure: writing stops, and the host's logger hears why.
    fn failed(&self, why: String) -> State {
        crate::log::log!(
            Error,
            "ferrule::recording",
            format!("the cassette {} cannot be written, so nothing more is recorded: {why}", self.path.display()),
            "path" => self.path.display().to_string(),
        );
        State::Failed(why)
    }

    /// Why writing failed, once it has.
    pub(super) fn failure(&self) -> Option<String> {
        match &*self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) {
            State::Failed(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// The file, opened to append (each line is one write, so lines of two
    /// processes would not cut into each other): created anew with the header
    /// line, or the existing one ending with a line break (a last line without
    /// one is cut off when it is not JSON: a process ended while writing it).
    fn open(&self, replace: bool) -> std::io::Result<File> {
        if !replace {
            match File::options().read(true).append(true).open(&self.path) {
                Ok(mut file) => {
                    let mut text = Vec::new();
                    file.read_to_end(&mut text)?;
                    let start = text.iter().rposition(|&byte| byte == b'\n').map_or(0, |at| at + 1);
                    let last = &text[start..];
                    let keep = last.is_empty() || serde_json::from_slice::<serde::de::IgnoredAny>(last).is_ok();
                    if !keep {
                        file.set_len(start as u64)?;
                    } else if !last.is_empty() {
                        file.write_all(b"\n")?;
                    }
                    // Nothing is left of the file: it starts anew.
                    if start == 0 && (last.is_empty() || !keep) {
                        writeln!(file, "{HEADER}")?;
                    }
                    return Ok(file);
                }
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                Err(_) => {}
            }
        }
        let mut file = File::options().create(true).append(true).open(&self.path)?;
        file.set_len(0)?;
        writeln!(file, "{HEADER}")?;
        Ok(file)
    }
}

/// `path` made absolute, its directory's links and `..` resolved when it
/// exists: one file, one name.
fn canonical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    match (absolute.parent().map(std::fs::canonicalize), absolute.file_name()) {
        (Some(Ok(directory)), Some(name)) => directory.join(name),
        _ => absolute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_touched_only_by_the_first_line_and_shared_by_its_writers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let path = dir.path().join("c.jsonl");
        std::fs::write(&path, "kept until written\n").unwrap();
        let first = Writer::of(&path, true);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "kept until written\n");
        let second = Writer::of(&dir.path().join("sub").join("..").join("c.jsonl"), false);
        first.append(b"{\"a\":1}");
        second.append(b"{\"b\":2}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{HEADER}\n{{\"a\":1}}\n{{\"b\":2}}\n"));
    }

    #[test]
    fn adding_to_a_file_cuts_a_line_cut_short_and_keeps_a_whole_one() {
        let dir = tempfile::tempdir().unwrap();
        let cut = dir.path().join("cut.jsonl");
        std::fs::write(&cut, format!("{HEADER}\n{{\"a\":1}}\n{{\"b\":")).unwrap();
        Writer::of(&cut, false).append(b"{\"c\":3}");
        assert_eq!(std::fs::read_to_string(&cut).unwrap(), format!("{HEADER}\n{{\"a\":1}}\n{{\"c\":3}}\n"));
        let whole = dir.path().join("whole.jsonl");
        std::fs::write(&whole, format!("{HEADER}\n{{\"a\":1}}")).unwrap();
        Writer::of(&whole, false).append(b"{\"c\":3}");
        assert_eq!(std::fs::read_to_string(&whole).unwrap(), format!("{HEADER}\n{{\"a\":1}}\n{{\"c\":3}}\n"));
        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        Writer::of(&empty, false).append(b"{}");
        assert_eq!(std::fs::read_to_string(&empty).unwrap(), format!("{HEADER}\n{{}}\n"));
    }
}
