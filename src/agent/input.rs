//! The run input JSON (`ferrule_agent_start`).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::approval::Decision;
use super::host_calls::{CallMode, CallOutcome};
use super::state::RunState;
use super::transcript::{check_messages, check_parts};
use crate::error::{Error, Result};
use crate::message::{AssistantMessage, Message, ToolCall};
use crate::trace::{SpanContext, TraceContext};

/// What a run starts from, and the tools it may use.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput {
    /// Where the run begins.
    pub source: RunSource,
    /// The tools (host and built-in) the run may offer and call; `None`: every
    /// tool of the agent. A name the agent lacks makes the start fail.
    pub tools: Option<Vec<String>>,
    /// Which events reach the run's event sink.
    pub events: EventSelection,
    /// The C event callback takes its events in bursts (a JSON list each call).
    pub event_bursts: bool,
    /// Whether the result carries the transcript.
    pub result_messages: ResultMessages,
    /// The host's span the run's spans go under (run input `trace_context`).
    pub trace_parent: Option<SpanContext>,
    /// Who runs the calls of the run's batches (run input `calls`).
    pub calls: CallMode,
}

/// Whether a run's result carries its transcript (run input
/// `result_messages`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultMessages {
    /// The whole transcript, input included.
    #[default]
    All,
    /// None: `messages` is empty, for a host that reads the final answer,
    /// the output, the usage or the state and not the transcript, which is
    /// then neither written nor read. `final` and an interrupted run's
    /// `state` are as always. Not for an execute-only run (nor its resume),
    /// whose results are its messages.
    None,
}

/// Which of a run's events reach its event sink (run input `events`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventSelection {
    /// Every event.
    #[default]
    All,
    /// Only `run_end`: for a host that reads no events but learns of the end
    /// through them. The run builds and queues no other event.
    RunEnd,
}

/// Where a run begins.
#[derive(Debug, Clone, PartialEq)]
pub enum RunSource {
    /// One user prompt.
    Prompt(String),
    /// A transcript (a previous run's `messages` plus a new user message).
    Messages(Vec<Message>),
    /// An execute-only run: the calls of `execute` (an assistant message the
    /// host's own model produced) validated and executed as one batch after the
    /// context `messages`, with no model request.
    Execute {
        /// The context before the assistant message.
        messages: Vec<Message>,
        /// The assistant message whose calls run.
        execute: AssistantMessage,
    },
    /// An interrupted run going on: its `state`, and a decision for every call
    /// it waits on, keyed by call id, or the outcome of every call it
    /// returned for the host to run.
    Resume {
        /// The interrupted run's state, as its result gave it.
        state: Box<RunState>,
        /// The host's decisions.
        decisions: HashMap<String, Decision>,
        /// How the calls the host ran ended, by call id.
        results: HashMap<String, CallOutcome>,
    },
    /// One call a run returned (run input `"calls": "return"`), run by its
    /// tool: its arguments checked against the tool's schema, then its
    /// function, bounded by the tool's timeout, with no hook and no approval
    /// (the run that returned it asked them), no model and no transcript.
    Invoke {
        /// The call, as the run returned it.
        call: ToolCall,
        /// Which time the host runs the call (1 the first time), for a tool
        /// that must not do its work twice.
        attempt: u32,
        /// The handoffs the returning run had made (its state's
        /// `handed_to`): the call is a tool's of the agent they lead to.
        handed_to: Vec<String>,
    },
}

