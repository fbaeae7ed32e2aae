//! How a run ended: its status, transcript, usage and error.

use schemars::JsonSchema;
use serde::Serialize;

use super::approval::Interruption;
use super::host_calls::CallOutcome;
use super::state::RunState;
use crate::error::Error;
use crate::message::{Message, ToolCall, Usage};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave an answer without tool calls.
    Completed,
    /// Every call of the last batch returned a successful terminating result.
    Terminated,
    /// The run paused for the host (approvals, or calls it returned for the
    /// host to run); it can be resumed.
    Interrupted,
    /// The host cancelled the run.
    Cancelled,
    /// The model request failed, a fatal tool failed, or ferrule panicked.
    Failed,
    /// The run used its `max_rounds` model requests without finishing.
    MaxRounds,
}

/// The outcome of a run, as `ferrule_run_wait` and the `run_end` event give it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RunResult {
    /// How the run ended.
    pub status: RunStatus,
    /// The last assistant message, if the model produced one.
    #[serde(rename = "final")]
    pub final_message: Option<Message>,
    /// The whole transcript (input included), replayable as a later run's
    /// input; empty when the run input's `result_messages` is `none`.
    pub messages: Vec<Message>,
    /// Tokens used by every model request of the run and of the agents it
    /// called as tools (each counted once).
    pub usage: Usage,
    /// Model requests made.
    pub rounds: u32,
    /// Why the run failed, when it did.
    pub error: Option<Error>,
    /// The final answer parsed as JSON, when the agent has an `output_schema`
    /// and the answer satisfied it; null otherwise.
    pub output: Option<serde_json::Value>,
    /// The calls an `interrupted` run waits on a decision for; empty otherwise.
    pub interruptions: Vec<Interruption>,
    /// The calls an `interrupted` run returned for the host to run (run input
    /// `"calls": "return"`), with the arguments their function gets, in call
    /// order; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ToolCall>,
    /// How the call of an `invoke` run ended, for the resume's `results`;
    /// absent otherwise, and when the run was cancelled first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<CallOutcome>,
    /// What an `interrupted` run needs to go on (run input `resume`); null
    /// otherwise.
    pub state: Option<RunState>,
    /// The agent answering when the run stopped, by the name of the handoff
    /// that gave it the run; null when no handoff was made.
    pub agent: Option<String>,
}
