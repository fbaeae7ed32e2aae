//! Per-tool options: how a tool runs and what its failures mean.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;

/// Whether calls may run alongside others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// Calls run concurrently with the rest of their batch.
    #[default]
    Parallel,
    /// Any call of this tool makes its whole batch run one call at a time.
    Sequential,
}

/// What a failure of the tool's function means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The error goes back to the model as an error result; the run goes on.
    #[default]
    Feed,
    /// The error is recorded, the batch finishes, and the run ends `failed`.
    Fatal,
}

/// The options JSON given with a tool (`ferrule_tool_spec.options`).
/// Unknown fields are rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOptions {
    /// Parallel (default) or sequential.
    #[serde(default)]
    pub execution: Execution,
    /// Bound on one invocation in milliseconds; 0 or absent uses the agent's
    /// `tool_timeout_ms`.
    #[serde(default)]
    pub timeout_ms: u64,
    /// A call runs only once the host approved it: until then its batch waits
    /// and the run ends `interrupted` (DESIGN section 9).
    #[serde(default)]
    pub needs_approval: bool,
    /// Withheld from the model until another tool's result names it in
    /// `added_tools`.
    #[serde(default)]
    pub deferred: bool,
    /// Ask the provider to guarantee arguments match the schema.
    #[serde(default)]
    pub strict: bool,
    /// The host's callback returns at once and completes the call later from a
    /// thread of its own, so ferrule calls it without a thread hand-off. Only
    /// host (C ABI) tools use it.
    #[serde(default)]
    pub nonblocking: bool,
    /// Feed (default) or fatal.
    #[serde(default)]
    pub on_error: OnError,
}

impl ToolOptions {
    /// Parses options JSON; empty text means the defaults.
    pub fn from_json(json: &str) -> Result<Self> {
        if json.trim().is_empty() {
            return Ok(ToolOptions::default());
        }
        crate::json::parse_document("tool options", json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn empty_options_are_defaults() {
        assert_eq!(ToolOptions::from_json("").unwrap(), ToolOptions::default());
    }

    #[test]
    fn unknown_option_field_is_named() {
        let err = ToolOptions::from_json(r#"{"paralel": true}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArg);
        assert!(err.message.contains("paralel"), "{}", err.message);
    }

    #[test]
    fn invalid_options_json_is_invalid_json() {
        assert_eq!(ToolOptions::from_json("{").unwrap_err().code, ErrorCode::InvalidJson);
    }
}
