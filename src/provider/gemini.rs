//! Google Gemini (`gemini`): `generateContent` and `streamGenerateContent`.
//!
//! The wire's own rules: calls usually come without an id (one is made up, and
//! the results go back in the calls' order under their names); `finishReason`
//! is `STOP` even when calls came; a `thoughtSignature` goes back on the part it
//! came on (a call, or a text part, which may be empty), and the first call of
//! a model turn must carry one (a call from another model gets the validator's
//! documented skip value); usage is in every chunk and only the last one holds
//! the totals; a blocked prompt is a 200 response without candidates.

use serde_json::{json, Map, Value};

use super::config::{Thinking, ThinkingLevel};
use super::http::{
    in_band, Decoder, EncodedTranscript, JsonObject, ModelSettings, Protocol, SseEvent, StoredResponse, WireFormat,
};
use super::images::{self, ImageSource};
use super::partial_args::PartialArgs;
use super::response::ResponseBuilder;
use super::{GenerationRequest, ToolChoice};
use crate::error::{Error, ErrorCode};
use crate::message::{Message, Part, StopReason, ToolResultMessage, Usage};

/// The Gemini wire format.
pub(crate) struct Gemini;

impl WireFormat for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn user_parts_key(&self) -> &'static str {
        "parts"
    }

    /// System messages join the system instruction; a round's function
    /// responses go together in one user turn, in the order of the calls, and
    /// their images in the user turn after it, each call's introduced by its id
    /// (Gemini refuses other parts among function responses).
    fn encode_message(
        &self,
        model: &ModelSettings,
        message: &Message,
        out: &mut EncodedTranscript,
    ) -> Result<(), Error> {
        match message {
            Message::System(m) => out.system_text(&m.content),
            Message::User(m) => {
                let parts = user_parts(&m.content);
                // The API refuses a turn without parts.
                if !parts.is_empty() {
                    out.item(&json!({"parts": parts, "role": "user"}));
                }
            }
            Message::Assistant(m) => {
                let parts = model_parts(m);
                if !parts.is_empty() {
                    out.item(&json!({"parts": parts, "role": "model"}));
                }
            }
            Message::Tool(m) => {
                let (response, images) = function_response(model, m);
                out.pending_part(&response);
                for part in images {
                    out.followup_part(&part);
                }
            }
        }
        Ok(())
    }
}

impl Protocol for Gemini {
    type Decoder = GeminiDecoder;

    fn body(
        &self,
        model: &ModelSettings,
        request: &GenerationRequest<'_>,
        transcript: &EncodedTranscript,
        _previous: Option<&StoredResponse>,
        body: &mut JsonObject<'_>,
    ) {
        body.raw("contents", |out| transcript.write_array(0, None, out));
        if let Some(config) = generation_config(model, request) {
            body.field("generationConfig", &config);
        }
        let system = transcript.system_text_after(request.system);
        if !system.is_empty() {
            body.field("systemInstruction", &json!({"parts": [{"text": system}]}));
        }
        if !request.tools.is_empty() {
            body.field("toolConfig", &json!({"functionCallingConfig": function_calling(request.tool_choice)}));
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"description": tool.description, "name": tool.name, "parametersJsonSchema": tool.input_schema})
                })
                .collect();
            body.field("tools", &json!([{"functionDeclarations": declarations}]));
        }
    }
}

/// `generationConfig`, when anything goes in it: the output limit, the
/// answer's schema (only in a request without tools, which Gemini 2.5 models
/// refuse beside a JSON answer; the run checks the answer in every case), and
/// the thinking settings.
pub(super) fn generation_config(model: &ModelSettings, request: &GenerationRequest<'_>) -> Option<Value> {
    let mut config = Map::new();
    if let Some(max) = model.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(schema) = request.output_schema.filter(|_| request.tools.is_empty()) {
        config.insert("responseJsonSchema".into(), schema.clone());
        config.insert("responseMimeType".into(), json!("application/json"));
    }
    if let Some(thinking) = &model.thinking {
        config.insert("thinkingConfig".into(), thinking_config(thinking));
    }
    (!config.is_empty()).then_some(Value::Object(config))
}

