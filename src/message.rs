//! The provider-neutral transcript: messages, content parts, tool calls, usage.
//!
//! These types are what the run loop works with; they serialise to exactly the JSON
//! of DESIGN section 2 and reject unknown fields when read from a host.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One message of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// Instructions for the model.
    System(SystemMessage),
    /// What the user said.
    User(UserMessage),
    /// What the model answered, with any tool calls.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolResultMessage),
}

/// A system message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemMessage {
    /// The instructions.
    pub content: String,
    /// Where the message came from, when not from the run's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// A user message: text, or parts (text, images, files).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserMessage {
    /// The content; serialised as a plain string when it is a single non-empty
    /// text part without a signature.
    #[serde(serialize_with = "serialize_user_content", deserialize_with = "deserialize_content")]
    #[schemars(with = "Content")]
    pub content: Vec<Part>,
    /// Where the message came from, when not from the run's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

impl UserMessage {
    /// A user message of one text part.
    pub fn text(text: impl Into<String>) -> Self {
        UserMessage { content: vec![Part::text(text)], origin: None }
    }
}

/// Where a user or system message came from. It never reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Injected into a live run (`ferrule_run_inject`, or a `turn_start` hook).
    Injection,
}

/// An assistant message as the model produced it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssistantMessage {
    /// Text (and later thinking) parts, in order.
    #[serde(default, deserialize_with = "deserialize_content")]
    #[schemars(with = "Content")]
    pub content: Vec<Part>,
    /// The tool calls the model asked for, in the order it asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// Tokens this response used.
    #[serde(default)]
    pub usage: Usage,
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The provider's id for the call; the result message refers to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The raw argument text the model produced; it may be invalid JSON.
    pub arguments: String,
    /// Gemini's `thoughtSignature` that came with the call: sent back with it,
    /// unchanged, and by no other provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolCall {
    /// A call without a signature.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into(), signature: None }
    }
}

/// The result of one tool call, as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub name: String,
    /// What the model sees.
    #[serde(deserialize_with = "deserialize_content")]
    #[schemars(with = "Content")]
    pub content: Vec<Part>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
}

/// A piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Gemini's `thoughtSignature` that came on this part (an answer's
        /// signature may come on an empty text part): sent back on it,
        /// unchanged, and by no other provider.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// An image, inline (`data`, base64, with `media_type`) or by `url`.
    Image {
        /// The MIME type, such as `image/png`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// Base64 image bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("contentEncoding" = "base64"))]
        data: Option<String>,
        /// A URL the provider fetches.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
    },
    /// Model reasoning, kept so it can be sent back: Anthropic requires its
    /// signature on later turns of a tool loop, and OpenAI Responses reasoning
    /// models continue from their earlier reasoning items.
    Thinking {
        /// The reasoning text (for OpenAI Responses, the reasoning summary).
        thinking: String,
        /// The provider's signature over it; for an OpenAI Responses reasoning
        /// item, its encrypted content.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The OpenAI Responses reasoning item's id (`rs_...`); absent for
        /// Anthropic thinking. Each provider sends back only its own reasoning.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// Reasoning the provider returned encrypted.
    #[serde(rename = "redacted_thinking")]
    RedactedThinking {
        /// The opaque data, sent back as received.
        data: String,
    },
    /// A file, inline as base64.
    File {
        /// The MIME type.
        media_type: String,
        /// Base64 file bytes.
        #[schemars(extend("contentEncoding" = "base64"))]
        data: String,
        /// The file name, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into(), signature: None }
    }

    /// Checks what serde cannot: an image needs exactly one of `data` and `url`,
    /// and inline data needs a media type.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Part::Image { data: Some(_), url: Some(_), .. } => {
                Err("an image part has both data and url; give exactly one".into())
            }
            Part::Image { data: None, url: None, .. } => Err("an image part has neither data nor url".into()),
            Part::Image { data: Some(_), media_type: None, .. } => {
                Err("an image part with data needs a media_type".into())
            }
            _ => Ok(()),
        }
    }
}

/// Joins the text parts of `content`, one after another.
pub fn text_of(content: &[Part]) -> String {
    content
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Why a model response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    EndTurn,
    /// The model stopped to have tools run.
    ToolUse,
    /// The output hit the token limit; the content may be cut off.
    Length,
    /// The provider filtered the output.
    ContentFilter,
    /// The response failed part-way.
    Error,
    /// The response was aborted (cancelled).
    Aborted,
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Tokens read by the model, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Tokens the model produced.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
}

impl Usage {
    /// Adds `other` to these counts (saturating: a resumed state's counts come
    /// from the host).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Content as a message or tool result gives it: a plain string (one text
/// part; an empty string is no parts), or a list of parts.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Content {
    /// One text part.
    Text(String),
    /// The parts, in order.
    Parts(Vec<Part>),
}

/// Reads `"text"` or `[Part, ...]` into parts. An empty string is no parts.
pub(crate) fn deserialize_content<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Part>, D::Error> {
    // Parse parts strictly first, so an unknown field in a part is reported as such
    // rather than as "did not match any variant".
    let value = serde_json::Value::deserialize(d)?;
    match value {
        serde_json::Value::String(text) if text.is_empty() => Ok(Vec::new()),
        serde_json::Value::String(text) => Ok(vec![Part::text(text)]),
        other => match serde_json::from_value::<Content>(other.clone()) {
            Ok(Content::Parts(parts)) => Ok(parts),
            Ok(Content::Text(text)) => Ok(vec![Part::text(text)]),
            Err(_) => Vec::<Part>::deserialize(other).map_err(serde::de::Error::custom),
        },
    }
}

fn serialize_user_content<S: Serializer>(content: &[Part], s: S) -> Result<S::Ok, S::Error> {
    match content {
        // An empty string reads back as no parts: one empty text part stays a part.
        [Part::Text { text, signature: None }] if !text.is_empty() => s.serialize_str(text),
        parts => parts.serialize(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_text_round_trips_as_a_string() {
        let message: Message = serde_json::from_value(json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap(), json!({"role": "user", "content": "hi"}));
    }

    #[test]
    fn unknown_message_field_is_named() {
        let err = serde_json::from_value::<Message>(json!({"role": "user", "content": "x", "colour": 1})).unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn unknown_part_field_is_named() {
        let err = serde_json::from_value::<Message>(
            json!({"role": "user", "content": [{"type": "text", "text": "a", "bold": true}]}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("bold"), "{err}");
    }

    #[test]
    fn assistant_message_serialises_in_design_shape() {
        let message = Message::Assistant(AssistantMessage {
            content: vec![Part::text("ok")],
            tool_calls: vec![ToolCall::new("c1", "t", "{}")],
            stop_reason: StopReason::ToolUse,
            usage: Usage { input_tokens: 3, output_tokens: 4, cached_tokens: 0 },
        });
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                   "tool_calls": [{"id": "c1", "name": "t", "arguments": "{}"}],
                   "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}})
        );
    }
}
