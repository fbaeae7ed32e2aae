//! `apply_patch {input}`: the Codex patch format.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path            then lines starting with +
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path         optional
//! @@ anchor                     optional; several narrow the search in turn
//!  context / -removed / +added
//! *** End of File               optional: the chunk ends the file
//! *** End Patch
//! ```
//!
//! A chunk is located exactly first, then ignoring trailing whitespace, then all
//! surrounding whitespace, then with typographic punctuation folded; a loose match
//! must be unique. Context lines keep the file's own bytes, and a file's CRLF line
//! breaks and its final newline (or lack of one) are kept. Searches take time
//! linear in the file and the chunk. Nothing is written unless every hunk of every
//! file applies, and then every file is written or none (see `changes.rs`); this
//! departs on purpose from upstream, which leaves earlier files changed when a
//! later hunk fails.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::{json, Value};

use super::changes::Changes;
use super::matching::{self, Budget};
use super::workspace::{WorkPath, Workspace};
use super::{fold_typography, object_schema, Stop};
use crate::tool::ToolResult;

pub(crate) const DESCRIPTION: &str = "Apply a patch in the Codex format: *** Begin Patch, then *** Add File: / *** Delete File: / *** Update File: (optionally *** Move to:) sections, *** End Patch. Update sections hold @@ chunks of context (space), removed (-) and added (+) lines. Every change applies, or none does.";

pub(crate) fn schema() -> Value {
    object_schema(json!({"input": {"type": "string", "description": "The whole patch text."}}), &["input"])
}

#[derive(Debug, PartialEq)]
enum Hunk {
    Add { path: String, lines: Vec<String> },
    Delete { path: String },
    Update { path: String, move_to: Option<String>, chunks: Vec<Chunk> },
}

#[derive(Debug, PartialEq, Default)]
struct Chunk {
    anchors: Vec<String>,
    lines: Vec<Line>,
    at_end_of_file: bool,
}

#[derive(Debug, PartialEq)]
enum Line {
    Context(String),
    Removed(String),
    Added(String),
}

pub(crate) fn run(workspace: &Workspace, arguments: &Value, stop: &Stop) -> Result<ToolResult, String> {
    let hunks = parse(arguments["input"].as_str().unwrap_or_default())
        .map_err(|e| format!("apply_patch: {e} Nothing was changed."))?;
    let mut budget = Budget::new(MAX_MATCHING_WORK);
    if !budget.spend(hunks.len() * SECTION_COST) {
        return Err(format!("apply_patch: {TOO_MUCH_WORK} Nothing was changed."));
    }
    // Each section's file (and move destination), resolved before anything runs.
    let targets = hunks
        .iter()
        .map(|hunk| {
            let (path, move_to) = match hunk {
                Hunk::Add { path, .. } | Hunk::Delete { path } => (path, None),
                Hunk::Update { path, move_to, .. } => (path, move_to.as_ref()),
            };
            Ok((workspace.resolve(path)?, move_to.map(|m| workspace.resolve(m)).transpose()?))
        })
        .collect::<Result<Vec<(WorkPath, Option<WorkPath>)>, String>>()?;
    let _locked = workspace.lock(targets.iter().flat_map(|(path, moved)| std::iter::once(path).chain(moved)));

    let mut view = FileView::new(workspace);
    let mut summary = Vec::new();
    let count = hunks.len();
    for (number, (hunk, (target, destination))) in hunks.iter().zip(targets).enumerate() {
        stop.check()?;
        let failed = |what: &str, path: &str, e: String| {
            format!("apply_patch: {what} {path} (section {} of {count}): {e} Nothing was changed.", number + 1)
        };
        match hunk {
            Hunk::Add { path, lines } => {
                view.ensure_not_dir(&target).map_err(|e| failed("Add File", path, e))?;
                let mut content = lines.join("\n");
                content.push('\n');
                view.set(target, Some(content.into_bytes()));
                summary.push(format!("A {path}"));
            }
            Hunk::Delete { path } => {
                view.read(&target).map_err(|e| failed("Delete File", path, e))?;
                view.ensure_removable(&target, count).map_err(|e| failed("Delete File", path, e))?;
                view.set(target, None);
                summary.push(format!("D {path}"));
            }
            Hunk::Update { path, move_to, chunks } => {
                let original = view.read(&target).map_err(|e| failed("Update File", path, e))?;
                let original = String::from_utf8(original)
                    .map_err(|_| failed("Update File", path, "the file is not UTF-8 text.".to_owned()))?;
                let updated =
                    update(&original, chunks, &mut budget, stop).map_err(|e| failed("Update File", path, e))?;
                match move_to.as_ref().zip(destination) {
                    Some((shown, destination)) => {
                        view.ensure_not_dir(&destination).map_err(|e| failed("Move to", shown, e))?;
                        view.ensure_removable(&target, count).map_err(|e| failed("Update File", path, e))?;
                        if destination.absolute == target.absolute {
                            return Err(failed("Move to", shown, "it names the file being moved.".to_owned()));
                        }
                        view.set(target, None);
                        view.set(destination, Some(updated.into_bytes()));
                        summary.push(format!("M {path} -> {shown}"));
                    }
                    None => {
                        view.set(target, Some(updated.into_bytes()));
                        summary.push(format!("M {path}"));
                    }
                }
            }
        }
    }
    view.commit(stop).map_err(|e| format!("apply_patch: {e} Nothing was changed."))?;
    Ok(ToolResult {
        summary: Some(format!("{} file(s) changed", summary.len())),
        ..ToolResult::text(format!("Done:\n{}", summary.join("\n")))
    })
}

