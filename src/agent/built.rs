//! A built agent: its configuration, tools, hooks and model, immutable and
//! shared by every run it starts.

use std::collections::HashMap;
use std::sync::Arc;

use super::config::AgentConfig;
use crate::hook::Hook;
use crate::provider::{Generator, ToolDefinition};
use crate::tool::{InputSchema, Tool};

/// A built agent: immutable, cheap to clone, usable from any thread. Built with
/// [`AgentBuilder`](super::AgentBuilder); runs start with [`Agent::start`].
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

/// What an agent is made of. Never changes once built.
pub(crate) struct AgentInner {
    pub(crate) config: AgentConfig,
    /// The tools, built-in and host, in the order offered.
    pub(crate) tools: Vec<Tool>,
    pub(crate) hooks: Vec<Hook>,
    pub(crate) by_name: HashMap<String, usize>,
    /// The tools as providers describe them, in the order of `tools`.
    pub(crate) definitions: Vec<ToolDefinition>,
    pub(crate) generator: Box<dyn Generator>,
    /// The compiled `output_schema`.
    pub(crate) output: Option<InputSchema>,
}

impl AgentInner {
    /// The tool called `name`, when it is registered.
    pub(crate) fn tool(&self, name: &str) -> Option<(usize, &Tool)> {
        self.by_name.get(name).map(|&i| (i, &self.tools[i]))
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

    /// The names of the agent's tools (built-in and host), in the order offered.
    pub fn tool_names(&self) -> Vec<&str> {
        self.inner.tools.iter().map(Tool::name).collect()
    }
}
