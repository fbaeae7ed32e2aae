//! Calls the host runs: run input `"calls": "return"` makes a run stop where
//! it would start a batch's calls and hand them back; the host runs each (an
//! `invoke` run, or code of its own) and resumes the run with how each ended.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tool::{ToolOutcome, ToolResult};

/// Who runs the calls of a run's batches (run input `calls`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallMode {
    /// ferrule runs them (the default).
    #[default]
    Run,
    /// The run stops, status `interrupted`, where it would start the calls of
    /// a batch that passed validation, hooks and approval, and returns them
    /// in `calls`, at most as many as it would run at once (one when the
    /// batch is sequential); the host runs each and resumes with `results`.
    /// Calls of agents and handoffs still run inside the run.
    Return,
}

/// How a call the host ran ended (a resume's `results`, an `invoke` run's
/// `outcome`): `{"result": <a tool result>}` or `{"failed": "<why>"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum CallOutcome {
    /// The tool's result, as a tool function returns it (it may be an error
    /// result, which the model sees like any other).
    Result(ToolResult),
    /// The tool failed (it returned an error, timed out, or panicked): the
    /// text, written for the model, says why, and the tool's `on_error` says
    /// what that means for the run.
    Failed(String),
}

impl CallOutcome {
    /// The outcome as the call's function would have returned it.
    pub(crate) fn into_tool_outcome(self) -> ToolOutcome {
        match self {
            CallOutcome::Result(result) => ToolOutcome::Completed(result),
            CallOutcome::Failed(text) => ToolOutcome::Failed(text),
        }
    }

    /// The outcome of a call whose result is `result`, a failure of its tool
    /// when `tool_failed` (its error text then says why).
    pub(crate) fn of(result: ToolResult, tool_failed: bool) -> Self {
        match tool_failed {
            true => CallOutcome::Failed(crate::message::text_of(&result.content)),
            false => CallOutcome::Result(result),
        }
    }
}
