//! `list_files {path?, depth?, limit?}`: a breadth-first listing, sorted, with `/`
//! after directories and `@` after symlinks, cut (with a notice) at a depth and an
//! entry limit.

use std::collections::VecDeque;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::workspace::Workspace;
use super::{object_schema, positive};
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

pub(crate) fn run(workspace: &Workspace, arguments: &Value) -> Result<ToolResult, String> {
    let shown = arguments["path"].as_str().unwrap_or(".");
    let root = workspace.resolve(shown)?;
    let depth = positive(arguments, "depth")?.unwrap_or(DEFAULT_DEPTH);
    let limit = positive(arguments, "limit")?.unwrap_or(DEFAULT_LIMIT);
    if !root.is_dir() {
        return Err(format!("{shown} is not a directory."));
    }
    let mut lines = Vec::new();
    let mut cut = false;
    let mut deeper = false;
    let mut queue: VecDeque<(PathBuf, usize)> = VecDeque::from([(root.clone(), 1)]);
    while let Some((dir, level)) = queue.pop_front() {
        let mut entries: Vec<_> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries.filter_map(|e| e.ok()).collect(),
            Err(e) => {
                lines.push(format!("{} [unreadable: {e}]", relative(&root, &dir)));
                continue;
            }
        };
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if lines.len() == limit {
                cut = true;
                break;
            }
            let path = entry.path();
            let kind = entry.file_type().ok();
            let (suffix, is_dir) = match kind {
                Some(t) if t.is_symlink() => ("@", false),
                Some(t) if t.is_dir() => ("/", true),
                _ => ("", false),
            };
            lines.push(format!("{}{suffix}", relative(&root, &path)));
            if is_dir {
                if level < depth {
                    queue.push_back((path, level + 1));
                } else if std::fs::read_dir(&path).map(|mut d| d.next().is_some()).unwrap_or(false) {
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

fn relative(root: &std::path::Path, path: &std::path::Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}