fn thinking_config(thinking: &Thinking) -> Value {
    let mut config = Map::new();
    if let Some(include) = thinking.include_thoughts {
        config.insert("includeThoughts".into(), json!(include));
    }
    if let Some(budget) = thinking.budget_tokens {
        config.insert("thinkingBudget".into(), json!(budget));
    }
    if let Some(level) = thinking.level {
        let level = match level {
            ThinkingLevel::Minimal => "MINIMAL",
            ThinkingLevel::Low => "LOW",
            ThinkingLevel::Medium => "MEDIUM",
            ThinkingLevel::High => "HIGH",
        };
        config.insert("thinkingLevel".into(), json!(level));
    }
    Value::Object(config)
}

/// `functionCallingConfig` for a tool choice.
pub(super) fn function_calling(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Named(name) => json!({"allowedFunctionNames": [name], "mode": "ANY"}),
    }
}

/// A user turn's parts; reasoning is left out.
pub(super) fn user_parts(content: &[Part]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } if text.is_empty() => None,
            Part::Text { text, .. } => Some(json!({"text": text})),
            Part::Image { media_type, data, url } => match (data, url) {
                (Some(data), _) => Some(media(ImageSource::Inline { media_type: media_type.as_deref()?, data })),
                (None, Some(url)) => Some(file_data(url, media_type.as_deref())),
                (None, None) => None,
            },
            Part::File { media_type, data, .. } => Some(media(ImageSource::Inline { media_type, data })),
            Part::Thinking { .. } | Part::RedactedThinking { .. } => None,
        })
        .collect()
}

/// What Gemini's validator takes in place of a signature, for a call another
/// model made ("skip_thought_signature_validator", in Google's documentation
/// of thought signatures).
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// A model turn's parts: its text with the signatures it came with, then its
/// calls. Reasoning is not sent back (the signatures carry it), and neither is
/// another provider's. The first call must carry a signature (Gemini 3 refuses
/// the request otherwise): one that came without gets [`SKIP_SIGNATURE`].
pub(super) fn model_parts(message: &crate::message::AssistantMessage) -> Vec<Value> {
    let mut parts = Vec::with_capacity(message.content.len() + message.tool_calls.len());
    for part in &message.content {
        match part {
            Part::Text { text, signature: Some(signature) } => {
                parts.push(json!({"text": text, "thoughtSignature": signature}))
            }
            Part::Text { text, signature: None } if !text.is_empty() => parts.push(json!({"text": text})),
            _ => {}
        }
    }
    for (i, call) in message.tool_calls.iter().enumerate() {
        let args = serde_json::from_str::<Value>(&call.arguments).ok().filter(Value::is_object);
        let mut part =
            json!({"functionCall": {"args": args.unwrap_or_else(|| json!({})), "id": call.id, "name": call.name}});
        match (&call.signature, i) {
            (Some(signature), _) => part["thoughtSignature"] = json!(signature),
            (None, 0) => part["thoughtSignature"] = json!(SKIP_SIGNATURE),
            (None, _) => {}
        }
        parts.push(part);
    }
    parts
}

/// A tool result: its `functionResponse` (the text under `output`, or under
/// `error` when the call failed), and the parts that carry its images (after
/// a text part naming the call), for the user turn after the responses.
pub(super) fn function_response(model: &ModelSettings, result: &ToolResultMessage) -> (Value, Vec<Value>) {
    let split = images::split(&result.content, &model.name, model.image_input, None);
    let key = if result.is_error { "error" } else { "output" };
    let response = json!({"functionResponse": {
        "id": result.tool_call_id, "name": result.name, "response": {key: split.text}
    }});
    let mut images = Vec::new();
    if !split.images.is_empty() {
        images.push(json!({"text": format!("Images from tool call {}:", result.tool_call_id)}));
        images.extend(split.images.into_iter().map(media));
    }
    (response, images)
}

fn media(source: ImageSource<'_>) -> Value {
    match source {
        ImageSource::Inline { media_type, data } => json!({"inlineData": {"data": data, "mimeType": media_type}}),
        ImageSource::Url(url) => file_data(url, None),
    }
}

