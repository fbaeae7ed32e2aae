//! The one definition of every JSON document that crosses ferrule's boundary,
//! as a JSON Schema (draft 2020-12) generated from the Rust types that read and
//! write them. The committed `schema/ferrule.schema.json` is this document; the
//! bindings' wire types are generated from it (`codegen/`).
//!
//! A document the host gives ferrule is described as ferrule reads it (a field
//! with a default may be left out); one ferrule gives the host, as ferrule
//! writes it. A type that crosses both ways (a message, a tool result) is
//! described as ferrule reads it: what ferrule writes always satisfies that.
//!
//! The schema gives each document's shape. Two things it leaves to ferrule: the
//! checks across fields (run input names exactly one of its sources, a hook
//! names each stage once), which fail with `INVALID_ARG`; and results that
//! ferrule turns into an error result for the model rather than refusing them
//! (a tool's completion, a `tool_result` hook's `result`), described here in
//! their valid form.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

use crate::agent::{AgentConfig, AgentToolOptions, Decision, Event, InputRepr, RunResult, RunState};
use crate::error::{Error, ErrorCode};
use crate::hook::{
    FinalAnswerDecision, FinalAnswerPayload, HookStages, RunStartDecision, RunStartPayload, ToolCallDecision,
    ToolCallPayload, ToolResultDecision, ToolResultPayload, TurnStartDecision, TurnStartPayload,
};
use crate::log::LogRecord;
use crate::message::{
    AssistantMessage, Message, Origin, Part, StopReason, SystemMessage, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use crate::provider::UnusedRecordings;
use crate::runtime::RuntimeConfig;
use crate::tool::{ToolCompletion, ToolOptions};
use crate::trace::SpanData;

/// Which way a document crosses.
#[derive(Clone, Copy)]
enum Direction {
    /// The host gives it to ferrule.
    In,
    /// Ferrule gives it to the host.
    Out,
}

/// Adds one document to `documents`, its type's schema to the generator's
/// definitions.
type Adder = fn(&mut SchemaGenerator) -> Value;

/// Every document: its name, which way it crosses, where it crosses, and its type.
fn documents() -> Vec<(&'static str, Direction, &'static str, Adder)> {
    fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
        generator.subschema_for::<T>().to_value()
    }
    use Direction::{In, Out};
    vec![
        ("agent_config", In, "ferrule_agent_builder_new", of::<AgentConfig>),
        ("tool_options", In, "ferrule_agent_builder_add_tool (options)", of::<ToolOptions>),
        ("agent_tool_options", In, "ferrule_agent_builder_add_agent (options)", of::<AgentToolOptions>),
        ("hook_stages", In, "ferrule_agent_builder_add_hook (stages)", of::<HookStages>),
        ("runtime_config", In, "ferrule_runtime_configure", of::<RuntimeConfig>),
        ("run_input", In, "ferrule_agent_start", of::<InputRepr>),
        ("decision", In, "run input `decisions`", of::<Decision>),
        ("injected_message", In, "ferrule_run_inject", of::<Message>),
        ("tool_completion", In, "ferrule_tool_call_complete, ferrule_tool_call_update", of::<ToolCompletion>),
        ("run_start_decision", In, "ferrule_hook_respond at run_start", of::<RunStartDecision>),
        ("turn_start_decision", In, "ferrule_hook_respond at turn_start", of::<TurnStartDecision>),
        ("tool_call_decision", In, "ferrule_hook_respond at tool_call", of::<ToolCallDecision>),
        ("tool_result_decision", In, "ferrule_hook_respond at tool_result", of::<ToolResultDecision>),
        ("final_answer_decision", In, "ferrule_hook_respond at final_answer", of::<FinalAnswerDecision>),
        ("event", Out, "the event callback", of::<Event>),
        ("run_result", Out, "ferrule_run_wait, the run_end event", of::<RunResult>),
        ("run_state", Out, "run result `state`, run input `resume`", of::<RunState>),
        ("error", Out, "run result `error`, retry events", of::<Error>),
        ("error_code", Out, "ferrule_error_code (by number), every JSON error (by name)", of::<ErrorCode>),
        ("run_start_payload", Out, "ferrule_hook_payload at run_start", of::<RunStartPayload<'static>>),
        ("turn_start_payload", Out, "ferrule_hook_payload at turn_start", of::<TurnStartPayload<'static>>),
        ("tool_call_payload", Out, "ferrule_hook_payload at tool_call", of::<ToolCallPayload<'static>>),
        ("tool_result_payload", Out, "ferrule_hook_payload at tool_result", of::<ToolResultPayload<'static>>),
        ("final_answer_payload", Out, "ferrule_hook_payload at final_answer", of::<FinalAnswerPayload<'static>>),
        ("unused_recordings", Out, "ferrule_agent_unused_recordings", of::<UnusedRecordings>),
        ("log_record", Out, "the logger (ferrule_runtime_set_logger)", of::<LogRecord>),
        ("span", Out, "the tracer (ferrule_runtime_set_tracer)", of::<SpanData>),
    ]
}

/// The schema document: `$defs` holds every type, and `x-ferrule-documents`
/// names each document, which way it crosses (`in`: host to ferrule), where, and
/// its type.
pub fn document() -> Value {
    let settings = |reading: bool| {
        let settings = SchemaSettings::draft2020_12();
        let settings = if reading { settings.for_deserialize() } else { settings.for_serialize() };
        SchemaGenerator::new(settings)
    };
    let (mut reading, mut writing) = (settings(true), settings(false));
    let mut listed = Map::new();
    for (name, direction, crossing, add) in documents() {
        let (generator, way) = match direction {
            Direction::In => (&mut reading, "in"),
            Direction::Out => (&mut writing, "out"),
        };
        let schema = add(generator);
        listed.insert(name.to_owned(), json!({"direction": way, "crossing": crossing, "schema": schema}));
    }
    // Read types win: what ferrule writes satisfies them too.
    let mut definitions = writing.take_definitions(true);
    definitions.extend(reading.take_definitions(true));
    let mut definitions: Map<String, Value> = definitions.into_iter().collect();
    declare_field_order(&mut definitions);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ferrule.dev/schema/ferrule.schema.json",
        "title": "ferrule",
        "description": "Every JSON document that crosses ferrule's C ABI. Generated from the Rust types; do not edit.",
        "x-ferrule-version": env!("CARGO_PKG_VERSION"),
        "x-ferrule-documents": listed,
        "$defs": definitions,
    })
}

/// A value of every variant of a message and a part with every field
/// present, for the order its type declares the fields in (the schema keeps
/// properties sorted by name, and the bindings take these values in declared
/// order). A struct literal names every field, so a field added to a variant
/// is added here too: give it a value that is written.
fn every_field_present() -> Vec<(&'static str, &'static str, String)> {
    let text = || "x".to_owned();
    let part = |part: Part| ("Part", "type", serde_json::to_string(&part));
    let message = |message: Message| ("Message", "role", serde_json::to_string(&message));
    let call = ToolCall { id: text(), name: text(), arguments: text(), signature: Some(text()) };
    let samples = [
        message(Message::System(SystemMessage { content: text(), origin: Some(Origin::Injection) })),
        message(Message::User(UserMessage { content: vec![Part::text("x")], origin: Some(Origin::Injection) })),
        message(Message::Assistant(AssistantMessage {
            content: vec![Part::text("x")],
            tool_calls: vec![call],
            stop_reason: StopReason::ToolUse,
            usage: Usage::default(),
        })),
        message(Message::Tool(ToolResultMessage {
            tool_call_id: text(),
            name: text(),
            content: vec![Part::text("x")],
            is_error: true,
        })),
        part(Part::Text { text: text(), signature: Some(text()) }),
        part(Part::Image { media_type: Some(text()), data: Some(text()), url: Some(text()) }),
        part(Part::Thinking { thinking: text(), signature: Some(text()), id: Some(text()) }),
        part(Part::RedactedThinking { data: text() }),
        part(Part::File { media_type: text(), data: text(), name: Some(text()) }),
    ];
    samples.into_iter().map(|(name, tag, json)| (name, tag, json.unwrap_or_default())).collect()
}

/// Gives each variant of a message and a part the order its type declares
/// its fields in, as `x-ferrule-order` (its tag first).
fn declare_field_order(definitions: &mut Map<String, Value>) {
    for (name, tag, json) in every_field_present() {
        let keys = keys_in_order(&json);
        let Some(value) = serde_json::from_str::<Value>(&json).ok().and_then(|v| v.get(tag).cloned()) else {
            continue;
        };
        let branches = definitions.get_mut(name).and_then(|d| d.get_mut("oneOf")).and_then(Value::as_array_mut);
        for branch in branches.into_iter().flatten() {
            if branch.pointer(&format!("/properties/{tag}/const")) == Some(&value) {
                branch["x-ferrule-order"] = json!(keys);
            }
        }
    }
}

/// The keys of the JSON object `json`, in the order the text has them.
fn keys_in_order(json: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((key, serde::de::IgnoredAny)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(key);
                    }
                    Ok(Keys(keys))
                }
            }
            deserializer.deserialize_map(Visitor)
        }
    }
    serde_json::from_str::<Keys>(json).map(|keys| keys.0).unwrap_or_default()
}

/// The schema document as the committed file has it: pretty, with a newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}
