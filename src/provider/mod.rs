//! Model providers. A [`Generator`] turns a request (system prompt, transcript, tool
//! definitions) into one streamed assistant message.

mod anthropic;
mod config;
#[cfg(test)]
mod encoding_tests;
mod gemini;
pub(crate) mod host;
pub(crate) mod http;
mod images;
mod openai_chat;
mod openai_responses;
mod partial_args;
#[cfg(test)]
mod reference_bodies;
mod response;
mod scripted;
mod select;
pub(crate) mod tool_calls;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

pub use config::{ModelConfig, ProviderKind, RecordConfig, RecordMode, Thinking, ThinkingLevel, Timeouts};
pub use http::{UnusedExchange, UnusedRecordings};
pub use scripted::{ScriptCall, ScriptError, ScriptTurn, ScriptedGenerator};
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use select::decode_pieces;
pub use select::decode_recorded;
pub(crate) use select::generator_for;

use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Message};
use crate::trace::SpanContext;
use crate::BoxFuture;

/// Which tool the model must (or must not) use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model may not call tools.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Named(String),
}

/// Which tool the model must (or must not) use: `"auto"`, `"none"`,
/// `"required"` or `{"name": "<tool>"}`.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum ToolChoiceJson {
    /// The model decides, may not call tools, or must call one.
    Mode(ToolMode),
    /// The model must call the named tool.
    Named(NamedTool),
}

/// A tool choice that names no tool.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum ToolMode {
    /// The model decides.
    Auto,
    /// The model may not call tools.
    None,
    /// The model must call some tool.
    Required,
}

/// `{"name": "<tool>"}`: the model must call this tool.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NamedTool {
    /// The tool's name.
    name: String,
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let invalid = || {
            serde::de::Error::custom("tool_choice must be \"auto\", \"none\", \"required\" or {\"name\": \"<tool>\"}")
        };
        Ok(match ToolChoiceJson::deserialize(d).map_err(|_| invalid())? {
            ToolChoiceJson::Mode(ToolMode::Auto) => ToolChoice::Auto,
            ToolChoiceJson::Mode(ToolMode::None) => ToolChoice::None,
            ToolChoiceJson::Mode(ToolMode::Required) => ToolChoice::Required,
            ToolChoiceJson::Named(NamedTool { name }) => ToolChoice::Named(name),
        })
    }
}

impl JsonSchema for ToolChoice {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolChoice".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ToolChoiceJson::json_schema(generator)
    }
}

/// A tool as a provider describes it to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its input schema (Draft 2020-12).
    pub input_schema: Value,
    /// Whether the provider should guarantee arguments match the schema.
    pub strict: bool,
}

/// One model request.
#[derive(Debug, Clone, Copy)]
pub struct GenerationRequest<'a> {
    /// The round this request belongs to, from 1.
    pub turn: u32,
    /// The serial of the run making the request (never 0), for host code the
    /// request calls.
    pub run_serial: u64,
    /// The id of the run making the request, as in its events (`"run-7"`).
    pub run_id: &'a str,
    /// The agent's system prompt, sent before the transcript.
    pub system: Option<&'a str>,
    /// The transcript so far (see [`WireCache`]).
    pub messages: &'a [Message],
    /// The tools the model may call this round.
    pub tools: &'a [&'a ToolDefinition],
    /// The tool choice.
    pub tool_choice: &'a ToolChoice,
    /// The JSON Schema the final answer must satisfy, for providers that can be
    /// asked for it natively (the run checks the answer in every case).
    pub output_schema: Option<&'a Value>,
    /// The request's span, when its run is traced with `trace.propagate`:
    /// HTTP providers send its `traceparent` and `tracestate`.
    pub trace: Option<&'a SpanContext>,
}

