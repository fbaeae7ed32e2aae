//! The scripted model: offline and deterministic, for examples, tests and benchmarks.
//!
//! A script is a list of turns; a run's N-th model request gets the N-th turn (a
//! turn with `repeat: n` stands for n requests). Every run of an agent replays the
//! same script from its start. Asking past the end fails with `SCRIPT_EXHAUSTED`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{classify_status, Delta, DeltaSink, GenerationRequest, Generator, WireCache};
use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Part, StopReason, ToolCall, Usage};
use crate::BoxFuture;

/// One scripted model response.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// Answer text.
    #[serde(default)]
    pub text: Option<String>,
    /// Reasoning text, streamed as thinking deltas (not kept in the message).
    #[serde(default)]
    pub thinking: Option<String>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    /// The stop reason; by default `tool_use` with calls, `end_turn` without.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// Reported usage.
    #[serde(default)]
    pub usage: Usage,
    /// Milliseconds to wait before answering.
    #[serde(default)]
    pub delay_ms: u64,
    /// How many consecutive requests this turn answers (at least 1).
    #[serde(default = "one")]
    pub repeat: u32,
    /// Fail the request instead of answering.
    #[serde(default)]
    pub error: Option<ScriptError>,
    /// Panic inside the model request (to test how hosts see a failed run).
    #[serde(default)]
    pub panic: Option<String>,
}

fn one() -> u32 {
    1
}

/// A scripted tool call. `arguments` may be a JSON string (sent as it is, which
/// need not be valid JSON) or any other JSON value (sent as its JSON text).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// The call id; empty to test calls without one.
    #[serde(default)]
    pub id: String,
    /// The tool name.
    #[serde(default)]
    pub name: String,
    /// The argument text.
    #[serde(default = "empty_object", deserialize_with = "deserialize_arguments")]
    #[schemars(with = "Value")]
    pub arguments: String,
}

fn empty_object() -> String {
    "{}".to_owned()
}

fn deserialize_arguments<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(raw) => raw,
        other => other.to_string(),
    })
}

/// A scripted request failure, classified like an HTTP error of that status.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    /// The HTTP status to act as.
    pub status: u16,
    /// The provider's message.
    #[serde(default)]
    pub message: String,
}

/// The scripted [`Generator`].
#[derive(Debug, Clone)]
pub struct ScriptedGenerator {
    turns: Vec<ScriptTurn>,
}

impl ScriptedGenerator {
    /// A generator that plays `turns`. Every turn must have `repeat` of at least 1.
    pub fn new(turns: Vec<ScriptTurn>) -> Result<Self, Error> {
        if let Some(i) = turns.iter().position(|t| t.repeat == 0) {
            return Err(Error::invalid_arg(format!("model.script[{i}].repeat must be at least 1")));
        }
        Ok(ScriptedGenerator { turns })
    }

    fn turn(&self, turn: u32) -> Result<&ScriptTurn, Error> {
        let mut remaining = u64::from(turn.saturating_sub(1));
        for scripted in &self.turns {
            if remaining < u64::from(scripted.repeat) {
                return Ok(scripted);
            }
            remaining -= u64::from(scripted.repeat);
        }
        let length: u64 = self.turns.iter().map(|t| u64::from(t.repeat)).sum();
        Err(Error::new(
            ErrorCode::ScriptExhausted,
            format!("the scripted model has {length} turns and was asked for turn {turn}"),
        ))
    }
}

impl Generator for ScriptedGenerator {
    fn generate<'a>(
        &'a self,
        request: GenerationRequest<'a>,
        _wire: &'a mut WireCache,
        deltas: &'a mut dyn DeltaSink,
    ) -> BoxFuture<'a, Result<AssistantMessage, Error>> {
        Box::pin(async move {
            let turn = self.turn(request.turn)?;
            if turn.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
            }
            if let Some(message) = &turn.panic {
                panic!("{message}");
            }
            if let Some(error) = &turn.error {
                return Err(Error::new(
                    classify_status(error.status),
                    format!("scripted provider error (HTTP {}): {}", error.status, error.message),
                ));
            }
            play(turn, deltas).await
        })
    }
}

async fn play(turn: &ScriptTurn, deltas: &mut dyn DeltaSink) -> Result<AssistantMessage, Error> {
    if let Some(thinking) = &turn.thinking {
        deltas.send(Delta::Thinking(thinking)).await;
    }
    let mut content = Vec::new();
    if let Some(text) = turn.text.as_ref().filter(|t| !t.is_empty()) {
        deltas.send(Delta::Text(text)).await;
        content.push(Part::text(text.clone()));
    }
    let mut tool_calls = Vec::with_capacity(turn.tool_calls.len());
    for (index, call) in (0u32..).zip(&turn.tool_calls) {
        deltas
            .send(Delta::ToolCall { index, id: Some(&call.id), name: Some(&call.name), arguments: &call.arguments })
            .await;
        tool_calls.push(ToolCall::new(call.id.clone(), call.name.clone(), call.arguments.clone()));
    }
    let stop_reason =
        turn.stop_reason.unwrap_or(if tool_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse });
    Ok(AssistantMessage { content, tool_calls, stop_reason, usage: turn.usage })
}
