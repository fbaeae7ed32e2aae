//! What a hook sees at each stage: one payload type per stage, a JSON object
//! with the run's id and what the stage decides about (DESIGN section 10). Built
//! from borrowed parts of the run, so that consulting a hook copies nothing but
//! the JSON it is given.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::message::Message;
use crate::tool::ToolResult;

/// What a `run_start` hook sees: the run's input.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunStartPayload<'a> {
    /// The run's id, as in its events.
    pub run_id: &'a str,
    /// The index of the first of `messages` in the history, for a hook
    /// registered with `"history": "new"` (always 0 here); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub messages_from: Option<usize>,
    /// The messages the run starts from; empty for a hook registered with
    /// `"history": "none"`.
    pub messages: &'a [Message],
    /// How many messages the run starts from.
    pub message_count: usize,
}

/// What a `turn_start` hook sees before each model request: the history and the
/// tools offered this turn.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TurnStartPayload<'a> {
    /// The run's id, as in its events.
    pub run_id: &'a str,
    /// The round about to start, from 1.
    pub turn: u32,
    /// The index of the first of `messages` in the history, for a hook
    /// registered with `"history": "new"`; absent otherwise. Written before
    /// `messages`, so that a reader looking for it need not step over them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub messages_from: Option<usize>,
    /// The whole history, each message as JSON (kept serialized between
    /// turns); empty for a hook registered with `"history": "none"`, the
    /// messages from `messages_from` on for one registered with `"history":
    /// "new"` (a binding's typed hook is handed the whole history, kept for
    /// the run).
    #[schemars(with = "Vec<Message>")]
    pub messages: &'a [Box<RawValue>],
    /// How many messages the history holds.
    pub message_count: usize,
    /// The names of the tools visible this turn.
    pub tools: &'a [String],
}

/// What a `tool_call` hook sees: a call that passed validation, before any call
/// of its batch runs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ToolCallPayload<'a> {
    /// The run's id, as in its events.
    pub run_id: &'a str,
    /// The round of the batch (0 for an execute-only run).
    pub turn: u32,
    /// The call.
    pub call: HookToolCall<'a>,
    /// Whether the batch would stop for the call: it needs approval and no
    /// decision covers it yet.
    pub needs_approval: bool,
}

/// A call as a hook sees it: its arguments parsed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HookToolCall<'a> {
    /// The call's id.
    pub id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The arguments (a JSON object that satisfies the tool's schema).
    pub arguments: &'a Value,
}

/// What a `tool_result` hook sees: the result of a call that ran.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ToolResultPayload<'a> {
    /// The run's id, as in its events.
    pub run_id: &'a str,
    /// The round of the batch (0 for an execute-only run).
    pub turn: u32,
    /// The call's id.
    pub call_id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The result, as the transcript would record it.
    pub result: &'a ToolResult,
    /// Whether the result is an error.
    pub is_error: bool,
}

/// What a `final_answer` hook sees: an answer without calls that would end the
/// run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FinalAnswerPayload<'a> {
    /// The run's id, as in its events.
    pub run_id: &'a str,
    /// The round of the answer.
    pub turn: u32,
    /// The answer: an assistant message.
    pub message: &'a Message,
}
