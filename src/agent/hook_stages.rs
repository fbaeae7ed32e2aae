//! The five hook stages (DESIGN section 10), each in one place: the payload its
//! hooks see, built as a typed value from the run's own data, and what each
//! decision the stage takes does.

use std::collections::{BTreeSet, HashSet};

use super::approval::{Approvals, Verdict};
use super::hook_caller::{Carry, Flow, HookCaller, HookStop};
use super::injection::mark_injected;
use super::recorder::CallEnd;
use super::tool_set::ToolSet;
use super::transcript::check_messages;
use super::transcript_json::TranscriptJson;
use super::validation::{check_arguments, HookApproval, ValidCall};
use crate::error::Error;
use crate::hook::{
    FinalAnswerPayload, HookDecision, HookHistory, HookStage, HookToolCall, RunStartPayload, ToolCallPayload,
    ToolResultPayload, TurnStartPayload,
};
use crate::message::{Message, ToolCall};
use crate::tool::ToolResult;

/// The `run_start` hooks: they may replace the input.
pub(crate) async fn run_start(hooks: &HookCaller<'_>, messages: &mut Vec<Message>) -> Result<(), HookStop> {
    if !hooks.wants(HookStage::RunStart) {
        return Ok(());
    }
    let payload = |messages: &Vec<Message>, run_id: &str, carry: Carry<'_>| {
        let message_count = messages.len();
        // The whole input, and nothing noted: a later hook of the stage may
        // replace it, so the first `turn_start` payload carries the history
        // whole.
        let (messages, messages_from) = carry.messages(messages, || 0);
        serde_json::to_string(&RunStartPayload { run_id, messages, message_count, messages_from })
    };
    let apply = |messages: &mut Vec<Message>, decision: HookDecision| {
        if let HookDecision::Messages(replacement) = decision {
            *messages = checked_history(HookStage::RunStart, replacement)?;
        }
        Ok(Flow::Next)
    };
    hooks.consult(HookStage::RunStart, messages, payload, apply).await
}

impl Carry<'_> {
    /// The part of `messages` (the whole history) a hook's payload carries,
    /// and for `"history": "new"` the index it starts at, which `from` gives.
    fn messages<T>(self, messages: &[T], from: impl FnOnce() -> usize) -> (&[T], Option<usize>) {
        match self.history {
            HookHistory::Full => (messages, None),
            HookHistory::None => (&[], None),
            HookHistory::New => {
                let from = from().min(messages.len());
                (&messages[from..], Some(from))
            }
        }
    }
}

/// What the `turn_start` hooks did to the turn.
pub(crate) struct TurnStartEffect {
    /// The turn's tool set, when a hook chose one.
    pub(crate) tools: Option<Vec<String>>,
    /// How many messages the hooks injected at the end of the history.
    pub(crate) injected: usize,
    /// A hook replaced the history.
    pub(crate) replaced: bool,
}

/// What the `turn_start` hooks work on.
struct TurnStart<'a> {
    messages: &'a mut Vec<Message>,
    /// `messages` as JSON, kept in step while `with_history` (else left behind,
    /// for whoever syncs it next).
    json: &'a mut TranscriptJson,
    /// Some hook of the stage takes the whole history in its payload.
    with_history: bool,
    /// The tools offered this turn.
    tools: Vec<String>,
    effect: TurnStartEffect,
}

impl TurnStart<'_> {
    /// Brings the JSON of the history up to the messages, when a payload needs it.
    fn sync_json_when_taken(&mut self) {
        if self.with_history {
            self.json.sync(self.messages);
        }
    }
}

/// The `turn_start` hooks of `turn`: they may choose the turn's tools (among the
/// run's tools, `run_tools`, or all of the agent's), inject messages or replace
/// the history; `offered` are the tools the turn offers unless they choose.
/// What they did, also when one of them ended the run.
pub(crate) async fn turn_start(
    hooks: &HookCaller<'_>,
    tools: &ToolSet,
    run_tools: Option<&BTreeSet<String>>,
    turn: u32,
    offered: Vec<String>,
    messages: &mut Vec<Message>,
    json: &mut TranscriptJson,
) -> (TurnStartEffect, Result<(), HookStop>) {
    let effect = TurnStartEffect { tools: None, injected: 0, replaced: false };
    if !hooks.wants(HookStage::TurnStart) {
        return (effect, Ok(()));
    }
    let with_history = hooks.wants_history(HookStage::TurnStart);
    let mut state = TurnStart { messages, json, with_history, tools: offered, effect };
    state.sync_json_when_taken();
    let payload = |state: &TurnStart<'_>, run_id: &str, carry: Carry<'_>| {
        let history = state.json.messages();
        let from = || carry.state.carry_from(state.json.revision(), history.len());
        let (messages, messages_from) = carry.messages(history, from);
        serde_json::to_string(&TurnStartPayload {
            run_id,
            turn,
            messages,
            message_count: state.messages.len(),
            messages_from,
            tools: &state.tools,
        })
    };
    let apply = |state: &mut TurnStart<'_>, decision: HookDecision| {
        match decision {
            HookDecision::Tools(names) => {
                let lacking = names
                    .iter()
                    .find(|name| !tools.contains(name) || run_tools.is_some_and(|run| !run.contains(name.as_str())));
                if let Some(name) = lacking {
                    return Err(Error::invalid_arg(format!(
                        "a turn_start hook's tool set names \"{name}\", which this run does not have"
                    )));
                }
                let mut seen = HashSet::new();
                state.tools = names.into_iter().filter(|name| seen.insert(name.clone())).collect();
                state.effect.tools = Some(state.tools.clone());
            }
            HookDecision::Inject(mut injected) => {
                // All or nothing: every message is checked before any enters.
                for message in &mut injected {
                    mark_injected(message).map_err(|problem| {
                        Error::invalid_arg(format!("a turn_start hook's decision \"inject\": {problem}"))
                    })?;
                }
                state.effect.injected += injected.len();
                state.messages.extend(injected);
                state.sync_json_when_taken();
            }
            HookDecision::Messages(replacement) => {
                *state.messages = checked_history(HookStage::TurnStart, replacement)?;
                state.json.reset();
                state.sync_json_when_taken();
                state.effect.replaced = true;
                state.effect.injected = 0;
            }
            _ => {}
        }
        Ok(Flow::Next)
    };
    let consulted = hooks.consult(HookStage::TurnStart, &mut state, payload, apply).await;
    (state.effect, consulted)
}

