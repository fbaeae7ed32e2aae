//! Building an agent: a checked configuration, host tools and hooks, and the
//! model; `build` selects the built-in tools and compiles every schema.

use std::collections::HashMap;

use super::built::{Agent, AgentInner};
use super::config::AgentConfig;
use crate::error::{Error, ErrorCode, Result};
use crate::hook::Hook;
use crate::provider::{Generator, ToolChoice, ToolDefinition};
use crate::tool::{InputSchema, Tool};

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
            .map(InputSchema::compile)
            .transpose()
            .map_err(|e| Error::new(e.code, format!("agent config: output_schema: {}", e.message)))?;
        Ok(Agent::new(AgentInner { config, tools, hooks, by_name, definitions, generator, output }))
    }
}
