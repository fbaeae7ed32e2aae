//! How an agent added to another's builder is offered: the mode and the
//! options JSON (`ferrule_agent_tool_spec.mode` and `.options`).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;

/// How the model is offered an agent added to another's builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentToolMode {
    /// A tool: the call runs the agent, nested, and its answer is the result.
    #[default]
    Tool,
    /// A handoff: the tool `transfer_to_<name>` hands the run to the agent.
    Handoff,
}

/// Which of the run's messages a handoff carries to the agent taking over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HandoffMessages {
    /// The whole transcript.
    #[default]
    All,
    /// The transcript without tool calls and their results (and without the
    /// reasoning of the responses that made calls).
    WithoutToolCalls,
}

/// The options JSON of an agent added to a builder
/// (`ferrule_agent_tool_spec.options`). Unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentToolOptions {
    /// Bound on one call in milliseconds (the nested run is cancelled at it);
    /// 0 or absent uses the calling agent's `tool_timeout_ms`. Tool mode only.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A call runs (or hands off) only once the host approved it.
    #[serde(default)]
    pub needs_approval: bool,
    /// Which messages a handoff carries (absent: all). Handoff mode only.
    #[serde(default)]
    pub handoff_messages: Option<HandoffMessages>,
}

impl AgentToolOptions {
    /// Parses options JSON; empty text means the defaults.
    pub fn from_json(json: &str) -> Result<Self> {
        if json.trim().is_empty() {
            return Ok(AgentToolOptions::default());
        }
        crate::json::parse_document("agent tool options", json)
    }
}
