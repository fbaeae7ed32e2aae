//! An agent's MCP servers, and the tool sets their snapshots make with the
//! agent's own tools.

use std::sync::{Arc, Mutex};

use super::tool_set::ToolSet;
use crate::mcp::{McpServers, McpSnapshot};

/// The servers of one agent (dropping them stops them), and the latest tool
/// set made, reused while the servers stay as they are. Any thread.
pub(crate) struct McpTools {
    pub(crate) servers: McpServers,
    latest: Mutex<Option<(Arc<McpSnapshot>, Arc<ToolSet>)>>,
}

impl McpTools {
    pub(crate) fn new(servers: McpServers) -> Self {
        McpTools { servers, latest: Mutex::new(None) }
    }

    /// The agent's own tools (`own`), then those of `snapshot`.
    pub(crate) fn tool_set(&self, own: &ToolSet, snapshot: &Arc<McpSnapshot>) -> Arc<ToolSet> {
        let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, set)) = latest.as_ref().filter(|(made_of, _)| made_of.same_as(snapshot)) {
            return Arc::clone(set);
        }
        let tools = own.tools().iter().chain(&snapshot.tools).cloned().collect();
        let set = Arc::new(ToolSet::new(tools));
        *latest = Some((Arc::clone(snapshot), Arc::clone(&set)));
        set
    }
}