/// The run input document (`ferrule_agent_start`): exactly one of `prompt`,
/// `messages`, `execute` (with `messages` as its context), `resume` (with
/// `decisions` or `results`) and `invoke` (with `attempt`); the first three
/// may carry `tools`. Every field may be absent;
/// one that is there must have its type (null too is refused, rather than read
/// as absent).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RunInput")]
pub(crate) struct InputRepr {
    /// One user prompt.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "String")]
    prompt: Option<String>,
    /// A transcript (a previous run's `messages` plus a new user message), or
    /// the context of `execute`.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Vec<Message>")]
    messages: Option<Vec<Message>>,
    /// An assistant message (its `role` may be left out) whose calls are
    /// validated and executed as one batch, with no model request.
    #[serde(default, deserialize_with = "given")]
    #[schemars(schema_with = "execute_schema")]
    execute: Option<serde_json::Value>,
    /// An interrupted run's `state`, as its result gave it.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "RunState")]
    resume: Option<serde_json::Value>,
    /// A decision for every call the resumed run waits on, by call id.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "HashMap<String, Decision>")]
    decisions: Option<HashMap<String, Decision>>,
    /// How each call the resumed run returned (`"calls": "return"`) ended when
    /// the host ran it, by call id: `{"result": <tool result>}` or
    /// `{"failed": "<why>"}`.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "HashMap<String, CallOutcome>")]
    results: Option<HashMap<String, CallOutcome>>,
    /// One call a run returned, to run by its tool alone: its arguments are
    /// checked, no hook or approval is asked, and the result's `outcome` is
    /// what the resume's `results` take for it.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "ToolCall")]
    invoke: Option<ToolCall>,
    /// With `invoke`: which time the host runs the call (1, the default, the
    /// first time), which the tool can read to do its work once.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "u32")]
    attempt: Option<u32>,
    /// With `invoke`: the handoffs the run that returned the call had made,
    /// in order (its state's `handed_to`); the call is then a tool's of the
    /// agent they lead to.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Vec<String>")]
    handed_to: Option<Vec<String>>,
    /// Who runs the calls of the run's batches: `run` (ferrule, the default)
    /// or `return` (the run stops where it would start them, status
    /// `interrupted`, and lists them in its result's `calls`, for the host
    /// to run and resume with `results`).
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "CallMode")]
    calls: Option<CallMode>,
    /// The only tools (host and built-in) the run may offer and call.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Vec<String>")]
    tools: Option<Vec<String>>,
    /// Which events reach the run's event callback: `all` (the default) or
    /// `run_end` (only the last, for a host that reads no events but learns
    /// of the end from it; the run then builds no other event).
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "EventSelection")]
    events: Option<EventSelection>,
    /// Each call of the event callback carries a JSON list of the events
    /// queued by then (up to 256, in order) instead of one event: one call per
    /// burst for a host whose every call costs (a language runtime's).
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "bool")]
    event_bursts: Option<bool>,
    /// Whether the result's `messages` holds the transcript: `all` (the
    /// default) or `none` (empty, for a host that reads only the final
    /// answer, the output, the usage or the state; `final` and `state` are as
    /// always). Not `none` for an execute-only run or its resume, whose
    /// results are its messages.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "ResultMessages")]
    result_messages: Option<ResultMessages>,
    /// The host's span (W3C Trace Context) the run's spans go under, when the
    /// host set a tracer: its `traceparent` and `tracestate`.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "TraceContext")]
    trace_context: Option<TraceContext>,
}

/// A field that is there: its value, null included, must read as `T`.
fn given<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl From<RunSource> for RunInput {
    fn from(source: RunSource) -> Self {
        RunInput {
            source,
            tools: None,
            events: EventSelection::All,
            event_bursts: false,
            result_messages: ResultMessages::All,
            trace_parent: None,
            calls: CallMode::Run,
        }
    }
}

impl RunInput {
    /// A run from one user prompt, with every tool.
    pub fn prompt(text: impl Into<String>) -> Self {
        RunSource::Prompt(text.into()).into()
    }

    /// Parses `{"prompt": "..."}`, `{"messages": [...]}`, `{"execute": {...},
    /// "messages": [...]}` or `{"resume": {...}, "decisions": {...}}`, the first
    /// three with an optional `"tools": [...]`.
    pub fn from_json(json: &str) -> Result<Self> {
        let mut repr: InputRepr = crate::json::parse_document("run input", json)?;
        let tools = repr.tools.take();
        let events = repr.events.take().unwrap_or_default();
        let event_bursts = repr.event_bursts.take().unwrap_or(false);
        let result_messages = repr.result_messages.take().unwrap_or_default();
        let trace_parent = repr.trace_context.take().map(|context| context.parent()).transpose()?;
        let calls = repr.calls.take().unwrap_or_default();
        let source = RunSource::from_repr(repr)?;
        if calls == CallMode::Return && matches!(source, RunSource::Execute { .. } | RunSource::Invoke { .. }) {
            return Err(Error::invalid_arg(
                "run input: \"calls\": \"return\" goes with \"prompt\", \"messages\" or \"resume\"",
            ));
        }
        Ok(RunInput { source, tools, events, event_bursts, result_messages, trace_parent, calls })
    }
}

