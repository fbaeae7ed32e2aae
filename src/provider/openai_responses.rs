//! OpenAI Responses (`openai-responses`).

use serde::Serialize;
use serde_json::{json, Value};

use super::http::{
    in_band, Decoder, EncodedTranscript, JsonObject, ModelSettings, Protocol, SseEvent, StoredResponse, WireFormat,
};
use super::images::{self, ImageSource};
use super::openai_chat::tool_choice;
use super::response::ResponseBuilder;
use super::{GenerationRequest, JsonSchemaFormat, ToolDefinition};
use crate::error::{Error, ErrorCode};
use crate::message::{text_of, Message, Part, StopReason, Usage};

/// The Responses wire format.
pub(crate) struct Responses;

impl WireFormat for Responses {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    /// A tool result with images is sent as a content list (`input_text`,
    /// `input_image`) in its `function_call_output`. Reasoning items go back
    /// before the message they belong to.
    fn encode_message(
        &self,
        model: &ModelSettings,
        message: &Message,
        out: &mut EncodedTranscript,
    ) -> Result<(), Error> {
        match message {
            Message::System(m) => out.item(&json!({"role": "system", "content": m.content})),
            Message::User(m) => out.item(&json!({"role": "user", "content": user_content(&m.content)})),
            Message::Assistant(m) => {
                let text = text_of(&m.content);
                // A reasoning item goes back only with the item that followed it
                // (the API refuses one without), so not from a response that
                // stopped while reasoning.
                let answered = !text.is_empty() || !m.tool_calls.is_empty();
                for part in m.content.iter().filter(|_| answered) {
                    if let Part::Thinking { thinking, signature: Some(encrypted), id: Some(id) } = part {
                        out.item(&ReasoningItem::new(id, thinking, encrypted));
                    }
                }
                // Plain string content: a content list of output_text parts is only
                // valid in a full output message (with id and status).
                if !text.is_empty() {
                    out.item(&json!({"role": "assistant", "content": text}));
                }
                for call in &m.tool_calls {
                    out.item(&json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments}));
                }
            }
            Message::Tool(m) => {
                let split = images::split(&m.content, &model.name, model.image_input, Some(images::OPENAI_IMAGE_TYPES));
                let output = if split.images.is_empty() {
                    json!(split.text)
                } else {
                    let mut parts = vec![json!({"type": "input_text", "text": split.text})];
                    parts.extend(split.images.into_iter().map(image_part));
                    Value::Array(parts)
                };
                out.item(&json!({"type": "function_call_output", "call_id": m.tool_call_id, "output": output}));
            }
        }
        Ok(())
    }
}

impl Protocol for Responses {
    type Decoder = ResponsesDecoder;

    fn body(
        &self,
        model: &ModelSettings,
        request: &GenerationRequest<'_>,
        transcript: &EncodedTranscript,
        previous: Option<&StoredResponse>,
        body: &mut JsonObject<'_>,
    ) {
        if model.encrypted_reasoning {
            body.field("include", &["reasoning.encrypted_content"]);
        }
        body.raw("input", |out| transcript.write_array(previous.map_or(0, |p| p.next), None, out));
        if let Some(system) = request.system {
            body.field("instructions", &system);
        }
        if let Some(max) = model.max_tokens {
            body.field("max_output_tokens", &max);
        }
        body.field("model", &model.name);
        if let Some(previous) = previous {
            body.field("previous_response_id", &previous.id);
        }
        body.field("store", &model.server_history);
        if model.stream {
            body.field("stream", &true);
        }
        if let Some(schema) = request.output_schema {
            #[derive(Serialize)]
            struct Format<'a> {
                #[serde(flatten)]
                json_schema: JsonSchemaFormat<'a>,
                #[serde(rename = "type")]
                kind: &'static str,
            }
            #[derive(Serialize)]
            struct Text<'a> {
                format: Format<'a>,
            }
            body.field(
                "text",
                &Text { format: Format { json_schema: JsonSchemaFormat::new(schema), kind: "json_schema" } },
            );
        }
        if !request.tools.is_empty() {
            body.field(
                "tool_choice",
                &tool_choice(request.tool_choice, |name| json!({"type": "function", "name": name})),
            );
            let tools: Vec<ResponsesTool<'_>> = request.tools.iter().map(|tool| ResponsesTool::new(tool)).collect();
            body.field("tools", &tools);
        }
    }
}

/// A tool definition; fields in key order (see [`JsonObject`]).
#[derive(Serialize)]
struct ResponsesTool<'a> {
    description: &'a str,
    name: &'a str,
    parameters: &'a Value,
    strict: bool,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> ResponsesTool<'a> {
    fn new(tool: &'a ToolDefinition) -> Self {
        ResponsesTool {
            description: &tool.description,
            name: &tool.name,
            parameters: &tool.input_schema,
            strict: tool.strict,
            kind: "function",
        }
    }
}