/// The `tool_call` hooks about every valid call of a batch of `turn`, in call
/// order, before any call runs: a denial or replaced arguments that fail the
/// schema make the call an error result; an approval or an interrupt is noted
/// for the approval gate.
pub(crate) async fn tool_call(
    hooks: &HookCaller<'_>,
    approvals: Approvals<'_>,
    turn: u32,
    calls: &[ToolCall],
    checked: &mut [Result<ValidCall<'_>, String>],
) -> Result<(), HookStop> {
    if !hooks.wants(HookStage::ToolCall) {
        return Ok(());
    }
    for (call, check) in calls.iter().zip(checked.iter_mut()) {
        if check.is_err() {
            continue;
        }
        let payload = |check: &Result<ValidCall<'_>, String>, run_id: &str, _: Carry<'_>| {
            let Ok(valid) = check else { return Ok(String::new()) };
            // Whether the batch would stop for it: no decision covers it yet.
            let needs_approval = matches!(approvals.verdict(call, valid), Verdict::Ask);
            let call = HookToolCall { id: &call.id, name: &call.name, arguments: &valid.arguments };
            serde_json::to_string(&ToolCallPayload { run_id, turn, call, needs_approval })
        };
        let apply = |check: &mut Result<ValidCall<'_>, String>, decision: HookDecision| {
            let Ok(valid) = check else { return Ok(Flow::Stop) };
            match decision {
                HookDecision::Deny(text) => *check = Err(text),
                HookDecision::Arguments(arguments) => match check_arguments(valid.tool, &call.name, &arguments) {
                    Ok(()) => {
                        valid.arguments = arguments;
                        valid.replaced = true;
                    }
                    Err(problem) => *check = Err(problem),
                },
                HookDecision::Approve => valid.hook_approval = HookApproval::Approved,
                HookDecision::Interrupt => valid.hook_approval = HookApproval::Interrupt,
                _ => {}
            }
            Ok(if check.is_ok() { Flow::Next } else { Flow::Stop })
        };
        hooks.consult(HookStage::ToolCall, check, payload, apply).await?;
    }
    Ok(())
}

/// The `tool_result` hooks about a call's result: a replacement that is not a
/// valid tool result becomes an error result. The end to record, and why the
/// run must end (the result as it was then is still recorded).
pub(crate) async fn tool_result(
    hooks: &HookCaller<'_>,
    turn: u32,
    call: &ToolCall,
    end: CallEnd,
) -> (CallEnd, Option<HookStop>) {
    if !hooks.wants(HookStage::ToolResult) {
        return (end, None);
    }
    let mut end = end;
    let payload = |end: &CallEnd, run_id: &str, _: Carry<'_>| {
        let (call_id, name, result) = (&call.id, &call.name, &end.result);
        serde_json::to_string(&ToolResultPayload { run_id, turn, call_id, name, result, is_error: result.is_error })
    };
    let apply = |end: &mut CallEnd, decision: HookDecision| {
        if let HookDecision::Result(replacement) = decision {
            let result = ToolResult::from_value(replacement).unwrap_or_else(|problem| {
                ToolResult::error(format!("Tool \"{}\" returned an invalid result: {}", call.name, problem.message))
            });
            *end = CallEnd { result, tool_failed: false };
        }
        Ok(Flow::Next)
    };
    let stop = hooks.consult(HookStage::ToolResult, &mut end, payload, apply).await.err();
    (end, stop)
}

/// The `final_answer` hooks about `answer` of `turn`: the feedback of one that
/// sends the answer back.
pub(crate) async fn final_answer(
    hooks: &HookCaller<'_>,
    turn: u32,
    answer: &Message,
) -> Result<Option<String>, HookStop> {
    if !hooks.wants(HookStage::FinalAnswer) {
        return Ok(None);
    }
    let mut feedback = None;
    let payload = |_: &Option<String>, run_id: &str, _: Carry<'_>| {
        serde_json::to_string(&FinalAnswerPayload { run_id, turn, message: answer })
    };
    let apply = |feedback: &mut Option<String>, decision: HookDecision| {
        if let HookDecision::Retry(text) = decision {
            *feedback = Some(text);
            return Ok(Flow::Stop);
        }
        Ok(Flow::Next)
    };
    hooks.consult(HookStage::FinalAnswer, &mut feedback, payload, apply).await?;
    Ok(feedback)
}

/// A history a hook gives in place of the run's: its parts checked, its calls
/// and results paired.
fn checked_history(stage: HookStage, messages: Vec<Message>) -> Result<Vec<Message>, Error> {
    check_messages(&messages).map_err(|e| {
        let problem = e.message.trim_start_matches("run input: ");
        Error::invalid_arg(format!("a {} hook's decision \"messages\": {problem}", stage.name()))
    })?;
    Ok(messages)
}
