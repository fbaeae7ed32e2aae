//! OpenAI Chat Completions (`openai`), and the same wire spoken by other servers
//! (`openai-compatible`: Ollama, vLLM, llama.cpp, OpenRouter, Groq, DeepSeek...).

use serde::Serialize;
use serde_json::{json, Value};

use super::http::{
    in_band, json_bytes, Decoder, EncodedTranscript, JsonObject, ModelSettings, Protocol, SseEvent, StoredResponse,
    WireFormat,
};
use super::images::{self, ImageSource};
use super::response::ResponseBuilder;
use super::{GenerationRequest, JsonSchemaFormat, ToolChoice, ToolDefinition};
use crate::error::{Error, ErrorCode};
use crate::message::{Message, Part, StopReason, Usage};

/// The Chat Completions wire format.
pub(crate) struct ChatCompletions {
    /// `openai` (true) or `openai-compatible` (false): OpenAI takes
    /// `max_completion_tokens`, other servers the older `max_tokens`.
    pub(crate) is_openai: bool,
}

impl WireFormat for ChatCompletions {
    fn name(&self) -> &'static str {
        if self.is_openai {
            "openai"
        } else {
            "openai-compatible"
        }
    }

    /// Tool results are text; the images of a round's results follow them in one
    /// user message that introduces each call's images by its id.
    fn encode_message(
        &self,
        model: &ModelSettings,
        message: &Message,
        out: &mut EncodedTranscript,
    ) -> Result<(), Error> {
        match message {
            Message::System(m) => out.item(&json!({"role": "system", "content": m.content})),
            Message::User(m) => out.item(&json!({"role": "user", "content": user_content(&m.content)})),
            // The API refuses an assistant message with neither content nor
            // calls (one that held only reasoning or a signature).
            Message::Assistant(m) if m.tool_calls.is_empty() && crate::message::text_of(&m.content).is_empty() => {}
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
                out.item(&assistant);
            }
            Message::Tool(m) => {
                let split = images::split(&m.content, &model.name, model.image_input, Some(images::OPENAI_IMAGE_TYPES));
                out.item(&json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": split.text}));
                if !split.images.is_empty() {
                    out.pending_part(
                        &json!({"type": "text", "text": format!("Images from tool call {}:", m.tool_call_id)}),
                    );
                    for image in split.images {
                        out.pending_part(&image_part(image));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Protocol for ChatCompletions {
    type Decoder = ChatDecoder;

    fn body(
        &self,
        model: &ModelSettings,
        request: &GenerationRequest<'_>,
        transcript: &EncodedTranscript,
        _previous: Option<&StoredResponse>,
        body: &mut JsonObject<'_>,
    ) {
        if let Some(max) = model.max_tokens {
            body.field(if self.is_openai { "max_completion_tokens" } else { "max_tokens" }, &max);
        }
        body.raw("messages", |out| {
            let system = request.system.map(|system| json_bytes(&json!({"role": "system", "content": system})));
            transcript.write_array(0, system.as_deref(), out)
        });
        body.field("model", &model.name);
        // Other servers speaking this wire take json_schema formats unevenly; they
        // get the check in the run only.
        if let Some(schema) = request.output_schema.filter(|_| self.is_openai) {
            #[derive(Serialize)]
            struct ResponseFormat<'a> {
                json_schema: JsonSchemaFormat<'a>,
                #[serde(rename = "type")]
                kind: &'static str,
            }
            body.field(
                "response_format",
                &ResponseFormat { json_schema: JsonSchemaFormat::new(schema), kind: "json_schema" },
            );
        }
        if model.stream {
            body.field("stream", &true);
            body.field("stream_options", &json!({"include_usage": true}));
        }
        if !request.tools.is_empty() {
            let choice =
                tool_choice(request.tool_choice, |name| json!({"type": "function", "function": {"name": name}}));
            body.field("tool_choice", &choice);
            let tools: Vec<ChatTool<'_>> = request.tools.iter().map(|tool| ChatTool::new(tool)).collect();
            body.field("tools", &tools);
        }
    }
}

/// A tool definition; fields in key order (see [`JsonObject`]).
#[derive(Serialize)]
struct ChatTool<'a> {
    function: ChatFunction<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}

impl<'a> ChatTool<'a> {
    fn new(tool: &'a ToolDefinition) -> Self {
        ChatTool {
            function: ChatFunction {
                description: &tool.description,
                name: &tool.name,
                parameters: &tool.input_schema,
                strict: tool.strict,
            },
            kind: "function",
        }
    }
}

pub(super) fn image_part(source: ImageSource<'_>) -> Value {
    json!({"type": "image_url", "image_url": {"url": source.to_url()}})
}

pub(super) fn user_content(parts: &[Part]) -> Value {
    if let [Part::Text { text, .. }] = parts {
        return json!(text);
    }
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(json!({"type": "text", "text": text})),
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
        out.describe(Some(&chunk), "id", "model");
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
        out.describe(Some(body), "id", "model");
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
