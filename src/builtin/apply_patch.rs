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
//! breaks and its final newline (or lack of one) are kept. Nothing is written
//! unless every hunk of every file applies; this departs on purpose from upstream,
//! which leaves earlier files changed when a later hunk fails.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::workspace::Workspace;
use super::{fold_typography, object_schema};
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

pub(crate) fn run(workspace: &Workspace, arguments: &Value) -> Result<ToolResult, String> {
    let hunks = parse(arguments["input"].as_str().unwrap_or_default())
        .map_err(|e| format!("apply_patch: {e} Nothing was changed."))?;
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
        .collect::<Result<Vec<(PathBuf, Option<PathBuf>)>, String>>()?;
    let _locked = workspace
        .lock(targets.iter().flat_map(|(path, moved)| std::iter::once(path).chain(moved)).map(PathBuf::as_path));

    let mut view = FileView::default();
    let mut summary = Vec::new();
    let count = hunks.len();
    for (number, (hunk, (target, destination_path))) in hunks.iter().zip(targets).enumerate() {
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
                view.set(target, None);
                summary.push(format!("D {path}"));
            }
            Hunk::Update { path, move_to, chunks } => {
                let source = target;
                let original = view.read(&source).map_err(|e| failed("Update File", path, e))?;
                let original = String::from_utf8(original)
                    .map_err(|_| failed("Update File", path, "the file is not UTF-8 text.".to_owned()))?;
                let updated = update(&original, chunks).map_err(|e| failed("Update File", path, e))?;
                match move_to.as_ref().zip(destination_path) {
                    Some((destination, target)) => {
                        view.ensure_not_dir(&target).map_err(|e| failed("Move to", destination, e))?;
                        view.set(source, None);
                        view.set(target, Some(updated.into_bytes()));
                        summary.push(format!("M {path} -> {destination}"));
                    }
                    None => {
                        view.set(source, Some(updated.into_bytes()));
                        summary.push(format!("M {path}"));
                    }
                }
            }
        }
    }
    view.write().map_err(|e| format!("apply_patch: {e}"))?;
    Ok(ToolResult {
        summary: Some(format!("{} file(s) changed", summary.len())),
        ..ToolResult::text(format!("Done:\n{}", summary.join("\n")))
    })
}

/// The files as the patch leaves them, before anything is written.
#[derive(Default)]
struct FileView {
    changes: BTreeMap<PathBuf, Option<Vec<u8>>>,
    order: Vec<PathBuf>,
}

impl FileView {
    fn read(&self, path: &PathBuf) -> Result<Vec<u8>, String> {
        match self.changes.get(path) {
            Some(Some(bytes)) => Ok(bytes.clone()),
            Some(None) => Err("the file was deleted earlier in this patch.".to_owned()),
            None if path.is_dir() => Err("it is a directory, not a file.".to_owned()),
            None => std::fs::read(path).map_err(|e| format!("the file cannot be read ({e}).")),
        }
    }

    fn ensure_not_dir(&self, path: &PathBuf) -> Result<(), String> {
        if !self.changes.contains_key(path) && path.is_dir() {
            return Err("a directory is in the way.".to_owned());
        }
        Ok(())
    }

    fn set(&mut self, path: PathBuf, content: Option<Vec<u8>>) {
        if !self.changes.contains_key(&path) {
            self.order.push(path.clone());
        }
        self.changes.insert(path, content);
    }

    fn write(self) -> Result<(), String> {
        for path in &self.order {
            match &self.changes[path] {
                Some(bytes) => {
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)
                            .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
                    }
                    std::fs::write(path, bytes).map_err(|e| format!("could not write {}: {e}", path.display()))?;
                }
                None => std::fs::remove_file(path).map_err(|e| format!("could not delete {}: {e}", path.display()))?,
            }
        }
        Ok(())
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