/// A piece of a response as it streams in, borrowed from the generator (a sink
/// copies only what it keeps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delta<'a> {
    /// Answer text.
    Text(&'a str),
    /// Reasoning text.
    Thinking(&'a str),
    /// A piece of a tool call.
    ToolCall {
        /// The call's position in the response.
        index: u32,
        /// The call id, when this piece carries it.
        id: Option<&'a str>,
        /// The tool name, when this piece carries it.
        name: Option<&'a str>,
        /// More argument text.
        arguments: &'a str,
    },
}

/// Where a generator reports while it works: streamed deltas, and retries of a
/// failed request. Sending may wait (the run's event queue is bounded). Each
/// future does its work when first polled: one dropped unpolled reports nothing.
pub trait DeltaSink: Send {
    /// Forwards one delta.
    fn send<'a>(&'a mut self, delta: Delta<'a>) -> BoxFuture<'a, ()>;
    /// Says that attempt number `attempt` (from 2) follows in `delay`, because the
    /// previous one failed with `error`.
    fn retry<'a>(&'a mut self, attempt: u32, error: &'a Error, delay: Duration) -> BoxFuture<'a, ()>;
    /// Says which response this is: the provider's id for it and the model
    /// that answered, where the provider told them. Called at most once,
    /// before the response is returned.
    fn described(&mut self, _id: Option<&str>, _model: Option<&str>) {}
}

/// A model. Shared by every run of an agent; `generate` may be called
/// concurrently. Dropping the returned future aborts the request.
pub trait Generator: Send + Sync + 'static {
    /// Streams one response into `deltas` and returns the complete message, or the
    /// classified error that ended the request.
    fn generate<'a>(
        &'a self,
        request: GenerationRequest<'a>,
        wire: &'a mut WireCache,
        deltas: &'a mut dyn DeltaSink,
    ) -> BoxFuture<'a, Result<AssistantMessage, Error>>;

    /// The exchanges of the cassette the model replays (`model.record`) that
    /// no request has used so far; `None` for a model that replays none.
    fn unused_recordings(&self) -> Option<Vec<UnusedExchange>> {
        None
    }
}

/// What a generator keeps between the model requests of one run: for the HTTP
/// providers, the transcript already encoded in their wire format, so that a
/// request encodes only the messages that are new. Each run owns one and hands
/// it to every request it makes, one at a time, with the run's transcript, which
/// must only grow between requests (a run that replaces its history takes a new
/// cache). A cache written for another wire format, or for a longer transcript,
/// is started over; the content of messages already encoded is not checked again.
#[derive(Debug, Default)]
pub struct WireCache {
    /// Boxed: runs of models that encode no transcript (scripted, host
    /// models) keep a pointer, not its room.
    transcript: Option<Box<http::EncodedTranscript>>,
    /// The last response, when the server keeps the history.
    stored_response: Option<http::StoredResponse>,
    /// A host model's: the messages its previous request held.
    host_messages_sent: usize,
}

/// Refuses, before anything is sent, a request whose tools ask for strict
/// arguments when the model cannot guarantee them.
fn strict_tools_check(
    provider: &str,
    model: &http::ModelSettings,
    request: &GenerationRequest<'_>,
) -> Result<(), Error> {
    match request.tools.iter().find(|tool| tool.strict) {
        Some(tool) if !model.strict_tools => Err(Error::new(
            ErrorCode::ProviderInvalidRequest,
            format!(
                "tool \"{}\" asks for strict arguments, which {provider} model \"{}\" does not support here (set model.strict_tools if it does)",
                tool.name, model.name
            ),
        )),
        _ => Ok(()),
    }
}

/// Whether OpenAI's strict structured output can take `schema`: every object
/// lists all its properties as required and allows no others. A schema that
/// cannot is sent without `strict`.
fn is_strict_schema(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let is_object = map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
            if is_object {
                let properties = map.get("properties").and_then(Value::as_object);
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let all_required = properties.is_none_or(|p| p.keys().all(|k| required.contains(&k.as_str())));
                if !all_required || map.get("additionalProperties") != Some(&Value::Bool(false)) {
                    return false;
                }
            }
            map.values().all(is_strict_schema)
        }
        Value::Array(items) => items.iter().all(is_strict_schema),
        _ => true,
    }
}

/// The output schema as OpenAI's `json_schema` format object: `{"name",
/// "schema", "strict"}` (keys in order).
#[derive(serde::Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'static str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> JsonSchemaFormat<'a> {
    fn new(schema: &'a Value) -> Self {
        JsonSchemaFormat { name: "output", schema, strict: is_strict_schema(schema) }
    }
}

/// The error code for an HTTP status, the same for every provider.
pub fn classify_status(status: u16) -> ErrorCode {
    use ErrorCode::*;
    match status {
        401 | 403 => ProviderAuth,
        404 => ProviderNotFound,
        429 => ProviderRateLimited,
        503 | 529 => ProviderOverloaded,
        500..=599 => ProviderServer,
        _ => ProviderInvalidRequest,
    }
}