/// The files as the patch leaves them, before anything is written. Files are
/// known by where they really are, so two names for one file (a symlink and its
/// target) are one file; a deletion is of the name itself (a symlink, not its
/// target).
struct FileView<'a> {
    workspace: &'a Workspace,
    /// The new content, or `None` for a removed file, and the name it was given as.
    changes: BTreeMap<PathBuf, (WorkPath, Option<Vec<u8>>)>,
    order: Vec<PathBuf>,
}

impl<'a> FileView<'a> {
    fn new(workspace: &'a Workspace) -> Self {
        FileView { workspace, changes: BTreeMap::new(), order: Vec::new() }
    }

    /// Where `path` really is (its last component followed when `follow`).
    fn key(&self, path: &WorkPath, follow: bool) -> PathBuf {
        self.workspace.locate(path, follow).unwrap_or_else(|_| path.absolute.clone())
    }

    fn read(&self, path: &WorkPath) -> Result<Vec<u8>, String> {
        match self.changes.get(&self.key(path, true)) {
            Some((_, Some(bytes))) => Ok(bytes.clone()),
            Some((_, None)) => Err("the file was deleted earlier in this patch.".to_owned()),
            None => self.workspace.load(path),
        }
    }

    fn ensure_not_dir(&self, path: &WorkPath) -> Result<(), String> {
        let known = self.changes.contains_key(&self.key(path, true));
        if !known && self.workspace.metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err("a directory is in the way.".to_owned());
        }
        Ok(())
    }

    /// Refuses to remove a symbolic link in a patch of `sections` sections: the
    /// other sections' paths may lead through it, and are resolved before any
    /// change is made.
    fn ensure_removable(&self, path: &WorkPath, sections: usize) -> Result<(), String> {
        let is_link = self.workspace.symlink_metadata(path).is_ok_and(|m| m.is_symlink());
        if is_link && sections > 1 {
            return Err("it is a symbolic link; remove a link in a patch with no other section.".to_owned());
        }
        Ok(())
    }

    /// Records `content` for `path`, or its removal.
    fn set(&mut self, path: WorkPath, content: Option<Vec<u8>>) {
        let key = self.key(&path, content.is_some());
        if !self.changes.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.changes.insert(key, (path, content));
    }

    /// Writes the new and changed files, then removes the removed ones (a file
    /// added and removed again by the patch is left alone).
    fn commit(mut self, stop: &Stop) -> Result<(), String> {
        let mut changes = Changes::new(self.workspace);
        for key in &self.order {
            match self.changes.remove(key) {
                Some((path, Some(bytes))) => changes.write(path, bytes),
                Some((path, None)) if self.workspace.symlink_metadata(&path).is_ok() => changes.remove(path),
                _ => {}
            }
        }
        changes.commit(stop)
    }
}

/// A patch marker line, whitespace around it allowed.
fn marker<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.trim().strip_prefix(prefix).map(str::trim)
}

