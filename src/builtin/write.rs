//! `write {path, content}`: creates missing parent directories and writes the
//! content verbatim, replacing the file.

use serde_json::{json, Value};

use super::object_schema;
use super::workspace::Workspace;
use crate::tool::ToolResult;

pub(crate) const DESCRIPTION: &str = "Write content to a file, creating it and any missing parent directories, and replacing what was there. The content is written exactly as given.";

pub(crate) fn schema() -> Value {
    object_schema(
        json!({"path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
               "content": {"type": "string", "description": "The complete new content of the file."}}),
        &["path", "content"],
    )
}

pub(crate) fn run(workspace: &Workspace, arguments: &Value) -> Result<ToolResult, String> {
    let path_text = arguments["path"].as_str().unwrap_or_default();
    let content = arguments["content"].as_str().unwrap_or_default();
    let path = workspace.resolve(path_text)?;
    let _locked = workspace.lock([path.as_path()]);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("Could not create the directory {}: {e}", parent.display()))?;
    }
    std::fs::write(&path, content).map_err(|e| format!("Could not write {path_text}: {e}"))?;
    Ok(ToolResult::text(format!("Wrote {} bytes to {path_text}.", content.len())))
}
