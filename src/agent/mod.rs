//! Agents and runs: an [`Agent`] is built once from a configuration and tools, is
//! immutable, and starts any number of concurrent [`Run`]s.

mod approval;
mod batch;
mod call_updates;
mod config;
mod eager;
mod events;
mod handle;
mod history;
mod hooks;
mod input;
mod result;
mod run;
mod state;
mod transcript;
mod transcript_json;
mod validation;

use std::collections::HashMap;
use std::sync::Arc;

pub use approval::{Decision, Interruption};
pub use config::AgentConfig;
pub use events::{Event, EventKind, EventSink};
pub use handle::Run;
pub use history::HistoryConfig;
pub use input::{RunInput, RunSource};
pub use result::{RunResult, RunStatus};
pub use state::RunState;

use run::RunOrigin;

use crate::error::{Error, ErrorCode, Result};
use crate::hook::Hook;
use crate::message::{Message, UserMessage};
use crate::provider::{Generator, ToolChoice, ToolDefinition};
use crate::runtime::Threads;
use crate::tool::Tool;

/// Collects the configuration and tools of an agent. Not shared between threads.
pub struct AgentBuilder {
    config: AgentConfig,
    tools: Vec<Tool>,
    hooks: Vec<Hook>,
    generator: Option<Box<dyn Generator>>,
}

impl AgentBuilder {
    /// A builder from a checked configuration.
    pub fn new(config: AgentConfig) -> Result<Self> {
        config.check()?;
        Ok(AgentBuilder { config, tools: Vec::new(), hooks: Vec::new(), generator: None })
    }

    /// A builder from configuration JSON.
    pub fn from_json(json: &str) -> Result<Self> {
        AgentBuilder::new(AgentConfig::from_json(json)?)
    }

    /// Adds a tool; `DUPLICATE_TOOL` when one with its name is already there.
    pub fn add_tool(&mut self, tool: Tool) -> Result<()> {
        self.check_unique(tool.name())?;
        self.tools.push(tool);
        Ok(())
    }

    /// Adds a hook; hooks of one stage are consulted in the order they were added.
    pub fn add_hook(&mut self, hook: Hook) {
        self.hooks.push(hook);
    }

    /// `DUPLICATE_TOOL` when a tool called `name` was already added.
    pub fn check_unique(&self, name: &str) -> Result<()> {
        if self.tools.iter().any(|t| t.name() == name) {
            return Err(Error::new(ErrorCode::DuplicateTool, format!("a tool named \"{name}\" was already added")));
        }
        Ok(())
    }

    /// Uses `generator` instead of the one `model.provider` names.
    pub fn generator(&mut self, generator: Box<dyn Generator>) {
        self.generator = Some(generator);
    }

    /// Builds the agent.
    pub fn build(self) -> Result<Agent> {
        let AgentBuilder { config, tools, hooks, generator } = self;
        let tools = match &config.builtin_tools {
            Some(builtins) => crate::builtin::select(builtins, tools, config.model.api_key_env.as_deref())?,
            None => tools,
        };
        let generator = match generator {
            Some(generator) => generator,
            None => crate::provider::generator_for(&config.model)?,
        };
        let by_name: HashMap<String, usize> = tools.iter().enumerate().map(|(i, t)| (t.name().to_owned(), i)).collect();
        if let ToolChoice::Named(name) = &config.tool_choice {
            if !by_name.contains_key(name) {
                return Err(Error::invalid_arg(format!("agent config: tool_choice names unknown tool \"{name}\"")));
            }
        }
        let definitions = tools
            .iter()
            .map(|t| ToolDefinition {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
                input_schema: t.schema().document().clone(),
                strict: t.options().strict,
            })
            .collect();
        let output = config
            .output_schema
            .clone()
            .map(crate::tool::InputSchema::compile)
            .transpose()
            .map_err(|e| Error::new(e.code, format!("agent config: output_schema: {}", e.message)))?;
        Ok(Agent { inner: Arc::new(AgentInner { config, tools, hooks, by_name, definitions, generator, output }) })
    }
}

/// A built agent: immutable, cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

pub(crate) struct AgentInner {
    pub(crate) config: AgentConfig,
    pub(crate) tools: Vec<Tool>,
    pub(crate) hooks: Vec<Hook>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) definitions: Vec<ToolDefinition>,
    pub(crate) generator: Box<dyn Generator>,
    /// The compiled `output_schema`.
    pub(crate) output: Option<crate::tool::InputSchema>,
}

impl AgentInner {
    /// The tool called `name`, when it is registered.
    pub(crate) fn tool(&self, name: &str) -> Option<(usize, &Tool)> {
        self.by_name.get(name).map(|&i| (i, &self.tools[i]))
    }
}

impl Agent {
    /// Starts a run on ferrule's runtime. Events go to `sink` (if any), one at a
    /// time, on ferrule's event threads. Dropping every handle of the run cancels
    /// it. Fails with `INVALID_ARG` when a resume does not fit this agent (see
    /// [`RunSource::Resume`]) and `RESOURCE_EXHAUSTED` when the runtime cannot
    /// start its threads.
    pub fn start(&self, input: RunInput, sink: Option<Box<dyn EventSink>>) -> Result<Run> {
        let origin = self.begin(input)?;
        Ok(self.start_on(crate::runtime::threads()?, origin, sink))
    }

    /// Where a run from `input` begins on this agent; a resume is checked against
    /// the agent's tools and the decisions here.
    pub(crate) fn begin(&self, input: RunInput) -> Result<RunOrigin> {
        let mut origin = match input.source {
            RunSource::Prompt(prompt) => RunOrigin::fresh(vec![Message::User(UserMessage::text(prompt))], None),
            RunSource::Messages(messages) => RunOrigin::fresh(messages, None),
            RunSource::Execute { messages, execute } => RunOrigin::fresh(messages, Some(execute)),
            RunSource::Resume { state, decisions } => state.resume(decisions, &self.inner)?,
        };
        if let Some(tools) = input.tools {
            if origin.resumed {
                return Err(Error::invalid_arg(
                    "run input: \"resume\" takes no \"tools\": the state keeps the run's tool set",
                ));
            }
            if let Some(name) = tools.iter().find(|name| self.inner.tool(name).is_none()) {
                return Err(Error::invalid_arg(format!(
                    "run input: tools names \"{name}\", which the agent does not have (it has {})",
                    self.tool_names().join(", ")
                )));
            }
            if let ToolChoice::Named(name) = &self.inner.config.tool_choice {
                if !tools.contains(name) {
                    return Err(Error::invalid_arg(format!(
                        "run input: tools leaves out \"{name}\", which the agent's tool_choice names"
                    )));
                }
            }
            origin.tools = Some(tools.into_iter().collect());
        }
        Ok(origin)
    }

    /// Starts a run on threads the caller already holds; cannot fail, so a caller
    /// that must not lose `sink` gets the threads first.
    pub(crate) fn start_on(
        &self,
        threads: &'static Threads,
        origin: RunOrigin,
        sink: Option<Box<dyn EventSink>>,
    ) -> Run {
        run::start(threads, self.clone(), origin, sink)
    }

    /// Gives up this handle, returning the agent itself when this was the last one.
    fn into_last(self) -> Option<AgentInner> {
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
