//! Building an agent: a checked configuration, host tools and hooks, and the
//! model; `build` selects the built-in tools and compiles every schema.

use std::collections::HashMap;
use std::sync::Arc;

use super::agent_tool::{check_mode, AgentCall, AgentToolSpec, HandoffCall};
use super::agent_tool_options::AgentToolMode;
use super::built::{Agent, AgentInner, Handoff};
use super::config::AgentConfig;
use super::mcp_tools::McpTools;
use super::nesting::MAX_AGENT_DEPTH;
use super::tool_set::ToolSet;
use crate::error::{Error, ErrorCode, Result};
use crate::hook::Hook;
use crate::mcp::McpServers;
use crate::provider::{Generator, ToolChoice};
use crate::tool::{InputSchema, Tool, ToolOptions, ToolSpec};
use crate::trace::Tracer;

/// The largest message read from an MCP server when `max_tool_result_bytes`
/// sets no bound (and the least one when it does: tool lists and images
/// need room).
const MCP_MESSAGE_BYTES: usize = 16 << 20;
const LEAST_MCP_MESSAGE_BYTES: usize = 1 << 20;

/// Collects the configuration and tools of an agent. Not shared between threads.
pub struct AgentBuilder {
    config: AgentConfig,
    tools: Vec<Tool>,
    hooks: Vec<Hook>,
    generator: Option<Box<dyn Generator>>,
    handoffs: HashMap<String, Handoff>,
    called: HashMap<String, Agent>,
    /// The height of the agent's tree of agents so far.
    height: u32,
}