/// A reasoning item sent back: its id, its summary, and the encrypted content
/// that lets the model continue from it without the server storing anything.
#[derive(Serialize)]
struct ReasoningItem<'a> {
    encrypted_content: &'a str,
    id: &'a str,
    summary: Vec<SummaryText<'a>>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct SummaryText<'a> {
    text: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> ReasoningItem<'a> {
    fn new(id: &'a str, summary: &'a str, encrypted_content: &'a str) -> Self {
        let summary =
            if summary.is_empty() { vec![] } else { vec![SummaryText { text: summary, kind: "summary_text" }] };
        ReasoningItem { encrypted_content, id, summary, kind: "reasoning" }
    }
}

/// `detail` is required by the specification; "auto" lets the model decide.
pub(super) fn image_part(source: ImageSource<'_>) -> Value {
    json!({"type": "input_image", "image_url": source.to_url(), "detail": "auto"})
}

pub(super) fn user_content(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(json!({"type": "input_text", "text": text})),
            Part::Image { media_type, data, url } => match (data, url) {
                (Some(data), _) => Some(image_part(ImageSource::Inline { media_type: media_type.as_deref().unwrap_or(""), data })),
                (None, Some(url)) => Some(image_part(ImageSource::Url(url))),
                (None, None) => None,
            },
            Part::File { media_type, data, name } => Some(json!({"type": "input_file",
                "filename": name.as_deref().unwrap_or("file"), "file_data": format!("data:{media_type};base64,{data}")})),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => None,
        })
        .collect()
}

/// Decodes Responses stream events.
#[derive(Default)]
pub(crate) struct ResponsesDecoder;

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut ResponseBuilder) -> Result<bool, Error> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            Error::new(ErrorCode::ProviderMalformedStream, format!("openai-responses: an event is not valid JSON: {e}"))
        })?;
        let kind = data.get("type").and_then(Value::as_str).or(event.name.as_deref()).unwrap_or("");
        let position = data.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or("");
        match kind {
            "response.created" => out.describe(data.get("response"), "id", "model"),
            "response.output_text.delta" | "response.refusal.delta" => out.text(text("delta")),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => out.thinking(text("delta")),
            "response.output_item.added" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                out.end_part();
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let field = |key: &str| item.get(key).and_then(Value::as_str);
                    out.tool_call(position, field("call_id"), field("name"), field("arguments").unwrap_or(""))?;
                }
            }
            "response.function_call_arguments.delta" => out.tool_call(position, None, None, text("delta"))?,
            "response.output_item.done" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                match (item.get("type").and_then(Value::as_str), item.get("id").and_then(Value::as_str)) {
                    (Some("reasoning"), Some(id)) => {
                        out.reasoning_item(id, item.get("encrypted_content").and_then(Value::as_str))
                    }
                    _ => out.end_part(),
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                out.describe(Some(response), "id", "model");
                finish(response, out);
                return Ok(true);
            }
            "response.failed" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                return Err(in_band("openai-responses", response.get("error").unwrap_or(response)));
            }
            "error" => return Err(in_band("openai-responses", &data)),
            _ => {}
        }
        Ok(false)
    }

    fn whole(&mut self, body: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
        if body.get("status").and_then(Value::as_str) == Some("failed") {
            return Err(in_band("openai-responses", body.get("error").unwrap_or(body)));
        }
        for (position, item) in (0u64..).zip(body.get("output").and_then(Value::as_array).into_iter().flatten()) {
            let field = |key: &str| item.get(key).and_then(Value::as_str);
            match field("type") {
                Some("message") => {
                    for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                        for key in ["text", "refusal"] {
                            if let Some(text) = part.get(key).and_then(Value::as_str) {
                                out.text(text);
                            }
                        }
                    }
                }
                Some("reasoning") => {
                    for summary in item.get("summary").and_then(Value::as_array).into_iter().flatten() {
                        out.thinking(summary.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                    if let Some(id) = field("id") {
                        out.reasoning_item(id, field("encrypted_content"));
                    }
                }
                Some("function_call") => {
                    out.tool_call(position, field("call_id"), field("name"), field("arguments").unwrap_or(""))?
                }
                _ => {}
            }
            out.end_part();
        }
        out.describe(Some(body), "id", "model");
        finish(body, out);
        Ok(())
    }

    fn complete_at_end(&self) -> bool {
        false
    }
}

/// Usage and the stop reason from a finished response object.
fn finish(response: &Value, out: &mut ResponseBuilder) {
    if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
        let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        out.usage = Usage {
            input_tokens: count("/input_tokens"),
            output_tokens: count("/output_tokens"),
            cached_tokens: count("/input_tokens_details/cached_tokens"),
        };
    }
    if response.get("status").and_then(Value::as_str) == Some("incomplete") {
        out.stop_reason = Some(match response.pointer("/incomplete_details/reason").and_then(Value::as_str) {
            Some("content_filter") => StopReason::ContentFilter,
            _ => StopReason::Length,
        });
    }
}
