//! A hook's decision: `{}` to go on, `{"abort": "..."}`, or one change its stage
//! allows (the table of DESIGN section 10).

use serde_json::{Map, Value};

use super::stage_decision::{keys_of, StageDecision};
use super::{
    FinalAnswerDecision, HookStage, RunStartDecision, ToolCallDecision, ToolResultDecision, TurnStartDecision,
};
use crate::error::{Error, ErrorCode, Result};
use crate::message::Message;

/// What a hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// `{}`: go on.
    Continue,
    /// `{"abort": "reason"}`: end the run `failed` with `HOOK_ABORTED`.
    Abort(String),
    /// `{"messages": [...]}` (run_start, turn_start): replace the input or the
    /// history.
    Messages(Vec<Message>),
    /// `{"tools": [...]}` (turn_start): the turn's tool set.
    Tools(Vec<String>),
    /// `{"inject": [...]}` (turn_start): messages appended before the request.
    Inject(Vec<Message>),
    /// `{"deny": "text"}` (tool_call): an error result; the tool does not run.
    Deny(String),
    /// `{"arguments": {...}}` (tool_call): replaced arguments, validated again.
    Arguments(Value),
    /// `{"approve": true}` (tool_call): approves a call that needs approval.
    Approve,
    /// `{"interrupt": true}` (tool_call): the call needs approval.
    Interrupt,
    /// `{"result": ...}` (tool_result): the result, replaced (checked as a tool
    /// result when it is used: an invalid one becomes an error result).
    Result(Value),
    /// `{"retry": "feedback"}` (final_answer): the feedback goes to the model.
    Retry(String),
}

impl HookDecision {
    /// The decision's key (`continue` for `{}`), as a span event names it.
    pub fn kind(&self) -> &'static str {
        match self {
            HookDecision::Continue => "continue",
            decision => decision.key(),
        }
    }

    /// Reads a decision given for `stage` as JSON text (no key may repeat):
    /// `INVALID_JSON` when it is not JSON, `INVALID_ARG` naming what is wrong
    /// with its shape.
    pub fn from_json(stage: HookStage, json: &str) -> Result<Self> {
        if is_empty_object(json) {
            return Ok(HookDecision::Continue);
        }
        let value: Value = crate::json::parse_document("hook decision", json)?;
        HookDecision::from_value(stage, value)
    }

    /// Reads a decision given for `stage` as a JSON value: `{}`, or one key the
    /// stage's decision type takes ([`ToolCallDecision`] and its siblings).
    pub fn from_value(stage: HookStage, value: Value) -> Result<Self> {
        let Value::Object(object) = value else {
            return Err(invalid(stage, format!("must be a JSON object, not {}", crate::tool::json_kind(&value))));
        };
        let mut keys = object.keys();
        let Some(key) = keys.next().cloned() else { return Ok(HookDecision::Continue) };
        if let Some(other) = keys.next() {
            return Err(invalid(stage, format!("gives two decisions at once (\"{key}\" and \"{other}\")")));
        }
        match stage {
            HookStage::RunStart => read::<RunStartDecision>(stage, &key, object),
            HookStage::TurnStart => read::<TurnStartDecision>(stage, &key, object),
            HookStage::ToolCall => read::<ToolCallDecision>(stage, &key, object),
            HookStage::ToolResult => read::<ToolResultDecision>(stage, &key, object),
            HookStage::FinalAnswer => read::<FinalAnswerDecision>(stage, &key, object),
        }
    }

    /// `INVALID_ARG` when this is not a decision `stage` takes.
    pub(crate) fn check_stage(&self, stage: HookStage) -> Result<()> {
        match self {
            HookDecision::Continue => Ok(()),
            decision if keys_of(stage).iter().any(|key| key == decision.key()) => Ok(()),
            decision => Err(not_of_stage(stage, decision.key())),
        }
    }

    fn key(&self) -> &'static str {
        match self {
            HookDecision::Continue => "{}",
            HookDecision::Abort(_) => "abort",
            HookDecision::Messages(_) => "messages",
            HookDecision::Tools(_) => "tools",
            HookDecision::Inject(_) => "inject",
            HookDecision::Deny(_) => "deny",
            HookDecision::Arguments(_) => "arguments",
            HookDecision::Approve => "approve",
            HookDecision::Interrupt => "interrupt",
            HookDecision::Result(_) => "result",
            HookDecision::Retry(_) => "retry",
        }
    }
}

/// The one-key `decision` read as `stage`'s decision type `T`.
fn read<T: StageDecision>(stage: HookStage, key: &str, decision: Map<String, Value>) -> Result<HookDecision> {
    match serde_json::from_value::<T>(Value::Object(decision)) {
        Ok(decision) => Ok(decision.into()),
        Err(_) if !keys_of(stage).iter().any(|taken| taken == key) => Err(not_of_stage(stage, key)),
        Err(problem) => Err(invalid(stage, format!("\"{key}\": {problem}"))),
    }
}

/// The error for `key`, a decision `stage` does not take.
fn not_of_stage(stage: HookStage, key: &str) -> Error {
    let mut takes = vec!["{}"];
    takes.extend(keys_of(stage).iter().map(String::as_str));
    let last = takes.pop().unwrap_or_default();
    invalid(stage, format!("\"{key}\" is not a decision of this stage (it takes {} and {last})", takes.join(", ")))
}

fn invalid(stage: HookStage, problem: String) -> Error {
    Error::new(ErrorCode::InvalidArg, format!("a {} hook's decision {problem}", stage.name()))
}

/// Whether `json` is `{}`, with nothing but JSON whitespace around and inside
/// it: the decision most consultations give, read without a parser.
fn is_empty_object(json: &str) -> bool {
    let inner = json.trim_matches(is_json_whitespace);
    inner.len() >= 2
        && inner.starts_with('{')
        && inner.ends_with('}')
        && inner[1..inner.len() - 1].chars().all(is_json_whitespace)
}

fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}
