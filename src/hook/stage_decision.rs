//! The decisions each stage takes, as the JSON a host answers with: `{}` to go
//! on, or an object of exactly one key, the decision, with its value (DESIGN
//! section 10). One type per stage; each is read from JSON and becomes a
//! [`HookDecision`].

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::{HookDecision, HookStage};
use crate::message::Message;
use crate::tool::json_kind;

/// A `run_start` hook's decision: `{}`, or one of these.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = allow_proceeding)]
pub enum RunStartDecision {
    /// End the run `failed` with `HOOK_ABORTED` and this reason.
    Abort(Reason),
    /// Replace the run's input with these messages (a legal transcript).
    Messages(History),
}

/// A `turn_start` hook's decision: `{}`, or one of these.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = allow_proceeding)]
pub enum TurnStartDecision {
    /// End the run `failed` with `HOOK_ABORTED` and this reason.
    Abort(Reason),
    /// This turn's tool set: a subset of the run's tools (an empty list offers
    /// none).
    Tools(Vec<String>),
    /// User or system messages appended before the request, marked as injected.
    Inject(Vec<Message>),
    /// A history that replaces the run's from now on, in the run result too
    /// (a legal transcript).
    Messages(History),
}

/// A `tool_call` hook's decision: `{}`, or one of these.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = allow_proceeding)]
pub enum ToolCallDecision {
    /// End the run `failed` with `HOOK_ABORTED` and this reason.
    Abort(Reason),
    /// The call does not run; the model sees an error result with this text.
    Deny(Reason),
    /// The call's arguments, replaced (validated against the schema again).
    Arguments(Arguments),
    /// Approves a call that needs approval (`true`).
    Approve(Yes),
    /// The call needs approval: the run ends `interrupted` (`true`).
    Interrupt(Yes),
}

/// A `tool_result` hook's decision: `{}`, or one of these.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = allow_proceeding)]
pub enum ToolResultDecision {
    /// End the run `failed` with `HOOK_ABORTED` and this reason.
    Abort(Reason),
    /// The call's result, replaced: a tool result (an invalid one becomes an
    /// error result).
    Result(#[schemars(with = "crate::tool::ToolCompletion")] Value),
}

/// A `final_answer` hook's decision: `{}`, or one of these.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = allow_proceeding)]
pub enum FinalAnswerDecision {
    /// End the run `failed` with `HOOK_ABORTED` and this reason.
    Abort(Reason),
    /// Send the answer back: this feedback goes to the model as a user message
    /// and the loop goes on.
    Retry(Reason),
}

/// Text that is not blank.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason(String);

/// The value `true`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Yes;

/// Messages that are not an empty list.
#[derive(Debug, Clone, PartialEq)]
pub struct History(Vec<Message>);

/// A JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments(Map<String, Value>);

/// The schemas of the value types above, written where they are inlined.
macro_rules! inline_schema {
    ($type:ty, |$generator:ident| $schema:expr) => {
        impl JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($type).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema($generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $schema
            }
        }
    };
}

inline_schema!(Reason, |_generator| schemars::json_schema!({"type": "string", "pattern": "\\S"}));
inline_schema!(Yes, |_generator| schemars::json_schema!({"const": true}));
inline_schema!(Arguments, |_generator| schemars::json_schema!({"type": "object"}));
inline_schema!(History, |generator| {
    let mut schema = generator.subschema_for::<Vec<Message>>();
    schema.insert("minItems".to_owned(), 1.into());
    schema
});

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(text) if text.trim().is_empty() => Err(serde::de::Error::custom("must not be blank")),
            Value::String(text) => Ok(Reason(text)),
            other => Err(serde::de::Error::custom(format!("must be a string, not {}", json_kind(&other)))),
        }
    }
}

impl<'de> Deserialize<'de> for Yes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(true) => Ok(Yes),
            other => Err(serde::de::Error::custom(format!("takes true, not {other}"))),
        }
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Vec::<Message>::deserialize(d)? {
            messages if messages.is_empty() => Err(serde::de::Error::custom("must not be empty")),
            messages => Ok(History(messages)),
        }
    }
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Object(arguments) => Ok(Arguments(arguments)),
            other => Err(serde::de::Error::custom(format!("must be a JSON object, not {}", json_kind(&other)))),
        }
    }
}

