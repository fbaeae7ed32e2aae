//! The agent configuration JSON (`ferrule_agent_builder_new`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::history::HistoryConfig;
use crate::builtin::BuiltinToolsConfig;

use crate::error::{Error, Result};
use crate::mcp::McpServerConfig;
use crate::provider::{ModelConfig, ProviderKind, ToolChoice};
use crate::tool::Execution;
use crate::trace::TraceConfig;

/// The whole agent configuration. Unknown fields are rejected by name.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name in traces (`gen_ai.agent.name`). An agent added to
    /// another as a tool or a handoff is known there by that tool's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Which model, and how to reach it.
    pub model: ModelConfig,
    /// The system prompt, sent before the transcript on every request (it is not
    /// part of the transcript).
    #[serde(default)]
    pub system: Option<String>,
    /// `parallel` (default) or `sequential` for every batch.
    #[serde(default)]
    pub tool_execution: Execution,
    /// Which tool the model must use.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Model requests per run before it ends with `max_rounds`.
    #[serde(default = "default_max_rounds")]
    #[schemars(range(min = 1))]
    pub max_rounds: u32,
    /// Calls of one parallel batch running at once.
    #[serde(default = "default_max_concurrent_tools")]
    #[schemars(range(min = 1))]
    pub max_concurrent_tools: usize,
    /// Default bound on one tool call in milliseconds; 0 means none.
    #[serde(default)]
    pub tool_timeout_ms: u64,
    /// Bound on a whole run in milliseconds; 0 means none. At the deadline an
    /// in-flight model request is abandoned, running tools are cancelled, and the
    /// run ends `failed` with code `TIMEOUT`.
    #[serde(default)]
    pub run_timeout_ms: u64,
    /// A JSON Schema (Draft 2020-12) the final answer must satisfy: the answer's
    /// text is parsed as JSON and validated, and the run result's `output` holds
    /// it.
    #[serde(default)]
    pub output_schema: Option<serde_json::Value>,
    /// How many times an answer that fails `output_schema` goes back to the model
    /// with what is wrong, before the run fails with `INVALID_OUTPUT`.
    #[serde(default = "default_output_retries")]
    pub output_retries: u32,
    /// The history budget: requests leave out the oldest messages to stay within
    /// it; absent means none.
    #[serde(default)]
    pub history: Option<HistoryConfig>,
    /// Bound on one hook's decision in milliseconds; 0 means none. A hook that
    /// does not decide in time ends the run `failed` with `TIMEOUT`.
    #[serde(default = "default_hook_timeout_ms")]
    pub hook_timeout_ms: u64,
    /// Bound on the text of one tool result in bytes; 0 means none. Longer text is
    /// cut with a note saying so.
    #[serde(default)]
    pub max_tool_result_bytes: usize,
    /// The built-in tools (read, bash, edit, write, apply_patch, list_files);
    /// absent means none.
    #[serde(default)]
    pub builtin_tools: Option<BuiltinToolsConfig>,
    /// MCP servers whose tools the model is offered beside the agent's own,
    /// by the name each server's tools are prefixed with.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// How runs are traced when the host set a tracer: content captured,
    /// `traceparent` sent on.
    #[serde(default)]
    pub trace: TraceConfig,
}

fn default_max_rounds() -> u32 {
    50
}

fn default_hook_timeout_ms() -> u64 {
    60_000
}

fn default_output_retries() -> u32 {
    2
}

fn default_max_concurrent_tools() -> usize {
    16
}

impl AgentConfig {
    /// Parses and checks the configuration JSON.
    pub fn from_json(json: &str) -> Result<Self> {
        let config: AgentConfig = crate::json::parse_document("agent config", json)?;
        config.check()?;
        Ok(config)
    }

    /// Checks values serde cannot.
    pub fn check(&self) -> Result<()> {
        if self.max_rounds == 0 {
            return Err(Error::invalid_arg("agent config: max_rounds must be at least 1"));
        }
        if self.history.is_some_and(|h| h.max_input_tokens == 0) {
            return Err(Error::invalid_arg("agent config: history.max_input_tokens must be at least 1"));
        }
        if self.max_concurrent_tools == 0 {
            return Err(Error::invalid_arg("agent config: max_concurrent_tools must be at least 1"));
        }
        if self.model.provider != ProviderKind::Scripted && !self.model.script.is_empty() {
            return Err(Error::invalid_arg("agent config: model.script is only for the \"scripted\" provider"));
        }
        self.mcp_servers.iter().try_for_each(|(name, server)| server.check(name))
    }

    /// Whether `name` may be the model's name of a tool of one of the MCP
    /// servers (whose tools come and go, so only the names' form is known).
    pub fn may_name_mcp_tool(&self, name: &str) -> bool {
        self.mcp_servers.iter().any(|(server, config)| crate::mcp::may_name(server, name, config.prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn minimal_config_has_design_defaults() {
        let config = AgentConfig::from_json(r#"{"model": {"provider": "scripted"}}"#).unwrap();
        assert_eq!(config.max_rounds, 50);
        assert_eq!(config.max_concurrent_tools, 16);
        assert_eq!(config.tool_choice, ToolChoice::Auto);
        assert_eq!(config.model.max_retries, 2);
        assert!(config.model.stream);
    }

    #[test]
    fn unknown_fields_are_named_at_every_level() {
        for (json, field) in [
            (r#"{"model": {"provider": "scripted"}, "max_round": 3}"#, "max_round"),
            (r#"{"model": {"provider": "scripted", "temp": 1}}"#, "temp"),
            (r#"{"model": {"provider": "scripted", "script": [{"txt": "a"}]}}"#, "txt"),
            (r#"{"model": {"provider": "scripted", "timeouts": {"idle": 1}}}"#, "idle"),
        ] {
            let err = AgentConfig::from_json(json).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArg, "{json}");
            assert!(err.message.contains(field), "{json}: {}", err.message);
        }
    }

    #[test]
    fn broken_text_is_invalid_json_even_when_a_field_is_wrong_first() {
        for json in [r#"{"bogus": 1"#, "[1,2", "5 6", r#"{"model": {"provider": "scripted"}, "max_round": 3"#] {
            assert_eq!(AgentConfig::from_json(json).unwrap_err().code, ErrorCode::InvalidJson, "{json}");
        }
    }

    #[test]
    fn tool_choice_forms() {
        let named =
            AgentConfig::from_json(r#"{"model": {"provider": "scripted"}, "tool_choice": {"name": "x"}}"#).unwrap();
        assert_eq!(named.tool_choice, ToolChoice::Named("x".into()));
        let err =
            AgentConfig::from_json(r#"{"model": {"provider": "scripted"}, "tool_choice": "always"}"#).unwrap_err();
        assert!(err.message.contains("tool_choice"), "{}", err.message);
    }

    #[test]
    fn zero_bounds_are_rejected() {
        let err = AgentConfig::from_json(r#"{"model": {"provider": "scripted"}, "max_rounds": 0}"#).unwrap_err();
        assert!(err.message.contains("max_rounds"));
    }
}