fn parse(text: &str) -> Result<Vec<Hunk>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| !l.trim().is_empty()).ok_or("the patch is empty.")?;
    if lines[first].trim() != "*** Begin Patch" {
        return Err("the patch must start with \"*** Begin Patch\".".to_owned());
    }
    let last = lines.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(first);
    if last == first || lines[last].trim() != "*** End Patch" {
        return Err("the patch must end with \"*** End Patch\".".to_owned());
    }
    let body = &lines[first + 1..last];
    let mut hunks = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        i += 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(path) = marker(line, "*** Add File:") {
            let mut added = Vec::new();
            while i < body.len() && !body[i].trim_start().starts_with("***") {
                let content = body[i]
                    .strip_prefix('+')
                    .ok_or_else(|| format!("in Add File {path}, every line must start with +: {:?}", body[i]))?;
                added.push(content.to_owned());
                i += 1;
            }
            hunks.push(Hunk::Add { path: path.to_owned(), lines: added });
        } else if let Some(path) = marker(line, "*** Delete File:") {
            hunks.push(Hunk::Delete { path: path.to_owned() });
        } else if let Some(path) = marker(line, "*** Update File:") {
            let mut move_to = None;
            if let Some(destination) = body.get(i).and_then(|l| marker(l, "*** Move to:")) {
                move_to = Some(destination.to_owned());
                i += 1;
            }
            let (chunks, next) = parse_chunks(body, i, path)?;
            i = next;
            if chunks.is_empty() {
                return Err(format!("Update File {path} has no changes."));
            }
            hunks.push(Hunk::Update { path: path.to_owned(), move_to, chunks });
        } else {
            return Err(format!(
                "{:?} is not a valid section header; use *** Add File:, *** Delete File: or *** Update File:.",
                line.trim()
            ));
        }
    }
    if hunks.is_empty() {
        return Err("the patch has no changes.".to_owned());
    }
    Ok(hunks)
}

/// The chunks of an Update File section from line `i`; returns them and the index
/// of the next section.
fn parse_chunks(body: &[&str], mut i: usize, path: &str) -> Result<(Vec<Chunk>, usize), String> {
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut current = Chunk::default();
    while i < body.len() {
        let line = body[i];
        if line.trim() == "*** End of File" {
            current.at_end_of_file = true;
            i += 1;
            continue;
        }
        if line.trim_start().starts_with("***") {
            break;
        }
        i += 1;
        if let Some(anchor) = line.strip_prefix("@@") {
            if !current.lines.is_empty() {
                chunks.push(std::mem::take(&mut current));
            }
            let anchor = anchor.trim();
            if !anchor.is_empty() {
                current.anchors.push(anchor.to_owned());
            }
            continue;
        }
        current.lines.push(match line.chars().next() {
            Some(' ') => Line::Context(line[1..].to_owned()),
            Some('-') => Line::Removed(line[1..].to_owned()),
            Some('+') => Line::Added(line[1..].to_owned()),
            None => Line::Context(String::new()),
            Some(_) => {
                return Err(format!(
                    "in Update File {path}, {line:?} is not a change line; start it with a space, - or +."
                ))
            }
        });
    }
    if !current.lines.is_empty() {
        chunks.push(current);
    } else if !current.anchors.is_empty() || current.at_end_of_file {
        return Err(format!("in Update File {path}, a chunk has no lines."));
    }
    Ok((chunks, i))
}

/// Most work one patch may do, all sections together, in units of about a
/// nanosecond on the project's machine (so about 0.6 s).
const MAX_MATCHING_WORK: usize = 600_000_000;
/// One search step: comparing two line numbers.
const STEP_COST: usize = 2;
/// Reading, splitting and joining a file again for a section: per byte, per line.
const BYTE_COST: usize = 2;
const LINE_COST: usize = 20;
/// Numbering (hashing) a line for a comparison level, on top of its bytes.
const NUMBER_COST: usize = 200;
/// Resolving, locking, staging and committing one section's file(s), whatever
/// their size (so a patch has at most 2,000 sections).
const SECTION_COST: usize = 300_000;
const TOO_MUCH_WORK: &str =
    "the patch needs more matching than one call may do; split it into several smaller patches.";

/// How strictly two lines are compared; each level is looser than the last.
const LEVELS: [fn(&str) -> Cow<'_, str>; 4] = [
    |s| Cow::Borrowed(s),
    |s| Cow::Borrowed(s.trim_end()),
    |s| Cow::Borrowed(s.trim()),
    |s| Cow::Owned(s.trim().chars().map(fold_typography).collect()),
];

/// A file's lines as each level sees them, numbered so that lines equal at that
/// level share a number; a level is worked out when a search first needs it.
struct Levels<'a> {
    lines: &'a [&'a str],
    /// The lines' bytes, together.
    bytes: usize,
    numbered: [Option<Numbered<'a>>; 4],
}

/// The numbers of one level: each distinct line's, and the file's lines'.
type Numbered<'a> = (HashMap<Cow<'a, str>, u32>, Vec<u32>);