fn file_data(url: &str, media_type: Option<&str>) -> Value {
    match media_type {
        Some(media_type) => json!({"fileData": {"fileUri": url, "mimeType": media_type}}),
        None => json!({"fileData": {"fileUri": url}}),
    }
}

/// Decodes `GenerateContentResponse` chunks.
#[derive(Default)]
pub(crate) struct GeminiDecoder {
    /// The position the next call takes.
    calls: u64,
    /// A call whose arguments are still streaming (Vertex AI), and where it is.
    streaming: Option<(u64, PartialArgs)>,
    /// A candidate came.
    answered: bool,
    finished: bool,
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut ResponseBuilder) -> Result<bool, Error> {
        let chunk: Value = serde_json::from_str(&event.data).map_err(|e| {
            Error::new(ErrorCode::ProviderMalformedStream, format!("gemini: an event is not valid JSON: {e}"))
        })?;
        self.chunk(&chunk, out)?;
        // The chunk with the finish reason is the last (it holds the final
        // usage); nothing after it is read.
        Ok(self.finished)
    }

    fn whole(&mut self, body: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
        self.chunk(body, out)?;
        if !self.answered {
            return Err(Error::new(ErrorCode::ProviderMalformedStream, "gemini: the response holds no candidate"));
        }
        self.end_call(out)
    }

    fn complete_at_end(&self) -> bool {
        self.finished
    }
}

impl GeminiDecoder {
    /// One `GenerateContentResponse`: the first candidate's parts, its finish
    /// reason, and the usage so far.
    fn chunk(&mut self, chunk: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
        if chunk.get("error").is_some_and(Value::is_object) {
            return Err(in_band("gemini", chunk));
        }
        out.describe(Some(chunk), "responseId", "modelVersion");
        if let Some(usage) = chunk.get("usageMetadata").filter(|u| has_counts(u)) {
            out.usage = usage_of(usage);
        }
        let Some(candidate) = chunk.get("candidates").and_then(Value::as_array).and_then(|c| c.first()) else {
            if let Some(reason) = chunk.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
                return Err(Error::new(
                    ErrorCode::ProviderInvalidRequest,
                    format!("gemini: the prompt was blocked ({reason}), so the model gave no answer"),
                ));
            }
            return Ok(());
        };
        self.answered = true;
        for part in candidate.pointer("/content/parts").and_then(Value::as_array).into_iter().flatten() {
            self.part(part, out)?;
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.end_call(out)?;
            let message = candidate.get("finishMessage").and_then(Value::as_str);
            out.stop_reason = stop_reason(reason, message)?;
            self.finished = true;
        }
        Ok(())
    }

    fn part(&mut self, part: &Value, out: &mut ResponseBuilder) -> Result<(), Error> {
        let signature = part.get("thoughtSignature").and_then(Value::as_str).filter(|s| !s.is_empty());
        if let Some(call) = part.get("functionCall") {
            return self.call(call, signature, out);
        }
        self.end_call(out)?;
        let text = part.get("text").and_then(Value::as_str);
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            out.thinking(text.unwrap_or(""));
            // A signature on a thought goes back on an empty text part after it.
            if let Some(signature) = signature {
                out.signed_text("", signature);
            }
            return Ok(());
        }
        match (text, signature) {
            (Some(text), Some(signature)) => out.signed_text(text, signature),
            (Some(text), None) => out.text(text),
            // Parts ferrule does not keep (executed code and its output, files,
            // inline data) go with their signatures.
            (None, _) => {}
        }
        Ok(())
    }

    /// A `functionCall` part: a whole call, the start of one whose arguments
    /// stream (`willContinue`), a piece of those arguments (`partialArgs`), or
    /// their end (an empty `functionCall`).
    fn call(&mut self, call: &Value, signature: Option<&str>, out: &mut ResponseBuilder) -> Result<(), Error> {
        if !call.is_object() {
            return Err(Error::new(ErrorCode::ProviderMalformedStream, "gemini: a function call is not an object"));
        }
        let continues = call.get("willContinue").and_then(Value::as_bool) == Some(true);
        let pieces = call.get("partialArgs").and_then(Value::as_array);
        let name = call.get("name").and_then(Value::as_str);
        // Only a call's start names it, and arguments without one belong to nothing.
        if name == Some("") || (name.is_none() && call.get("args").is_some()) {
            return Err(Error::new(ErrorCode::ProviderMalformedStream, "gemini: a function call has no name"));
        }
        if let (None, Some((position, _)), Some(signature)) = (name, &self.streaming, signature) {
            // A signature may come on a later part of a call whose arguments stream.
            out.tool_call_signature(*position, signature);
        }
        if let Some(name) = name {
            self.end_call(out)?;
            let position = self.calls;
            self.calls += 1;
            let id = match call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty()) {
                Some(id) => id.to_owned(),
                None => out.made_up_call_id(),
            };
            out.tool_call(position, Some(&id), Some(name), "")?;
            if let Some(signature) = signature {
                out.tool_call_signature(position, signature);
            }
            let args = call.get("args").filter(|a| !a.is_null());
            if args.is_some_and(|a| !a.is_object()) {
                return Err(Error::new(
                    ErrorCode::ProviderMalformedStream,
                    format!("gemini: the arguments of function call \"{name}\" are not an object"),
                ));
            }
            match (continues || pieces.is_some(), args) {
                (true, _) => self.streaming = Some((position, PartialArgs::new(args))),
                (false, Some(args)) => out.tool_call(position, None, None, &args.to_string())?,
                (false, None) => {}
            }
        }
        match (&mut self.streaming, pieces) {
            (Some((_, args)), Some(pieces)) => pieces.iter().try_for_each(|piece| args.apply(piece))?,
            (None, Some(_)) => {
                return Err(Error::new(
                    ErrorCode::ProviderMalformedStream,
                    "gemini: pieces of arguments came without the call they belong to",
                ))
            }
            (_, None) => {}
        }
        if !continues {
            self.end_call(out)?;
        }
        Ok(())
    }

    /// Ends a call whose arguments were streaming: they go out whole.
    fn end_call(&mut self, out: &mut ResponseBuilder) -> Result<(), Error> {
        match self.streaming.take() {
            Some((position, args)) => out.tool_call(position, None, None, &args.to_json()),
            None => Ok(()),
        }
    }
}

