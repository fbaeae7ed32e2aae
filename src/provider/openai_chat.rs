//! OpenAI Chat Completions (`openai`), and the same wire spoken by other servers
//! (`openai-compatible`: Ollama, vLLM, llama.cpp, OpenRouter, Groq, DeepSeek...).

use serde_json::{json, Map, Value};

use super::http::{in_band, Decoder, ModelSettings, Protocol, SseEvent};
use super::images::{self, ImageSource};
use super::response::ResponseBuilder;
use super::{strict_tools_check, GenerationRequest, ToolChoice};
use crate::error::{Error, ErrorCode};
use crate::message::{Message, Part, StopReason, Usage};

/// The Chat Completions wire format.
pub(crate) struct ChatCompletions {
    /// `openai` (true) or `openai-compatible` (false): OpenAI takes
    /// `max_completion_tokens`, other servers the older `max_tokens`.
    pub(crate) is_openai: bool,
}

impl Protocol for ChatCompletions {
    type Decoder = ChatDecoder;

    fn name(&self) -> &'static str {
        if self.is_openai {
            "openai"
        } else {
            "openai-compatible"
        }
    }

    fn body(&self, model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, Error> {
        strict_tools_check(self.name(), model, request)?;
        let mut body = Map::new();
        body.insert("model".into(), json!(model.name));
        body.insert("messages".into(), Value::Array(messages(model, request)));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    let mut function =
                        json!({"name": tool.name, "description": tool.description, "parameters": tool.input_schema});
                    if tool.strict {
                        function["strict"] = json!(true);
                    }
                    json!({"type": "function", "function": function})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice =
                tool_choice(request.tool_choice, |name| json!({"type": "function", "function": {"name": name}}));
            body.insert("tool_choice".into(), choice);
        }
        if let Some(max) = model.max_tokens {
            let field = if self.is_openai { "max_completion_tokens" } else { "max_tokens" };
            body.insert(field.into(), json!(max));
        }
        if model.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(Value::Object(body))
    }
}

/// The transcript as Chat Completions messages. Tool results are text; the images
/// of a round's results follow them in one user message that introduces each
/// call's images by its id.
fn messages(model: &ModelSettings, request: &GenerationRequest<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    let mut round_images: Vec<Value> = Vec::new();
    for message in request.messages {
        if !matches!(message, Message::Tool(_)) {
            flush_images(&mut out, &mut round_images);
        }
        match message {
            Message::System(m) => out.push(json!({"role": "system", "content": m.content})),
            Message::User(m) => out.push(json!({"role": "user", "content": user_content(&m.content)})),
            Message::Assistant(m) => {
                let text = crate::message::text_of(&m.content);
                let mut assistant =
                    json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !m.tool_calls.is_empty() {
                    assistant["tool_calls"] = m
                        .tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                        .collect();
                }
                out.push(assistant);
            }
            Message::Tool(m) => {
                let split = images::split(&m.content, &model.name, model.image_input, Some(images::OPENAI_IMAGE_TYPES));
                out.push(json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": split.text}));
                if !split.images.is_empty() {
                    round_images
                        .push(json!({"type": "text", "text": format!("Images from tool call {}:", m.tool_call_id)}));
                    round_images.extend(split.images.into_iter().map(image_part));
                }
            }
        }
    }
    flush_images(&mut out, &mut round_images);
    out
}

fn flush_images(out: &mut Vec<Value>, images: &mut Vec<Value>) {
    if !images.is_empty() {
        out.push(json!({"role": "user", "content": std::mem::take(images)}));
    }
}

fn image_part(source: ImageSource<'_>) -> Value {
    json!({"type": "image_url", "image_url": {"url": source.to_url()}})
}

fn user_content(parts: &[Part]) -> Value {
    if let [Part::Text { text }] = parts {
        return json!(text);
    }
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(json!({"type": "text", "text": text})),
            Part::Image { media_type, data, url } => match (data, url) {
                (Some(data), _) => {
                    Some(image_part(ImageSource::Inline { media_type: media_type.as_deref().unwrap_or(""), data }))
                }
                (None, Some(url)) => Some(image_part(ImageSource::Url(url))),
                (None, None) => None,
            },
            Part::File { media_type, data, name } => Some(json!({"type": "file", "file": {
                "filename": name.as_deref().unwrap_or("file"),
                "file_data": format!("data:{media_type};base64,{data}")
            }})),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => None,
        })
        .collect()
}