impl<'a> Levels<'a> {
    fn new(lines: &'a [&'a str]) -> Self {
        Levels { lines, bytes: lines.iter().map(|line| line.len()).sum(), numbered: Default::default() }
    }

    /// The file's line numbers at `level`, and the needle's (`None` when one of
    /// its lines occurs nowhere in the file).
    fn numbers(&mut self, level: usize, needle: &[&str]) -> (&[u32], Option<Vec<u32>>) {
        let lines = self.lines;
        let (table, numbers) = self.numbered[level].get_or_insert_with(|| {
            let mut table = HashMap::new();
            let numbers = lines
                .iter()
                .map(|line| {
                    let next = table.len() as u32;
                    *table.entry(LEVELS[level](line)).or_insert(next)
                })
                .collect();
            (table, numbers)
        });
        let wanted = needle.iter().map(|line| table.get(LEVELS[level](line).as_ref()).copied()).collect();
        (numbers, wanted)
    }
}

/// Where `needle` occurs in the file at or after `from`: exactly (the first match),
/// else at the first looser level that matches, where the match must be unique.
/// With `at_end`, a match ending at the last line is preferred.
fn seek(
    levels: &mut Levels<'_>,
    budget: &mut Budget,
    needle: &[&str],
    from: usize,
    at_end: bool,
) -> Result<usize, String> {
    let total = levels.lines.len();
    if needle.len() > total {
        return Err("the file is shorter than the chunk's lines.".to_owned());
    }
    let end_start = total - needle.len();
    for level in 0..LEVELS.len() {
        // Numbering a level reads every line; a search, the file up to where it stops.
        let numbering = match levels.numbered[level] {
            None => total * NUMBER_COST + levels.bytes * BYTE_COST,
            Some(_) => 0,
        };
        if !budget.spend(numbering + needle.len() * NUMBER_COST) {
            return Err(TOO_MUCH_WORK.to_owned());
        }
        let (numbers, Some(wanted)) = levels.numbers(level, needle) else { continue };
        if at_end && end_start >= from && numbers[end_start..] == wanted[..] {
            return Ok(end_start);
        }
        let limit = if level == 0 { 1 } else { 2 };
        let found = matching::occurrences(numbers, &wanted, from, limit);
        let stopped_at = match found.len() == limit {
            true => found[limit - 1] + needle.len(),
            false => total,
        };
        if !budget.spend(stopped_at.saturating_sub(from) * STEP_COST) {
            return Err(TOO_MUCH_WORK.to_owned());
        }
        match found.as_slice() {
            [] => continue,
            [only] => return Ok(*only),
            _ => return Err(
                "the lines match more than one place once whitespace and punctuation are ignored; add context lines."
                    .to_owned(),
            ),
        }
    }
    Err(format!(
        "could not find these lines:\n{}",
        needle.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
    ))
}

