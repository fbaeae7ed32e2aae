//! What was said, as the GenAI conventions record it (`gen_ai.input.messages`,
//! `gen_ai.output.messages`): a JSON list of messages, each a `role` and its
//! `parts`. Only with `trace.capture_content`.

use serde_json::{json, Value};

use crate::message::{AssistantMessage, Message, Part};

/// `messages` in the conventions' form, as JSON text.
pub(crate) fn messages(messages: &[Message]) -> String {
    Value::Array(messages.iter().map(message).collect()).to_string()
}

/// What tells `message` from another: a hash of its JSON.
pub(crate) fn identity(message: &Message) -> u64 {
    crate::provider::tool_calls::stable_hash(&serde_json::to_vec(message).unwrap_or_default())
}

/// An answer in the conventions' form (with its finish reason), as JSON text.
pub(crate) fn output(answer: &AssistantMessage) -> String {
    let mut message = assistant(answer);
    message["finish_reason"] = super::run::finish_reason(answer.stop_reason).into();
    Value::Array(vec![message]).to_string()
}

/// The system prompt in the conventions' form, as JSON text.
pub(crate) fn system(text: &str) -> String {
    json!([{"type": "text", "content": text}]).to_string()
}

fn message(message: &Message) -> Value {
    match message {
        Message::System(system) => json!({"role": "system", "parts": [{"type": "text", "content": system.content}]}),
        Message::User(user) => json!({"role": "user", "parts": parts(&user.content)}),
        Message::Assistant(answer) => assistant(answer),
        Message::Tool(result) => json!({"role": "tool", "parts": [{
            "type": "tool_call_response", "id": result.tool_call_id,
            "response": crate::message::text_of(&result.content),
        }]}),
    }
}

fn assistant(answer: &AssistantMessage) -> Value {
    let mut all = parts(&answer.content);
    all.extend(answer.tool_calls.iter().map(|call| {
        let arguments = serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments.clone()));
        json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    }));
    json!({"role": "assistant", "parts": all})
}

fn parts(content: &[Part]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(json!({"type": "text", "content": text})),
            Part::Thinking { thinking, .. } if !thinking.is_empty() => {
                Some(json!({"type": "reasoning", "content": thinking}))
            }
            Part::Image { media_type, url, .. } => {
                Some(json!({"type": "blob", "modality": "image", "mime_type": media_type, "uri": url}))
            }
            Part::File { media_type, name, .. } => {
                Some(json!({"type": "blob", "modality": "file", "mime_type": media_type, "name": name}))
            }
            Part::Thinking { .. } | Part::RedactedThinking { .. } => None,
        })
        .collect()
}