impl AgentBuilder {
    /// A builder from a checked configuration.
    pub fn new(config: AgentConfig) -> Result<Self> {
        config.check()?;
        Ok(AgentBuilder {
            config,
            tools: Vec::new(),
            hooks: Vec::new(),
            generator: None,
            handoffs: HashMap::new(),
            called: HashMap::new(),
            height: 1,
        })
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

    /// Adds an agent the model is offered: as a tool named `spec.name`, whose
    /// calls run it nested in the calling run, or as a handoff, the tool
    /// `transfer_to_<name>`, which hands the run to it. The name, schema and
    /// options are checked as a tool's (`DUPLICATE_TOOL` for a name taken);
    /// `RESOURCE_EXHAUSTED` when the tree of agents would be deeper than 8.
    pub fn add_agent(&mut self, spec: AgentToolSpec) -> Result<()> {
        check_mode(&spec)?;
        let height = spec.agent.parts().height + 1;
        if height > MAX_AGENT_DEPTH {
            return Err(Error::new(
                ErrorCode::ResourceExhausted,
                format!(
                    "agent \"{}\": agents would nest {height} deep (an agent in an agent ...), and the bound is {MAX_AGENT_DEPTH}",
                    spec.name
                ),
            ));
        }
        let options = ToolOptions {
            timeout_ms: spec.options.timeout_ms.unwrap_or(0),
            needs_approval: spec.options.needs_approval,
            ..ToolOptions::default()
        };
        let name: Arc<str> = spec.name.as_str().into();
        let tool = match spec.mode {
            AgentToolMode::Tool => {
                let tool_spec = ToolSpec::new(&spec.name, spec.description.as_str(), spec.schema(), options)?;
                let input_argument = spec.input_schema.is_none();
                self.check_unique(tool_spec.name())?;
                self.called.insert(tool_spec.name().to_owned(), spec.agent.clone());
                tool_spec.implement(AgentCall { agent: spec.agent, name, input_argument })
            }
            AgentToolMode::Handoff => {
                crate::tool::check_name(&spec.name)?;
                let description = match spec.description.trim() {
                    "" => format!("Hand the conversation to the agent \"{}\".", spec.name),
                    given => given.to_owned(),
                };
                let tool_spec =
                    ToolSpec::new(format!("transfer_to_{}", spec.name), description, spec.schema(), options)?;
                self.check_unique(tool_spec.name())?;
                let handoff = Handoff {
                    name: name.clone(),
                    agent: spec.agent,
                    messages: spec.options.handoff_messages.unwrap_or_default(),
                };
                self.handoffs.insert(tool_spec.name().to_owned(), handoff);
                tool_spec.implement(HandoffCall { name })
            }
        };
        self.add_tool(tool)?;
        self.height = self.height.max(height);
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

    /// Sets the host's model, which the configuration must name: `"model":
    /// {"provider": "host", "name": name}`. `INVALID_ARG` when it names
    /// another provider or another name, or when a model was already set.
    pub fn host_model(&mut self, name: &str, generator: Box<dyn Generator>) -> Result<()> {
        self.check_host_model(name)?;
        self.generator = Some(generator);
        Ok(())
    }

    /// What [`Self::host_model`] checks, before anything is handed over.
    pub fn check_host_model(&self, name: &str) -> Result<()> {
        let model = &self.config.model;
        if model.provider != crate::provider::ProviderKind::Host {
            return Err(Error::invalid_arg(
                "a host model was set, but model.provider is not \"host\"; configure {\"provider\": \"host\", \"name\": ...}",
            ));
        }
        if model.name.as_deref() != Some(name) {
            return Err(Error::invalid_arg(format!(
                "the host model is named {name:?}, but model.name is {:?}",
                model.name.as_deref().unwrap_or("")
            )));
        }
        if self.generator.is_some() {
            return Err(Error::invalid_arg("a model was already set for this agent"));
        }
        // Settings of the HTTP providers mean nothing here: refused, not ignored.
        let http_only = [
            ("base_url", model.base_url.is_some()),
            ("api_key_env", model.api_key_env.is_some()),
            ("headers", !model.headers.is_empty()),
            ("thinking", model.thinking.is_some()),
            ("server_history", model.server_history),
            ("encrypted_reasoning", model.encrypted_reasoning.is_some()),
            ("record", model.record.is_some()),
        ];
        if let Some((field, _)) = http_only.iter().find(|(_, given)| *given) {
            return Err(Error::invalid_arg(format!("model.{field} means nothing to a host model")));
        }
        Ok(())
    }

    /// The `model` configuration.
    pub fn model_config(&self) -> &crate::provider::ModelConfig {
        &self.config.model
    }

    /// Builds the agent. Its MCP servers start connecting in the background
    /// on ferrule's runtime (`RESOURCE_EXHAUSTED` when the runtime cannot
    /// start); a run's first turn waits for them.
    pub fn build(self) -> Result<Agent> {
        let AgentBuilder { config, tools, hooks, generator, handoffs, called, height } = self;
        let tools = match &config.builtin_tools {
            Some(builtins) => crate::builtin::select(builtins, tools, config.model.api_key_env.as_deref())?,
            None => tools,
        };
        let generator = match generator {
            Some(generator) => generator,
            None => crate::provider::generator_for(&config.model)?,
        };
        let tools = Arc::new(ToolSet::new(tools.into_iter().map(Arc::new).collect()));
        if let ToolChoice::Named(name) = &config.tool_choice {
            if !tools.contains(name) && !config.may_name_mcp_tool(name) {
                return Err(Error::invalid_arg(format!("agent config: tool_choice names unknown tool \"{name}\"")));
            }
        }
        let output = config
            .output_schema
            .clone()
            .map(InputSchema::compile)
            .transpose()
            .map_err(|e| Error::new(e.code, format!("agent config: output_schema: {}", e.message)))?;
        let mcp = match config.mcp_servers.is_empty() {
            true => None,
            false => {
                let runtime = crate::runtime::threads()?.runtime.handle();
                let largest = match config.max_tool_result_bytes {
                    0 => MCP_MESSAGE_BYTES,
                    bound => bound.max(LEAST_MCP_MESSAGE_BYTES),
                };
                let taken = tools.names().map(str::to_owned).collect();
                Some(McpTools::new(McpServers::start(&config.mcp_servers, taken, largest, runtime)))
            }
        };
        let tracer = Arc::new(Tracer::new(config.trace.clone())?);
        Ok(Agent::new(AgentInner { config, tools, hooks, generator, output, mcp, handoffs, called, height, tracer }))
    }
}