/// A stage's decision type.
pub(crate) trait StageDecision: serde::de::DeserializeOwned + JsonSchema + Into<HookDecision> {}

impl<T: serde::de::DeserializeOwned + JsonSchema + Into<HookDecision>> StageDecision for T {}

/// The keys `stage`'s decision type takes, in order: read once from the types'
/// schemas, so that the types are the one list.
pub(crate) fn keys_of(stage: HookStage) -> &'static [String] {
    static KEYS: OnceLock<[Vec<String>; 5]> = OnceLock::new();
    let [run_start, turn_start, tool_call, tool_result, final_answer] = KEYS.get_or_init(|| {
        [
            keys::<RunStartDecision>(),
            keys::<TurnStartDecision>(),
            keys::<ToolCallDecision>(),
            keys::<ToolResultDecision>(),
            keys::<FinalAnswerDecision>(),
        ]
    });
    match stage {
        HookStage::RunStart => run_start,
        HookStage::TurnStart => turn_start,
        HookStage::ToolCall => tool_call,
        HookStage::ToolResult => tool_result,
        HookStage::FinalAnswer => final_answer,
    }
}

/// The keys of the decision type `T`, in order.
fn keys<T: StageDecision>() -> Vec<String> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    let branches = schema.get("oneOf").and_then(Value::as_array).into_iter().flatten();
    branches.filter_map(|branch| Some(branch.pointer("/required/0")?.as_str()?.to_owned())).collect()
}

/// Adds `{}` (go on) to a stage's decisions.
fn allow_proceeding(schema: &mut schemars::Schema) {
    let proceed = serde_json::json!({"type": "object", "maxProperties": 0, "description": "Go on."});
    if let Some(Value::Array(branches)) = schema.get_mut("oneOf") {
        branches.insert(0, proceed);
    }
}

impl From<RunStartDecision> for HookDecision {
    fn from(decision: RunStartDecision) -> Self {
        match decision {
            RunStartDecision::Abort(Reason(reason)) => HookDecision::Abort(reason),
            RunStartDecision::Messages(History(messages)) => HookDecision::Messages(messages),
        }
    }
}

impl From<TurnStartDecision> for HookDecision {
    fn from(decision: TurnStartDecision) -> Self {
        match decision {
            TurnStartDecision::Abort(Reason(reason)) => HookDecision::Abort(reason),
            TurnStartDecision::Tools(tools) => HookDecision::Tools(tools),
            TurnStartDecision::Inject(messages) => HookDecision::Inject(messages),
            TurnStartDecision::Messages(History(messages)) => HookDecision::Messages(messages),
        }
    }
}

impl From<ToolCallDecision> for HookDecision {
    fn from(decision: ToolCallDecision) -> Self {
        match decision {
            ToolCallDecision::Abort(Reason(reason)) => HookDecision::Abort(reason),
            ToolCallDecision::Deny(Reason(text)) => HookDecision::Deny(text),
            ToolCallDecision::Arguments(Arguments(arguments)) => HookDecision::Arguments(Value::Object(arguments)),
            ToolCallDecision::Approve(Yes) => HookDecision::Approve,
            ToolCallDecision::Interrupt(Yes) => HookDecision::Interrupt,
        }
    }
}

impl From<ToolResultDecision> for HookDecision {
    fn from(decision: ToolResultDecision) -> Self {
        match decision {
            ToolResultDecision::Abort(Reason(reason)) => HookDecision::Abort(reason),
            ToolResultDecision::Result(result) => HookDecision::Result(result),
        }
    }
}

impl From<FinalAnswerDecision> for HookDecision {
    fn from(decision: FinalAnswerDecision) -> Self {
        match decision {
            FinalAnswerDecision::Abort(Reason(reason)) => HookDecision::Abort(reason),
            FinalAnswerDecision::Retry(Reason(feedback)) => HookDecision::Retry(feedback),
        }
    }
}
