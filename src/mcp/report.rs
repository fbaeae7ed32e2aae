//! What a run is told of an MCP server: whether it is ready, the tools the
//! model is offered from it, and those left out with why.

use schemars::JsonSchema;
use serde::Serialize;

/// Whether a server's tools are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpServerStatus {
    /// It answered and listed its tools.
    Ready,
    /// It could not be started or reached, or it went away: its tools are
    /// absent until it is back.
    Unavailable,
}

/// A tool of a server that the model is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LeftOutTool {
    /// The tool's name on the server (empty when the server gave none).
    pub name: String,
    /// Why it is not offered.
    pub reason: String,
}

/// One server as it stands: what a run reports when it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    /// The server's name in the configuration.
    pub server: String,
    /// A run fails without it.
    pub required: bool,
    /// Whether its tools are offered.
    pub status: McpServerStatus,
    /// The tools offered from it, by the names the model sees.
    pub tools: Vec<String>,
    /// The tools it has that are not offered, with why.
    pub left_out: Vec<LeftOutTool>,
    /// Why it is unavailable.
    pub error: Option<String>,
    /// How often it was started again after it failed or went away.
    pub restarts: u32,
    /// The protocol version it speaks, when ready.
    pub protocol_version: Option<String>,
}
