//! The tools a run offers in its turns: the agent's own and, when it has MCP
//! servers, theirs as they stand when each turn begins, with an event for
//! every change a run has not been told of.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::built::AgentInner;
use super::context::RunContext;
use super::event::EventKind;
use super::next_step::Ending;
use super::tool_set::ToolSet;
use crate::error::{Error, ErrorCode};
use crate::mcp::{McpServerStatus, McpServers, McpSnapshot, ServerReport};
use tokio_util::sync::CancellationToken;

/// One run's view of its agent's tools.
pub(crate) struct RunTools {
    current: Arc<ToolSet>,
    /// The last report of each server the run's events gave.
    reported: HashMap<String, ServerReport>,
    /// The number of the next line of each server's log to report.
    log_next: HashMap<String, u64>,
}

impl RunTools {
    /// The agent's own tools, until the first refresh.
    pub(crate) fn new(agent: &AgentInner) -> Self {
        RunTools { current: Arc::clone(&agent.tools), reported: HashMap::new(), log_next: HashMap::new() }
    }

    /// The tools of the turn under way.
    pub(crate) fn current(&self) -> &ToolSet {
        &self.current
    }

    /// Brings the tools up to date before a turn, or before the batch a run
    /// begins with: waits for the MCP servers still starting and for those
    /// due to be started again, tells the run's events what changed (every
    /// server, the first time) and what the servers logged, and ends the run
    /// with `MCP_UNAVAILABLE` when a required server is not ready.
    pub(crate) async fn refresh(&mut self, run: &RunContext) -> Result<(), Ending> {
        let agent = run.agent();
        let Some(mcp) = &agent.mcp else { return Ok(()) };
        let mut snapshot = settled(&mcp.servers, &run.cancel).await?;
        // A required server that went away between the wait and the snapshot
        // is waited for once more.
        if snapshot.servers.iter().any(|r| r.required && r.status != McpServerStatus::Ready) {
            snapshot = settled(&mcp.servers, &run.cancel).await?;
        }
        self.current = mcp.tool_set(&agent.tools, &snapshot);
        for report in &snapshot.servers {
            let previous = self.reported.get(&report.server);
            if previous != Some(report) {
                run.events.emit(change(report, previous)).await;
                self.reported.insert(report.server.clone(), report.clone());
            }
            let next = self.log_next.entry(report.server.clone()).or_default();
            let new = mcp.servers.log_since(&report.server, *next);
            *next = new.next;
            if !new.lines.is_empty() || new.missed > 0 {
                let server = report.server.clone();
                run.events.emit(EventKind::McpServerLog { server, lines: new.lines, missed: new.missed }).await;
            }
        }
        match snapshot.servers.iter().find(|r| r.required && r.status != McpServerStatus::Ready) {
            Some(report) => Err(Ending::Failed(Error::new(
                ErrorCode::McpUnavailable,
                format!(
                    "the MCP server \"{}\" is required and is not available: {}",
                    report.server,
                    report.error.as_deref().unwrap_or("it is not ready")
                ),
            ))),
            None => Ok(()),
        }
    }
}

/// The servers once they settled; the run's end when it was cancelled meanwhile.
async fn settled(servers: &McpServers, cancel: &CancellationToken) -> Result<Arc<McpSnapshot>, Ending> {
    servers.settle(cancel).await;
    match cancel.is_cancelled() {
        true => Err(Ending::Cancelled),
        false => Ok(servers.snapshot()),
    }
}

/// The event for `report`, with the tools added and removed since `previous`.
fn change(report: &ServerReport, previous: Option<&ServerReport>) -> EventKind {
    let before: BTreeSet<&str> = previous.into_iter().flat_map(|p| p.tools.iter().map(String::as_str)).collect();
    let now: BTreeSet<&str> = report.tools.iter().map(String::as_str).collect();
    let added = report.tools.iter().filter(|t| !before.contains(t.as_str())).cloned().collect();
    let removed =
        previous.into_iter().flat_map(|p| p.tools.iter()).filter(|t| !now.contains(t.as_str())).cloned().collect();
    EventKind::McpServer {
        server: report.server.clone(),
        status: report.status,
        tools: report.tools.clone(),
        added,
        removed,
        left_out: report.left_out.clone(),
        error: report.error.clone(),
        restarts: report.restarts,
        protocol_version: report.protocol_version.clone(),
    }
}