impl RunSource {
    fn from_repr(repr: InputRepr) -> Result<Self> {
        if (repr.attempt.is_some() || repr.handed_to.is_some()) && repr.invoke.is_none() {
            return Err(Error::invalid_arg("run input: \"attempt\" and \"handed_to\" go with \"invoke\""));
        }
        if repr.results.is_some() && repr.resume.is_none() {
            return Err(Error::invalid_arg("run input: \"results\" go with \"resume\""));
        }
        if let Some(call) = repr.invoke {
            if repr.prompt.is_some() || repr.messages.is_some() || repr.execute.is_some() || repr.resume.is_some() {
                return Err(Error::invalid_arg("run input: \"invoke\" takes \"attempt\" and \"handed_to\" only"));
            }
            let attempt = repr.attempt.unwrap_or(1);
            if attempt == 0 {
                return Err(Error::invalid_arg("run input: attempt counts from 1"));
            }
            return Ok(RunSource::Invoke { call, attempt, handed_to: repr.handed_to.unwrap_or_default() });
        }
        if let Some(state) = repr.resume {
            if repr.prompt.is_some() || repr.messages.is_some() || repr.execute.is_some() {
                return Err(Error::invalid_arg(
                    "run input: \"resume\" takes \"decisions\" only; the state holds the transcript",
                ));
            }
            let state = Box::new(RunState::from_value(state)?);
            let (decisions, results) = (repr.decisions.unwrap_or_default(), repr.results.unwrap_or_default());
            return Ok(RunSource::Resume { state, decisions, results });
        }
        if repr.decisions.is_some() {
            return Err(Error::invalid_arg("run input: \"decisions\" go with \"resume\""));
        }
        if let Some(execute) = repr.execute {
            if repr.prompt.is_some() {
                return Err(Error::invalid_arg("run input: \"execute\" takes \"messages\", not \"prompt\""));
            }
            let messages = repr.messages.unwrap_or_default();
            check_messages(&messages)?;
            let execute = assistant_message(execute)?;
            check_parts(&Message::Assistant(execute.clone()))
                .map_err(|e| Error::invalid_arg(format!("run input: execute: {e}")))?;
            return Ok(RunSource::Execute { messages, execute });
        }
        match (repr.prompt, repr.messages) {
            (Some(prompt), None) => Ok(RunSource::Prompt(prompt)),
            (None, Some(messages)) if messages.is_empty() => {
                Err(Error::invalid_arg("run input: messages must not be empty"))
            }
            (None, Some(messages)) => {
                check_messages(&messages)?;
                Ok(RunSource::Messages(messages))
            }
            _ => Err(Error::invalid_arg(
                "run input: give exactly one of \"prompt\", \"messages\", \"execute\", \"resume\" and \"invoke\"",
            )),
        }
    }
}

/// The `execute` message: an assistant message whose `role` may be left out.
/// `execute` as [`assistant_message`] reads it: an assistant message whose
/// `role`, when given, is `"assistant"`.
fn execute_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = AssistantMessage::json_schema(generator);
    if let Some(properties) = schema.get_mut("properties").and_then(serde_json::Value::as_object_mut) {
        let role = serde_json::json!({"const": "assistant", "description": "May be left out."});
        properties.insert("role".to_owned(), role);
    }
    schema
}

fn assistant_message(mut value: serde_json::Value) -> Result<AssistantMessage> {
    if let Some(object) = value.as_object_mut() {
        match object.remove("role") {
            None => {}
            Some(role) if role == "assistant" => {}
            Some(role) => {
                return Err(Error::invalid_arg(format!("run input: execute: role must be \"assistant\", not {role}")))
            }
        }
    }
    serde_json::from_value(value).map_err(|e| Error::invalid_arg(format!("run input: execute: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn prompt_is_read() {
        let input = RunInput::from_json(r#"{"prompt": "hi"}"#).unwrap();
        assert_eq!(input, RunInput::prompt("hi"));
    }

    #[test]
    fn result_messages_is_all_unless_none_and_nothing_else() {
        assert_eq!(RunInput::from_json(r#"{"prompt": "hi"}"#).unwrap().result_messages, ResultMessages::All);
        let none = RunInput::from_json(r#"{"prompt": "hi", "result_messages": "none"}"#).unwrap();
        assert_eq!(none.result_messages, ResultMessages::None);
        for (json, says) in [
            (r#"{"prompt": "a", "result_messages": "new"}"#, "unknown variant `new`, expected `all` or `none`"),
            (r#"{"prompt": "a", "result_messages": null}"#, "invalid type: null"),
        ] {
            let err = RunInput::from_json(json).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArg, "{json}: {}", err.message);
            assert!(err.message.contains(says), "{json}: {}", err.message);
        }
    }

    #[test]
    fn both_or_neither_is_rejected() {
        for json in [r#"{}"#, r#"{"prompt": "a", "messages": [{"role": "user", "content": "b"}]}"#] {
            assert_eq!(RunInput::from_json(json).unwrap_err().code, ErrorCode::InvalidArg);
        }
    }

    #[test]
    fn unknown_input_field_is_named() {
        let err = RunInput::from_json(r#"{"prompt": "a", "promt": "b"}"#).unwrap_err();
        assert!(err.message.contains("promt"), "{}", err.message);
    }
}
