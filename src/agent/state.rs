//! The portable state of an interrupted run, and resuming from it.
//!
//! The state is plain JSON with a version, so a host can store it anywhere and
//! resume in another process with an agent built from the same configuration and
//! tools. It holds everything the run had that its transcript does not say:
//! rounds and usage so far, disclosed deferred tools, standing decisions, which
//! calls wait for a decision, and whether the run was execute-only.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approval::{Approvals, Decision, Interruption};
use super::run::RunOrigin;
use super::AgentInner;
use crate::error::{Error, Result};
use crate::message::{Message, StopReason, Usage};

/// The version of the state this ferrule writes and reads.
const STATE_VERSION: u64 = 1;

/// What an interrupted run needs to go on (`"state"` in its result).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunState {
    version: u64,
    /// The transcript, ending with the assistant message whose calls wait.
    messages: Vec<Message>,
    /// How many of `messages` were the first run's input.
    input_messages: usize,
    rounds: u32,
    usage: Usage,
    output_corrections: u32,
    /// Deferred tools disclosed so far, sorted.
    disclosed: Vec<String>,
    /// Decisions given with `always`, by tool.
    standing: BTreeMap<String, Decision>,
    /// The ids of the calls that wait for a decision, in call order.
    awaiting: Vec<String>,
    /// Decisions already given for calls of the waiting message (when its batch
    /// was interrupted again after a resume), by call id.
    decided: BTreeMap<String, Decision>,
    /// The run executes one host message and asks no model.
    execute_only: bool,
    /// The run's tool set (run input `tools`), sorted; null: every tool.
    tools: Option<Vec<String>>,
    /// Messages injected into the run that its transcript does not hold yet.
    injections: Vec<Message>,
    /// The tool set a `turn_start` hook chose for the waiting batch's turn.
    turn_tools: Option<Vec<String>>,
}

/// What a run had when it stopped for approval.
pub(crate) struct Interrupted<'a> {
    pub(crate) messages: &'a [Message],
    pub(crate) input_messages: usize,
    pub(crate) rounds: u32,
    pub(crate) usage: Usage,
    pub(crate) output_corrections: u32,
    pub(crate) disclosed: &'a HashSet<String>,
    pub(crate) approvals: &'a Approvals,
    pub(crate) interruptions: &'a [Interruption],
    pub(crate) execute_only: bool,
    pub(crate) tools: Option<&'a HashSet<String>>,
    pub(crate) injections: &'a [Message],
    pub(crate) turn_tools: Option<&'a [String]>,
}

impl RunState {
    /// The state of a run that stopped for approval.
    pub(crate) fn capture(run: Interrupted<'_>) -> Self {
        let mut disclosed: Vec<String> = run.disclosed.iter().cloned().collect();
        disclosed.sort();
        RunState {
            version: STATE_VERSION,
            messages: run.messages.to_vec(),
            input_messages: run.input_messages,
            rounds: run.rounds,
            usage: run.usage,
            output_corrections: run.output_corrections,
            disclosed,
            standing: run.approvals.standing.clone(),
            awaiting: run.interruptions.iter().map(|i| i.call_id.clone()).collect(),
            decided: run.approvals.by_call.clone(),
            execute_only: run.execute_only,
            tools: run.tools.map(|tools| {
                let mut tools: Vec<String> = tools.iter().cloned().collect();
                tools.sort();
                tools
            }),
            injections: run.injections.to_vec(),
            turn_tools: run.turn_tools.map(<[String]>::to_vec),
        }
    }

    /// Reads a state from run input: its version first (so a state from a later
    /// ferrule is refused as such), then every field, then its consistency.
    pub(crate) fn from_value(value: Value) -> Result<Self> {
        let version = match value.get("version") {
            Some(version) => version
                .as_u64()
                .ok_or_else(|| refuse(format!("the state's version must be a whole number, not {version}")))?,
            None if value.is_object() => return Err(refuse("the state has no \"version\"")),
            None => return Err(refuse("the state must be the object an interrupted run's result gave")),
        };
        if version != STATE_VERSION {
            return Err(refuse(format!(
                "state version {version} is not supported (this ferrule reads version {STATE_VERSION})"
            )));
        }
        let state: RunState = serde_json::from_value(value).map_err(|e| refuse(format!("state: {e}")))?;
        state.check()?;
        Ok(state)
    }

