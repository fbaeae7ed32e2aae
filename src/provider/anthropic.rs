//! Anthropic Messages (`anthropic`).

use serde::Serialize;
use serde_json::{json, Value};

use super::http::{
    in_band, Decoder, EncodedTranscript, JsonObject, ModelSettings, Protocol, SseEvent, StoredResponse, WireFormat,
};
use super::images::{self, ImageSource};
use super::response::ResponseBuilder;
use super::{GenerationRequest, ToolChoice, ToolDefinition};
use crate::error::{Error, ErrorCode};
use crate::message::{Message, Part, StopReason, ToolResultMessage, Usage};

/// Output tokens asked for when the configuration sets no `max_tokens` (the
/// Messages API requires a value).
pub(super) const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The image types the Messages API accepts.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The Messages wire format.
pub(crate) struct Messages;

impl WireFormat for Messages {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    /// System messages join the system text; a round's tool results go together
    /// in one user message, images inside their `tool_result` blocks.
    fn encode_message(
        &self,
        model: &ModelSettings,
        message: &Message,
        out: &mut EncodedTranscript,
    ) -> Result<(), Error> {
        match message {
            Message::System(m) => out.system_text(&m.content),
            Message::User(m) => out.item(&json!({"role": "user", "content": blocks(&m.content)?})),
            Message::Assistant(m) => {
                let mut content = blocks(&m.content)?;
                for call in &m.tool_calls {
                    let input = serde_json::from_str::<Value>(&call.arguments).ok().filter(Value::is_object);
                    content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input.unwrap_or_else(|| json!({}))}));
                }
                // The API refuses an empty message (one that held only another
                // provider's reasoning or signature).
                if !content.is_empty() {
                    out.item(&json!({"role": "assistant", "content": content}));
                }
            }
            Message::Tool(m) => out.pending_part(&tool_result(model, m)?),
        }
        Ok(())
    }
}

impl Protocol for Messages {
    type Decoder = MessagesDecoder;

    fn body(
        &self,
        model: &ModelSettings,
        request: &GenerationRequest<'_>,
        transcript: &EncodedTranscript,
        _previous: Option<&StoredResponse>,
        body: &mut JsonObject<'_>,
    ) {
        body.field("max_tokens", &model.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS));
        body.raw("messages", |out| transcript.write_array(0, None, out));
        body.field("model", &model.name);
        if model.stream {
            body.field("stream", &true);
        }
        // An empty system text is left out, as the API refuses it.
        let system = transcript.system_text_after(request.system);
        if !system.is_empty() {
            body.field("system", &system);
        }
        if !request.tools.is_empty() {
            let choice = match request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
            };
            body.field("tool_choice", &choice);
            let tools: Vec<AnthropicTool<'_>> = request.tools.iter().map(|tool| AnthropicTool::new(tool)).collect();
            body.field("tools", &tools);
        }
    }
}

/// A tool definition; fields in key order (see [`JsonObject`]).
#[derive(Serialize)]
struct AnthropicTool<'a> {
    description: &'a str,
    input_schema: &'a Value,
    name: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    strict: bool,
}

impl<'a> AnthropicTool<'a> {
    fn new(tool: &'a ToolDefinition) -> Self {
        AnthropicTool {
            description: &tool.description,
            input_schema: &tool.input_schema,
            name: &tool.name,
            strict: tool.strict,
        }
    }
}

pub(super) fn tool_result(model: &ModelSettings, result: &ToolResultMessage) -> Result<Value, Error> {
    let split = images::split(&result.content, &model.name, model.image_input, None);
    let mut content = Vec::new();
    // The API refuses an empty text block.
    if !split.text.is_empty() {
        content.push(json!({"type": "text", "text": split.text}));
    }
    for image in split.images {
        content.push(image_block(image)?);
    }
    Ok(
        json!({"type": "tool_result", "tool_use_id": result.tool_call_id, "content": content, "is_error": result.is_error}),
    )
}

pub(super) fn blocks(parts: &[Part]) -> Result<Vec<Value>, Error> {
    let mut blocks = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text { text, .. } if text.is_empty() => {}
            Part::Text { text, .. } => blocks.push(json!({"type": "text", "text": text})),
            Part::Image { media_type, data, url } => blocks.push(image_block(match (data, url) {
                (Some(data), _) => ImageSource::Inline { media_type: media_type.as_deref().unwrap_or(""), data },
                (None, Some(url)) => ImageSource::Url(url),
                (None, None) => continue,
            })?),
            Part::File { media_type, data, .. } => blocks.push(
                json!({"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}}),
            ),
            // An OpenAI reasoning item (it has an id) means nothing to Anthropic,
            // and the API refuses thinking without its signature (another
            // provider's reasoning, such as Gemini's or DeepSeek's).
            Part::Thinking { id: Some(_), .. } | Part::Thinking { signature: None, .. } => {}
            Part::Thinking { thinking, signature: Some(signature), id: None } => {
                blocks.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
            }
            Part::RedactedThinking { data } => blocks.push(json!({"type": "redacted_thinking", "data": data})),
        }
    }
    Ok(blocks)
}