/// Decodes Chat Completions chunks.
#[derive(Default)]
pub(crate) struct ChatDecoder {
    finished: bool,
}

impl Decoder for ChatDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut ResponseBuilder) -> Result<bool, Error> {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(&event.data).map_err(|e| malformed(&e))?;
        if event.name.as_deref() == Some("error") || chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(in_band("openai-compatible", &chunk));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            out.usage = usage_of(usage);
        }
        let Some(choice) = first_choice(&chunk) else { return Ok(false) };
        if let Some(delta) = choice.get("delta") {
            for key in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(key).and_then(Value::as_str) {
                    out.thinking(text);
                }
            }
            for key in ["content", "refusal"] {
                if let Some(text) = delta.get(key).and_then(Value::as_str) {
                    out.text(text);
                }
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                add_call(call.get("index").and_then(Value::as_u64).unwrap_or(0), call, out)?;
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            out.stop_reason = Some(stop_reason(reason));
            self.finished = true;
        }
        Ok(false)
    }

    fn whole(&mut self, body: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
        if body.get("error").is_some_and(|e| !e.is_null()) {
            return Err(in_band("openai-compatible", body));
        }
        let choice = first_choice(body).ok_or_else(|| malformed_text("the response has no choices"))?;
        let message = choice.get("message").ok_or_else(|| malformed_text("the choice has no message"))?;
        if let Some(text) = message.get("reasoning_content").and_then(Value::as_str) {
            out.thinking(text);
            out.end_part();
        }
        for key in ["content", "refusal"] {
            if let Some(text) = message.get(key).and_then(Value::as_str) {
                out.text(text);
            }
        }
        for (position, call) in (0u64..).zip(message.get("tool_calls").and_then(Value::as_array).into_iter().flatten())
        {
            add_call(position, call, out)?;
        }
        out.stop_reason = choice.get("finish_reason").and_then(Value::as_str).map(stop_reason);
        if let Some(usage) = body.get("usage").filter(|u| u.is_object()) {
            out.usage = usage_of(usage);
        }
        Ok(())
    }

    fn complete_at_end(&self) -> bool {
        self.finished
    }
}

/// A `tool_calls` entry (whole, or a streamed piece) at `position`.
fn add_call(position: u64, call: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
    let function = call.get("function");
    out.tool_call(
        position,
        call.get("id").and_then(Value::as_str),
        function.and_then(|f| f.get("name")).and_then(Value::as_str),
        function.and_then(|f| f.get("arguments")).and_then(Value::as_str).unwrap_or(""),
    )
}

/// `tool_choice` as both OpenAI wires spell it; they differ only in how a named
/// tool is given.
pub(crate) fn tool_choice(choice: &ToolChoice, named: impl FnOnce(&str) -> Value) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(name) => named(name),
    }
}

/// The first choice (`n` above 1 is not supported; other choices are ignored).
fn first_choice(chunk: &Value) -> Option<&Value> {
    chunk.get("choices")?.as_array()?.iter().find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::Length,
        "content_filter" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

fn usage_of(usage: &Value) -> Usage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: count(usage.get("prompt_tokens")),
        output_tokens: count(usage.get("completion_tokens")),
        cached_tokens: count(usage.pointer("/prompt_tokens_details/cached_tokens")),
    }
}

fn malformed(error: &serde_json::Error) -> Error {
    malformed_text(&format!("a chunk is not valid JSON: {error}"))
}

fn malformed_text(what: &str) -> Error {
    Error::new(ErrorCode::ProviderMalformedStream, format!("chat completions: {what}"))
}