    fn check(&self) -> Result<()> {
        let Some(Message::Assistant(pending)) = self.messages.last() else { return Err(no_waiting_message()) };
        if self.awaiting.is_empty() {
            return Err(refuse("state: no call waits for a decision"));
        }
        if !self.execute_only && !matches!(pending.stop_reason, StopReason::ToolUse | StopReason::EndTurn) {
            return Err(refuse("state: the waiting message did not end normally, so its calls never run"));
        }
        let in_message = |id: &String| pending.tool_calls.iter().any(|call| &call.id == id);
        for (i, id) in self.awaiting.iter().enumerate() {
            if !in_message(id) {
                return Err(refuse(format!("state: the waiting call \"{id}\" is not in the last assistant message")));
            }
            if self.awaiting[..i].contains(id) || self.decided.contains_key(id) {
                return Err(refuse(format!("state: the call \"{id}\" waits twice")));
            }
        }
        if let Some(id) = self.decided.keys().find(|id| !in_message(id)) {
            return Err(refuse(format!("state: the decided call \"{id}\" is not in the last assistant message")));
        }
        if self.input_messages >= self.messages.len() {
            return Err(refuse("state: input_messages must count messages before the waiting one"));
        }
        let before_waiting = &self.messages[..self.messages.len() - 1];
        super::input::check_messages(before_waiting).map_err(|e| refuse(format!("state: {}", e.message)))?;
        if let Some(i) = self.injections.iter().position(|m| !matches!(m, Message::User(_) | Message::System(_))) {
            return Err(refuse(format!("state: injections[{i}] is not a user or system message")));
        }
        let waiting = self.messages.len() - 1;
        super::input::check_parts(&self.messages[waiting])
            .map_err(|e| refuse(format!("state: messages[{waiting}]: {e}")))
    }

    /// Resumes with the host's `decisions` on `agent`: every waiting call needs
    /// one, every decision must be for a waiting call, and the agent must have
    /// every tool the state names.
    pub(crate) fn resume(mut self, decisions: HashMap<String, Decision>, agent: &AgentInner) -> Result<RunOrigin> {
        // Checked again: a state deserialized directly (not through run input)
        // was never checked.
        self.check()?;
        let Some(Message::Assistant(pending)) = self.messages.pop() else { return Err(no_waiting_message()) };
        let tool_of = |id: &str| pending.tool_calls.iter().find(|c| c.id == id).map(|c| c.name.clone());
        for id in &self.awaiting {
            let tool = tool_of(id).unwrap_or_default();
            if agent.tool(&tool).is_none() {
                return Err(refuse(format!(
                    "the agent has no tool \"{tool}\", which call \"{id}\" waits to run; resume with an agent built from the same configuration and tools"
                )));
            }
            if !decisions.contains_key(id) {
                return Err(refuse(format!(
                    "no decision for call \"{id}\" ({tool}); every interrupted call needs one (waiting: {})",
                    self.awaiting.join(", ")
                )));
            }
        }
        if let Some(id) = decisions.keys().find(|id| !self.awaiting.contains(id)) {
            let already = if self.decided.contains_key(id) { ", it was decided already" } else { "" };
            return Err(refuse(format!(
                "there is no interrupted call \"{id}\"{already} (waiting: {})",
                self.awaiting.join(", ")
            )));
        }
        let named = self
            .standing
            .keys()
            .chain(&self.disclosed)
            .chain(self.tools.iter().flatten())
            .chain(self.turn_tools.iter().flatten());
        if let Some(tool) = named.into_iter().find(|t| agent.tool(t).is_none()) {
            return Err(refuse(format!(
                "the agent has no tool \"{tool}\", which the state names; resume with an agent built from the same configuration and tools"
            )));
        }
        let mut approvals = Approvals { by_call: self.decided, standing: self.standing };
        approvals.adopt(decisions, |id| tool_of(id).unwrap_or_default()).map_err(refuse)?;
        Ok(RunOrigin {
            input_len: self.input_messages,
            messages: self.messages,
            pending: Some(pending),
            execute_only: self.execute_only,
            rounds: self.rounds,
            usage: self.usage,
            output_corrections: self.output_corrections,
            disclosed: self.disclosed.into_iter().collect(),
            approvals,
            tools: self.tools.map(|tools| tools.into_iter().collect()),
            injections: self.injections,
            pending_turn_tools: self.turn_tools,
            resumed: true,
        })
    }
}

fn no_waiting_message() -> Error {
    refuse("state: the transcript must end with the assistant message whose calls wait")
}

fn refuse(what: impl std::fmt::Display) -> Error {
    Error::invalid_arg(format!("run input: resume: {what}"))
}