fn image_block(source: ImageSource<'_>) -> Result<Value, Error> {
    match source {
        ImageSource::Inline { media_type, data } => {
            if !IMAGE_TYPES.contains(&media_type) {
                return Err(Error::new(
                    ErrorCode::ProviderInvalidRequest,
                    format!("anthropic: images must be PNG, JPEG, GIF or WebP; got {media_type:?}"),
                ));
            }
            Ok(json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}))
        }
        ImageSource::Url(url) => Ok(json!({"type": "image", "source": {"type": "url", "url": url}})),
    }
}

/// Decodes Messages stream events.
#[derive(Default)]
pub(crate) struct MessagesDecoder {
    stopped: bool,
}

impl Decoder for MessagesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut ResponseBuilder) -> Result<bool, Error> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            Error::new(ErrorCode::ProviderMalformedStream, format!("anthropic: an event is not valid JSON: {e}"))
        })?;
        let kind = data.get("type").and_then(Value::as_str).or(event.name.as_deref()).unwrap_or("");
        let position = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                out.describe(data.get("message"), "id", "model");
                if let Some(usage) = data.pointer("/message/usage") {
                    out.usage = usage_of(usage);
                }
            }
            "content_block_start" => {
                let block = data.get("content_block").unwrap_or(&Value::Null);
                start_block(block, position, out)?;
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                let text = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or("");
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.text(text("text")),
                    Some("thinking_delta") => out.thinking(text("thinking")),
                    Some("signature_delta") => out.thinking_signature(text("signature")),
                    Some("input_json_delta") => out.tool_call(position, None, None, text("partial_json"))?,
                    _ => {}
                }
            }
            "content_block_stop" => out.end_part(),
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    out.stop_reason = Some(stop_reason(reason));
                    self.stopped = true;
                }
                if let Some(tokens) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    out.usage.output_tokens = tokens;
                }
            }
            "message_stop" => return Ok(true),
            "error" => return Err(in_band("anthropic", &data)),
            _ => {}
        }
        Ok(false)
    }

    fn whole(&mut self, body: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return Err(in_band("anthropic", body));
        }
        out.describe(Some(body), "id", "model");
        for (position, block) in (0u64..).zip(body.get("content").and_then(Value::as_array).into_iter().flatten()) {
            start_block(block, position, out)?;
            if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                let input = block.get("input").map(Value::to_string).unwrap_or_default();
                out.tool_call(position, None, None, &input)?;
            }
            out.end_part();
        }
        out.stop_reason = body.get("stop_reason").and_then(Value::as_str).map(stop_reason);
        if let Some(usage) = body.get("usage") {
            out.usage = usage_of(usage);
        }
        Ok(())
    }

    fn complete_at_end(&self) -> bool {
        self.stopped
    }
}

/// A content block's start: text and thinking may carry their first text; a
/// tool_use starts a call (its input arrives as JSON deltas).
fn start_block(block: &Value, position: u64, out: &mut ResponseBuilder) -> Result<(), Error> {
    let field = |key: &str| block.get(key).and_then(Value::as_str);
    out.end_part();
    match field("type") {
        Some("text") => out.text(field("text").unwrap_or("")),
        Some("thinking") => {
            out.thinking(field("thinking").unwrap_or(""));
            if let Some(signature) = field("signature").filter(|s| !s.is_empty()) {
                out.thinking_signature(signature);
            }
        }
        Some("redacted_thinking") => out.redacted_thinking(field("data").unwrap_or("")),
        Some("tool_use") => out.tool_call(position, field("id"), field("name"), "")?,
        _ => {}
    }
    Ok(())
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "refusal" => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

/// Anthropic counts cache reads and writes apart from `input_tokens`; ferrule's
/// input count includes them.
fn usage_of(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("cache_read_input_tokens");
    Usage {
        input_tokens: count("input_tokens").saturating_add(cached).saturating_add(count("cache_creation_input_tokens")),
        output_tokens: count("output_tokens"),
        cached_tokens: cached,
    }
}