/// The file with every chunk applied.
fn update(original: &str, chunks: &[Chunk], budget: &mut Budget, stop: &Stop) -> Result<String, String> {
    let crlf = original.find('\n').is_some_and(|i| original[..i].ends_with('\r'));
    let ends_with_newline = original.ends_with('\n');
    let mut raw: Vec<&str> = original.split('\n').collect();
    if ends_with_newline || original.is_empty() {
        raw.pop();
    }
    // Splitting and joining the file reads it whole, once per section.
    if !budget.spend(original.len() * BYTE_COST + raw.len() * LINE_COST) {
        return Err(TOO_MUCH_WORK.to_owned());
    }
    let lines: Vec<&str> = raw.iter().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let break_ = if crlf { "\r" } else { "" };
    let total = chunks.len();
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    let mut levels = Levels::new(&lines);
    for (number, chunk) in chunks.iter().enumerate() {
        stop.check()?;
        let context = |e: String| format!("chunk {} of {total}: {e}", number + 1);
        for anchor in &chunk.anchors {
            cursor = seek(&mut levels, budget, &[anchor.as_str()], cursor, false)
                .map_err(|e| context(format!("the @@ anchor {anchor:?}: {e}")))?
                + 1;
        }
        let old: Vec<&str> = chunk
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(text) | Line::Removed(text) => Some(text.as_str()),
                Line::Added(_) => None,
            })
            .collect();
        let start = if old.is_empty() {
            if chunk.anchors.is_empty() {
                lines.len()
            } else {
                cursor
            }
        } else {
            seek(&mut levels, budget, &old, cursor, chunk.at_end_of_file).map_err(context)?
        };
        let mut replacement = Vec::new();
        let mut at = start;
        for line in &chunk.lines {
            match line {
                Line::Context(_) => {
                    replacement.push(raw[at].to_owned());
                    at += 1;
                }
                Line::Removed(_) => at += 1,
                Line::Added(text) => replacement.push(format!("{text}{break_}")),
            }
        }
        replacements.push((start, old.len(), replacement));
        cursor = start + old.len();
    }
    let mut text = String::with_capacity(original.len() + original.len() / 8);
    let mut push = |line: &str| {
        text.push_str(line);
        text.push('\n');
    };
    let mut at = 0;
    for (start, removed, replacement) in replacements {
        raw[at..start].iter().for_each(|line| push(line));
        replacement.iter().for_each(|line| push(line));
        at = start + removed;
    }
    raw[at..].iter().for_each(|line| push(line));
    // Every line got a line break; the last keeps one only if the file had it.
    if !((ends_with_newline || original.is_empty()) && text.len() > 1) {
        text.pop();
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update_all(file: &str, chunks: &[Chunk]) -> Result<String, String> {
        update(file, chunks, &mut Budget::new(MAX_MATCHING_WORK), &Stop::never())
    }

    fn chunks(patch: &str) -> Vec<Chunk> {
        match parse(patch).unwrap().remove(0) {
            Hunk::Update { chunks, .. } => chunks,
            other => panic!("{other:?}"),
        }
    }

    fn patch(body: &str) -> String {
        format!("*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch")
    }

    #[test]
    fn nested_anchors_narrow_the_search() {
        let file = "class A:\n  def run():\n    x = 1\nclass B:\n  def run():\n    x = 1\n";
        let updated =
            update_all(file, &chunks(&patch("@@ class B:\n@@   def run():\n-    x = 1\n+    x = 2"))).unwrap();
        assert_eq!(updated, "class A:\n  def run():\n    x = 1\nclass B:\n  def run():\n    x = 2\n");
    }

    #[test]
    fn context_keeps_the_files_bytes_and_crlf_stays() {
        let file = "a  \r\nb\r\nc";
        let updated = update_all(file, &chunks(&patch(" a\n-b\n+B"))).unwrap();
        assert_eq!(updated, "a  \r\nB\r\nc", "trailing spaces of the context line and no final newline");
    }

    #[test]
    fn a_loose_match_must_be_unique() {
        let file = "  x\n\tx\n";
        let err = update_all(file, &chunks(&patch("-x\n+y"))).unwrap_err();
        assert!(err.contains("more than one place"), "{err}");
        assert_eq!(update_all("a\n  x  \n", &chunks(&patch("-x\n+y"))).unwrap(), "a\ny\n");
    }

    #[test]
    fn typographic_punctuation_matches_loosely() {
        assert_eq!(
            update_all("say \u{201C}hi\u{201D}\n", &chunks(&patch("-say \"hi\"\n+say bye"))).unwrap(),
            "say bye\n"
        );
    }

    #[test]
    fn end_of_file_prefers_the_last_match() {
        let file = "x\ny\nx\n";
        assert_eq!(update_all(file, &chunks(&patch("-x\n+z\n*** End of File"))).unwrap(), "x\ny\nz\n");
    }

    #[test]
    fn the_matching_work_of_a_patch_is_bounded() {
        let file: String = (0..100).map(|i| format!("  line {i}\n")).collect();
        let patch = patch("@@\n-line 1\n+one\n@@\n-line 2\n+two");
        let chunks = chunks(&patch);
        // Two loose matches: each numbers levels and reads the rest of the file.
        assert!(update(&file, &chunks, &mut Budget::new(200_000), &Stop::never()).is_ok());
        let err = update(&file, &chunks, &mut Budget::new(30_000), &Stop::never()).unwrap_err();
        assert!(err.contains("split it into several smaller patches"), "{err}");
    }

    #[test]
    fn a_section_pays_for_the_bytes_it_reads_even_without_a_search() {
        let file = "x".repeat(100_000);
        let append = chunks(&patch("@@\n+y"));
        assert!(update(&file, &append, &mut Budget::new(250_000), &Stop::never()).is_ok());
        let err = update(&file, &append, &mut Budget::new(150_000), &Stop::never()).unwrap_err();
        assert!(err.contains("smaller patches"), "{err}");
    }

    #[test]
    fn malformed_patches_say_what_is_wrong() {
        assert!(parse("").unwrap_err().contains("empty"));
        assert!(parse("*** Begin Patch\n*** End Patch").unwrap_err().contains("no changes"));
        assert!(parse("*** Begin Patch\n*** Frobnicate File: x\n*** End Patch")
            .unwrap_err()
            .contains("not a valid section header"));
        assert!(parse("*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch")
            .unwrap_err()
            .contains("must start with +"));
        assert!(parse("*** Begin Patch\n*** Update File: x\n*** End Patch").unwrap_err().contains("no changes"));
    }
}