/// The stop reason for a `finishReason`; `None` leaves it to the calls (`STOP`
/// means tool use when calls came). Reasons that say the response is broken,
/// and reasons ferrule does not know, are errors.
fn stop_reason(reason: &str, message: Option<&str>) -> Result<Option<StopReason>, Error> {
    let failed = |code: ErrorCode| {
        let detail = message.map(|m| format!(": {m}")).unwrap_or_default();
        Err(Error::new(code, format!("gemini: the response ended with {reason}{detail}")))
    };
    Ok(match reason {
        "MAX_TOKENS" => Some(StopReason::Length),
        "SAFETY"
        | "RECITATION"
        | "LANGUAGE"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => Some(StopReason::ContentFilter),
        "MISSING_THOUGHT_SIGNATURE" => return failed(ErrorCode::ProviderInvalidRequest),
        "STOP" | "FINISH_REASON_UNSPECIFIED" => None,
        _ => return failed(ErrorCode::ProviderServer),
    })
}

/// Whether a `usageMetadata` holds counts (Vertex AI's chunks carry only
/// `trafficType` until the last).
fn has_counts(usage: &Value) -> bool {
    ["promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"].iter().any(|k| usage.get(*k).is_some())
}

/// Gemini counts thoughts apart from the answer, and the prompt of a
/// server-side tool apart from the prompt; ferrule's counts include them.
fn usage_of(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: count("promptTokenCount").saturating_add(count("toolUsePromptTokenCount")),
        output_tokens: count("candidatesTokenCount").saturating_add(count("thoughtsTokenCount")),
        cached_tokens: count("cachedContentTokenCount"),
    }
}
