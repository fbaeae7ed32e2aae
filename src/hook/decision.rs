//! A hook's decision: `{}` to go on, `{"abort": "..."}`, or one change its stage
//! allows (the table of DESIGN section 10).

use serde_json::Value;

use super::HookStage;
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
    /// Reads a decision given for `stage` as JSON text (no key may repeat):
    /// `INVALID_JSON` when it is not JSON, `INVALID_ARG` naming what is wrong
    /// with its shape.
    pub fn from_json(stage: HookStage, json: &str) -> Result<Self> {
        let value: Value = crate::json::parse_document("hook decision", json)?;
        HookDecision::from_value(stage, value)
    }

    /// Reads a decision given for `stage` as a JSON value.
    pub fn from_value(stage: HookStage, value: Value) -> Result<Self> {
        let Value::Object(object) = value else {
            return Err(invalid(stage, format!("must be a JSON object, not {}", crate::tool::json_kind(&value))));
        };
        let mut entries = object.into_iter();
        let Some((key, value)) = entries.next() else { return Ok(HookDecision::Continue) };
        if let Some((other, _)) = entries.next() {
            return Err(invalid(stage, format!("gives two decisions at once (\"{key}\" and \"{other}\")")));
        }
        let decision = read(stage, &key, value).map_err(|problem| invalid(stage, format!("\"{key}\": {problem}")))?;
        decision.check_stage(stage)?;
        Ok(decision)
    }

    /// `INVALID_ARG` when this is not a decision `stage` takes.
    pub(crate) fn check_stage(&self, stage: HookStage) -> Result<()> {
        use HookStage::*;
        let allowed = match self {
            HookDecision::Continue | HookDecision::Abort(_) => true,
            HookDecision::Messages(_) => matches!(stage, RunStart | TurnStart),
            HookDecision::Tools(_) | HookDecision::Inject(_) => stage == TurnStart,
            HookDecision::Deny(_) | HookDecision::Arguments(_) | HookDecision::Approve | HookDecision::Interrupt => {
                stage == ToolCall
            }
            HookDecision::Result(_) => stage == ToolResult,
            HookDecision::Retry(_) => stage == FinalAnswer,
        };
        if allowed {
            return Ok(());
        }
        Err(invalid(stage, format!("\"{}\" is not a decision of this stage (it takes {})", self.key(), takes(stage))))
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

/// The decision `key` with `value`, whatever the stage; the problem otherwise.
fn read(stage: HookStage, key: &str, value: Value) -> std::result::Result<HookDecision, String> {
    let text = |value: Value| match value {
        Value::String(text) if text.trim().is_empty() => Err("must not be blank".to_owned()),
        Value::String(text) => Ok(text),
        other => Err(format!("must be a string, not {}", crate::tool::json_kind(&other))),
    };
    let yes = |value: Value| match value {
        Value::Bool(true) => Ok(()),
        other => Err(format!("takes true, not {other}")),
    };
    let messages = |value: Value| serde_json::from_value::<Vec<Message>>(value).map_err(|e| e.to_string());
    Ok(match key {
        "abort" => HookDecision::Abort(text(value)?),
        "messages" => match messages(value)? {
            history if history.is_empty() => return Err("must not be empty".to_owned()),
            history => HookDecision::Messages(history),
        },
        // An empty list injects nothing.
        "inject" => HookDecision::Inject(messages(value)?),
        "tools" => HookDecision::Tools(serde_json::from_value(value).map_err(|e| e.to_string())?),
        "deny" => HookDecision::Deny(text(value)?),
        "arguments" => match value {
            Value::Object(arguments) => HookDecision::Arguments(Value::Object(arguments)),
            other => return Err(format!("must be a JSON object, not {}", crate::tool::json_kind(&other))),
        },
        "approve" => yes(value).map(|()| HookDecision::Approve)?,
        "interrupt" => yes(value).map(|()| HookDecision::Interrupt)?,
        "result" => HookDecision::Result(value),
        "retry" => HookDecision::Retry(text(value)?),
        _ => return Err(format!("is not a decision (this stage takes {})", takes(stage))),
    })
}

/// The decisions `stage` takes, for messages.
fn takes(stage: HookStage) -> &'static str {
    match stage {
        HookStage::RunStart => "{}, abort and messages",
        HookStage::TurnStart => "{}, abort, tools, inject and messages",
        HookStage::ToolCall => "{}, abort, deny, arguments, approve and interrupt",
        HookStage::ToolResult => "{}, abort and result",
        HookStage::FinalAnswer => "{}, abort and retry",
    }
}

fn invalid(stage: HookStage, problem: String) -> Error {
    Error::new(ErrorCode::InvalidArg, format!("a {} hook's decision {problem}", stage.name()))
}
