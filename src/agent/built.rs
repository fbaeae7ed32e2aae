//! A built agent: its configuration, tools, hooks and model, immutable and
//! shared by every run it starts.

use std::collections::HashMap;
use std::sync::Arc;

use super::agent_tool_options::HandoffMessages;
use super::config::AgentConfig;
use super::mcp_tools::McpTools;
use super::tool_set::ToolSet;
use crate::hook::Hook;
use crate::provider::{Generator, UnusedExchange};
use crate::tool::{InputSchema, Tool};
use crate::trace::Tracer;

/// A built agent: immutable, cheap to clone, usable from any thread. Built with
/// [`AgentBuilder`](super::AgentBuilder); runs start with [`Agent::start`].
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

/// What an agent is made of. Never changes once built.
pub(crate) struct AgentInner {
    pub(crate) config: AgentConfig,
    /// The agent's own tools, built-in and host, in the order offered.
    pub(crate) tools: Arc<ToolSet>,
    pub(crate) hooks: Vec<Hook>,
    pub(crate) generator: Box<dyn Generator>,
    /// The compiled `output_schema`.
    pub(crate) output: Option<InputSchema>,
    /// The MCP servers, when the configuration names any: stopped when the
    /// agent goes.
    pub(crate) mcp: Option<McpTools>,
    /// The agents the model may hand the run to, by their tools' names.
    pub(crate) handoffs: HashMap<String, Handoff>,
    /// The agents the model may call as tools, by their tools' names.
    pub(crate) called: HashMap<String, Agent>,
    /// How deep the agent's tree of agents is: 1 without agents, one more
    /// than the deepest agent it calls as a tool or hands off to.
    pub(crate) height: u32,
    /// Where its runs' spans go.
    pub(crate) tracer: Arc<Tracer>,
}

/// An agent the model may hand the run to.
pub(crate) struct Handoff {
    /// The name the handing agent knows it by (after `transfer_to_`).
    pub(crate) name: Arc<str>,
    pub(crate) agent: Agent,
    /// Which messages the handoff carries.
    pub(crate) messages: HandoffMessages,
}

impl AgentInner {
    /// Whether a run of the agent may offer a tool called `name`: one of its
    /// own, or a name one of its MCP servers' tools may have.
    pub(crate) fn may_offer(&self, name: &str) -> bool {
        self.tools.contains(name) || self.config.may_name_mcp_tool(name)
    }
}

impl Agent {
    pub(crate) fn new(inner: AgentInner) -> Self {
        Agent { inner: Arc::new(inner) }
    }

    /// The agent's parts.
    pub(crate) fn parts(&self) -> &AgentInner {
        &self.inner
    }

    /// Gives up this handle, returning the agent itself when this was the last one.
    pub(crate) fn into_last(self) -> Option<AgentInner> {
        Arc::into_inner(self.inner)
    }

    /// The configuration the agent was built from.
    pub fn config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// The exchanges of the cassette the agent's model replays
    /// (`model.record`) that none of its requests has used so far, in
    /// cassette order; `None` when the model replays no cassette. Read once
    /// the runs are over, it says what a replay left out.
    pub fn unused_recordings(&self) -> Option<Vec<UnusedExchange>> {
        self.inner.generator.unused_recordings()
    }

    /// The names of the agent's own tools (built-in and host), in the order
    /// offered; its MCP servers' tools come after them.
    pub fn tool_names(&self) -> Vec<&str> {
        self.inner.tools.tools().iter().map(|tool| Tool::name(tool)).collect()
    }
}
