//! `list_files {path?, depth?, limit?}`: a breadth-first listing, sorted, with `/`
//! after directories and `@` after symlinks, cut (with a notice) at a depth and an
//! entry limit.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::workspace::Workspace;
use super::{object_schema, positive, Stop};
use crate::tool::ToolResult;

pub(crate) const DESCRIPTION: &str = "List the files and directories under a directory, breadth first and sorted. Directories end in /, symlinks in @. Use depth to go deeper and limit for more entries.";
const DEFAULT_DEPTH: usize = 3;
const DEFAULT_LIMIT: usize = 500;

pub(crate) fn schema() -> Value {
    object_schema(
        json!({"path": {"type": "string", "description": "The directory (default: the working directory)."},
               "depth": {"type": "integer", "minimum": 1, "description": "Levels to descend (default 3)."},
               "limit": {"type": "integer", "minimum": 1, "description": "Most entries to list (default 500)."}}),
        &[],
    )
}

pub(crate) fn run(workspace: &Workspace, arguments: &Value, stop: &Stop) -> Result<ToolResult, String> {
    let root = workspace.resolve(arguments["path"].as_str().unwrap_or("."))?;
    let shown = root.shown.as_str();
    let depth = positive(arguments, "depth")?.unwrap_or(DEFAULT_DEPTH);
    let limit = positive(arguments, "limit")?.unwrap_or(DEFAULT_LIMIT);
    if !workspace.metadata(&root).map_err(|e| workspace.explain("list", &root, &e))?.is_dir() {
        return Err(format!("{shown} is not a directory."));
    }
    let located = workspace.locate(&root, true).map_err(|e| workspace.explain("list", &root, &e))?;
    let mut lines = Vec::new();
    let mut cut = false;
    let mut deeper = false;
    // Directories as paths relative to the listed one, never followed through symlinks.
    let mut queue: VecDeque<(PathBuf, usize)> = VecDeque::from([(PathBuf::new(), 1)]);
    while let Some((dir, level)) = queue.pop_front() {
        stop.check()?;
        let entries = match workspace.entries(&located.join(&dir)) {
            Ok(entries) => entries,
            Err(e) => {
                lines.push(format!("{} [unreadable: {e}]", shown_path(&dir)));
                continue;
            }
        };
        for (name, kind) in entries {
            if lines.len() == limit {
                cut = true;
                break;
            }
            let path = dir.join(name);
            let (suffix, is_dir) = match kind {
                t if t.is_symlink() => ("@", false),
                t if t.is_dir() => ("/", true),
                _ => ("", false),
            };
            lines.push(format!("{}{suffix}", shown_path(&path)));
            if is_dir {
                if level < depth {
                    queue.push_back((path, level + 1));
                } else if workspace.entries(&located.join(&path)).is_ok_and(|e| !e.is_empty()) {
                    deeper = true;
                }
            }
        }
        if cut {
            break;
        }
    }
    let mut text = if lines.is_empty() { format!("{shown} is empty.") } else { lines.join("\n") };
    if cut {
        text.push_str(&format!("\n[listing cut at {limit} entries; use a higher limit or list a subdirectory]"));
    } else if deeper {
        text.push_str(&format!(
            "\n[directories deeper than {depth} levels are not shown; use a higher depth to see them]"
        ));
    }
    Ok(ToolResult::text(text))
}

fn shown_path(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
