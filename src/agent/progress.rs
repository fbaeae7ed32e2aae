//! A run's progress: everything it has done that decides what it does next,
//! apart from what it was built with (its agent) and what it only holds while it
//! runs. One type, kept by the live run and written, as it is, into the state of
//! an interrupted run, from which a resumed run takes it back.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::approval::Decision;
use crate::message::{Message, Usage};

/// What a run has done so far. Its fields are those of the state format
/// (`"state"` in an interrupted run's result), `version` and `awaiting` aside.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunProgress {
    /// The transcript; in a state, it ends with the assistant message whose calls
    /// wait.
    pub(crate) messages: Vec<Message>,
    /// How many of `messages` were the (first) run's input.
    pub(crate) input_messages: usize,
    /// Model requests made, across resumes.
    pub(crate) rounds: u32,
    /// Tokens used, across resumes.
    pub(crate) usage: Usage,
    /// Answers sent back for not satisfying the output schema.
    pub(crate) output_corrections: u32,
    /// Deferred tools disclosed by an earlier result, sorted.
    pub(crate) disclosed: BTreeSet<String>,
    /// Decisions given with `always`, by tool.
    pub(crate) standing: BTreeMap<String, Decision>,
    /// Decisions for calls of the batch that runs first (given when resuming),
    /// by call id; forgotten once that batch has run.
    pub(crate) decided: BTreeMap<String, Decision>,
    /// The run executes one host message and asks no model.
    pub(crate) execute_only: bool,
    /// The run's tool set (run input `tools`), sorted; null: every tool.
    pub(crate) tools: Option<BTreeSet<String>>,
    /// Messages injected into the run that its transcript does not hold yet.
    pub(crate) injections: Vec<Message>,
    /// The tool set a `turn_start` hook chose for the turn of the batch that
    /// runs first (or that the run was interrupted for).
    pub(crate) turn_tools: Option<Vec<String>>,
    /// The handoffs the run made, in order, by name: the last one's agent
    /// answers now (none: the run's own agent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) handed_to: Vec<String>,
}

impl RunProgress {
    /// The progress of a run that starts from `messages`, all of them its input.
    pub(crate) fn from_input(messages: Vec<Message>) -> Self {
        RunProgress { input_messages: messages.len(), messages, ..RunProgress::default() }
    }
}
