//! `write {path, content}`: creates missing parent directories and writes the
//! content verbatim, replacing the file.

use serde_json::{json, Value};

use super::changes::Changes;
use super::workspace::Workspace;
use super::{object_schema, Stop};
use crate::tool::ToolResult;

pub(crate) const DESCRIPTION: &str = "Write content to a file, creating it and any missing parent directories, and replacing what was there. The content is written exactly as given.";

pub(crate) fn schema() -> Value {
    object_schema(
        json!({"path": {"type": "string", "description": "The file, relative to the working directory or absolute."},
               "content": {"type": "string", "description": "The complete new content of the file."}}),
        &["path", "content"],
    )
}

pub(crate) fn run(workspace: &Workspace, arguments: &Value, stop: &Stop) -> Result<ToolResult, String> {
    let content = arguments["content"].as_str().unwrap_or_default();
    let path = workspace.resolve(arguments["path"].as_str().unwrap_or_default())?;
    let _locked = workspace.lock([&path]);
    let shown = path.shown.clone();
    let mut changes = Changes::new(workspace);
    changes.write(path, content.as_bytes().to_vec());
    changes.commit(stop)?;
    Ok(ToolResult::text(format!("Wrote {} bytes to {shown}.", content.len())))
}
