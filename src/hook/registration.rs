//! How a host hook is registered (`ferrule_agent_builder_add_hook`): the stages
//! it is consulted at, and whether its callback returns at once.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::HookStage;
use crate::error::{Error, Result};

/// The stages JSON of `ferrule_agent_builder_add_hook`: `["tool_call"]`, or
/// `{"stages": ["tool_call"], "nonblocking": true, "history": "none"}`
/// (or `"new"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HookStages {
    /// The stages; the callback may block.
    List(Vec<HookStage>),
    /// The stages, and how the callback is called.
    Options(HookOptions),
}

/// A hook's stages and how its callback is called.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookOptions {
    /// The stages the hook is consulted at: at least one, each once.
    pub stages: Vec<HookStage>,
    /// The callback returns at once and responds later from a thread of the
    /// host's, so ferrule calls it on its runtime (as a `nonblocking` tool).
    #[serde(default)]
    pub nonblocking: bool,
    /// Whether the `run_start` and `turn_start` payloads carry the history.
    #[serde(default)]
    pub history: HookHistory,
}

/// How much of the run's history a hook's `run_start` and `turn_start`
/// payloads carry. Both always carry `message_count`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookHistory {
    /// Every message, in `messages`.
    #[default]
    Full,
    /// None: `messages` is empty. A consultation then costs the same at the
    /// thousandth turn as at the first, where the whole history costs in
    /// proportion to its length.
    None,
    /// The messages added since the hook's last `turn_start` payload in the
    /// run, from index `messages_from`: all of them (from 0) in a `run_start`
    /// payload, in the hook's first `turn_start` payload and in the first after
    /// the history was replaced. A host that keeps what it was given (for
    /// instance with `ferrule_hook_set_run_state`) has the whole history at
    /// each turn for what the new messages cost.
    New,
}

impl HookOptions {
    /// Reads the stages JSON, each form strictly, so that the error names what is
    /// wrong; the stages are checked (at least one, each once).
    pub fn from_json(json: &str) -> Result<HookOptions> {
        let value: Value = crate::json::parse_document("hook stages", json)?;
        let stages = match value {
            Value::Object(_) => serde_json::from_value(value).map(HookStages::Options),
            other => serde_json::from_value(other).map(HookStages::List),
        };
        let options = match stages.map_err(|e| Error::invalid_arg(format!("hook stages: {e}")))? {
            HookStages::List(stages) => HookOptions { stages, nonblocking: false, history: HookHistory::Full },
            HookStages::Options(options) => options,
        };
        HookStage::check_list(&options.stages)?;
        Ok(options)
    }
}