/// How strictly two lines are compared; each level is looser than the last.
const LEVELS: [fn(&str) -> String; 4] = [
    |s| s.to_owned(),
    |s| s.trim_end().to_owned(),
    |s| s.trim().to_owned(),
    |s| s.trim().chars().map(fold_typography).collect(),
];

/// Where `needle` occurs in `lines` at or after `from`: exactly (the first match),
/// else at the first looser level that matches, where the match must be unique.
/// With `at_end`, a match ending at the last line is preferred.
fn seek(lines: &[&str], needle: &[&str], from: usize, at_end: bool) -> Result<usize, String> {
    if needle.len() > lines.len() {
        return Err("the file is shorter than the chunk's lines.".to_owned());
    }
    for (level, compare) in LEVELS.iter().enumerate() {
        let wanted: Vec<String> = needle.iter().map(|l| compare(l)).collect();
        let matches_at = |start: usize| (0..needle.len()).all(|k| compare(lines[start + k]) == wanted[k]);
        let end_start = lines.len() - needle.len();
        if at_end && end_start >= from && matches_at(end_start) {
            return Ok(end_start);
        }
        let found: Vec<usize> = (from..=end_start).filter(|&s| matches_at(s)).take(2).collect();
        match found.as_slice() {
            [] => continue,
            [only] => return Ok(*only),
            [first, ..] if level == 0 => return Ok(*first),
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
fn update(original: &str, chunks: &[Chunk]) -> Result<String, String> {
    let crlf = original.find('\n').is_some_and(|i| original[..i].ends_with('\r'));
    let ends_with_newline = original.ends_with('\n');
    let mut raw: Vec<&str> = original.split('\n').collect();
    if ends_with_newline || original.is_empty() {
        raw.pop();
    }
    let lines: Vec<&str> = raw.iter().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let break_ = if crlf { "\r" } else { "" };
    let total = chunks.len();
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for (number, chunk) in chunks.iter().enumerate() {
        let context = |e: String| format!("chunk {} of {total}: {e}", number + 1);
        for anchor in &chunk.anchors {
            cursor = seek(&lines, &[anchor.as_str()], cursor, false)
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
            seek(&lines, &old, cursor, chunk.at_end_of_file).map_err(context)?
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
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    let mut at = 0;
    for (start, removed, replacement) in replacements {
        out.extend(raw[at..start].iter().map(|l| l.to_string()));
        out.extend(replacement);
        at = start + removed;
    }
    out.extend(raw[at..].iter().map(|l| l.to_string()));
    let mut text = out.join("\n");
    if (ends_with_newline || original.is_empty()) && !text.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let updated = update(file, &chunks(&patch("@@ class B:\n@@   def run():\n-    x = 1\n+    x = 2"))).unwrap();
        assert_eq!(updated, "class A:\n  def run():\n    x = 1\nclass B:\n  def run():\n    x = 2\n");
    }

    #[test]
    fn context_keeps_the_files_bytes_and_crlf_stays() {
        let file = "a  \r\nb\r\nc";
        let updated = update(file, &chunks(&patch(" a\n-b\n+B"))).unwrap();
        assert_eq!(updated, "a  \r\nB\r\nc", "trailing spaces of the context line and no final newline");
    }

    #[test]
    fn a_loose_match_must_be_unique() {
        let file = "  x\n\tx\n";
        let err = update(file, &chunks(&patch("-x\n+y"))).unwrap_err();
        assert!(err.contains("more than one place"), "{err}");
        assert_eq!(update("a\n  x  \n", &chunks(&patch("-x\n+y"))).unwrap(), "a\ny\n");
    }

    #[test]
    fn typographic_punctuation_matches_loosely() {
        assert_eq!(update("say \u{201C}hi\u{201D}\n", &chunks(&patch("-say \"hi\"\n+say bye"))).unwrap(), "say bye\n");
    }

    #[test]
    fn end_of_file_prefers_the_last_match() {
        let file = "x\ny\nx\n";
        assert_eq!(update(file, &chunks(&patch("-x\n+z\n*** End of File"))).unwrap(), "x\ny\nz\n");
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
