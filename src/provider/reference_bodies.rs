//! The request bodies as ferrule built them before the wire transcript cache: a
//! whole `serde_json::Value` tree per request. Kept only as the oracle the
//! encoding tests compare the cached encoders' bytes with; the one intended
//! difference (Responses reasoning items, sent back since) is marked.

use serde_json::{json, Map, Value};

use super::http::ModelSettings;
use super::images::{self, ImageSource};
use super::{GenerationRequest, ToolChoice};
use crate::error::{Error, ErrorCode};
use crate::message::{text_of, Message, Part, ToolResultMessage};

pub(crate) mod chat {
    use super::*;

    pub(crate) fn body(is_openai: bool, model: &ModelSettings, request: &GenerationRequest<'_>) -> Value {
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
            let field = if is_openai { "max_completion_tokens" } else { "max_tokens" };
            body.insert(field.into(), json!(max));
        }
        if model.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
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
                    let mut assistant = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
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
                    let split =
                        images::split(&m.content, &model.name, model.image_input, Some(images::OPENAI_IMAGE_TYPES));
                    out.push(json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": split.text}));
                    if !split.images.is_empty() {
                        round_images.push(
                            json!({"type": "text", "text": format!("Images from tool call {}:", m.tool_call_id)}),
                        );
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
}

pub(crate) mod responses {
    use super::chat::tool_choice;
    use super::*;

    pub(crate) fn body(model: &ModelSettings, request: &GenerationRequest<'_>) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(model.name));
        if let Some(system) = request.system {
            body.insert("instructions".into(), json!(system));
        }
        body.insert("input".into(), Value::Array(input(model, request)));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "name": tool.name, "description": tool.description,
                           "parameters": tool.input_schema, "strict": tool.strict})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice = tool_choice(request.tool_choice, |name| json!({"type": "function", "name": name}));
            body.insert("tool_choice".into(), choice);
        }
        if let Some(max) = model.max_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        // Since the cache: encrypted reasoning asked for.
        if model.encrypted_reasoning {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        body.insert("store".into(), json!(false));
        if model.stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    /// The transcript as input items. A tool result with images is sent as a content
    /// list (`input_text`, `input_image`) in its `function_call_output`.
    fn input(model: &ModelSettings, request: &GenerationRequest<'_>) -> Vec<Value> {
        let mut items = Vec::with_capacity(request.messages.len());
        for message in request.messages {
            match message {
                Message::System(m) => items.push(json!({"role": "system", "content": m.content})),
                Message::User(m) => items.push(json!({"role": "user", "content": user_content(&m.content)})),
                Message::Assistant(m) => {
                    // Since the cache: reasoning items go back, with what followed them.
                    let answered = !text_of(&m.content).is_empty() || !m.tool_calls.is_empty();
                    for part in m.content.iter().filter(|_| answered) {
                        if let Part::Thinking { thinking, signature: Some(encrypted), id: Some(id) } = part {
                            let summary: Vec<Value> = if thinking.is_empty() {
                                vec![]
                            } else {
                                vec![json!({"type": "summary_text", "text": thinking})]
                            };
                            items.push(json!({"type": "reasoning", "id": id, "summary": summary, "encrypted_content": encrypted}));
                        }
                    }
                    let text = text_of(&m.content);
                    // Plain string content: a content list of output_text parts is only
                    // valid in a full output message (with id and status).
                    if !text.is_empty() {
                        items.push(json!({"role": "assistant", "content": text}));
                    }
                    items.extend(m.tool_calls.iter().map(|call| {
                    json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments})
                }));
                }
                Message::Tool(m) => {
                    let split =
                        images::split(&m.content, &model.name, model.image_input, Some(images::OPENAI_IMAGE_TYPES));
                    let output = if split.images.is_empty() {
                        json!(split.text)
                    } else {
                        let mut parts = vec![json!({"type": "input_text", "text": split.text})];
                        parts.extend(split.images.into_iter().map(image_part));
                        Value::Array(parts)
                    };
                    items.push(json!({"type": "function_call_output", "call_id": m.tool_call_id, "output": output}));
                }
            }
        }
        items
    }

    /// `detail` is required by the specification; "auto" lets the model decide.
    fn image_part(source: ImageSource<'_>) -> Value {
        json!({"type": "input_image", "image_url": source.to_url(), "detail": "auto"})
    }

    fn user_content(parts: &[Part]) -> Vec<Value> {
        parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(json!({"type": "input_text", "text": text})),
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
}

pub(crate) mod anthropic {
    use super::*;

    const DEFAULT_MAX_TOKENS: u32 = 4096;
    const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

    pub(crate) fn body(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, Error> {
        let mut body = Map::new();
        body.insert("model".into(), json!(model.name));
        body.insert("max_tokens".into(), json!(model.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)));
        let (system, messages) = messages(model, request)?;
        if !system.is_empty() {
            body.insert("system".into(), json!(system));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    let mut definition =
                        json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema});
                    if tool.strict {
                        definition["strict"] = json!(true);
                    }
                    definition
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            body.insert(
                "tool_choice".into(),
                match request.tool_choice {
                    ToolChoice::Auto => json!({"type": "auto"}),
                    ToolChoice::None => json!({"type": "none"}),
                    ToolChoice::Required => json!({"type": "any"}),
                    ToolChoice::Named(name) => json!({"type": "tool", "name": name}),
                },
            );
        }
        if model.stream {
            body.insert("stream".into(), json!(true));
        }
        Ok(Value::Object(body))
    }

    /// The system text (the agent's prompt and any system messages) and the messages.
    /// A round's tool results go together in one user message, images inside their
    /// `tool_result` blocks.
    fn messages(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<(String, Vec<Value>), Error> {
        let mut system: Vec<&str> = request.system.into_iter().collect();
        let mut out: Vec<Value> = Vec::with_capacity(request.messages.len());
        let mut results: Vec<Value> = Vec::new();
        for message in request.messages {
            if !matches!(message, Message::Tool(_)) && !results.is_empty() {
                out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
            }
            match message {
                Message::System(m) => system.push(&m.content),
                Message::User(m) => out.push(json!({"role": "user", "content": blocks(&m.content)?})),
                Message::Assistant(m) => {
                    let mut content = blocks(&m.content)?;
                    for call in &m.tool_calls {
                        let input = serde_json::from_str::<Value>(&call.arguments).ok().filter(Value::is_object);
                        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input.unwrap_or_else(|| json!({}))}));
                    }
                    out.push(json!({"role": "assistant", "content": content}));
                }
                Message::Tool(m) => results.push(tool_result(model, m)?),
            }
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": results}));
        }
        Ok((system.join("\n\n"), out))
    }

    fn tool_result(model: &ModelSettings, result: &ToolResultMessage) -> Result<Value, Error> {
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

    fn blocks(parts: &[Part]) -> Result<Vec<Value>, Error> {
        let mut blocks = Vec::with_capacity(parts.len());
        for part in parts {
            match part {
                Part::Text { text } if text.is_empty() => {}
                Part::Text { text } => blocks.push(json!({"type": "text", "text": text})),
                Part::Image { media_type, data, url } => blocks.push(image_block(match (data, url) {
                    (Some(data), _) => ImageSource::Inline { media_type: media_type.as_deref().unwrap_or(""), data },
                    (None, Some(url)) => ImageSource::Url(url),
                    (None, None) => continue,
                })?),
                Part::File { media_type, data, .. } => blocks.push(
                    json!({"type": "document", "source": {"type": "base64", "media_type": media_type, "data": data}}),
                ),
                // Since the cache: OpenAI reasoning items stay out.
                Part::Thinking { id: Some(_), .. } => {}
                Part::Thinking { thinking, signature, id: None } => {
                    let mut block = json!({"type": "thinking", "thinking": thinking});
                    if let Some(signature) = signature {
                        block["signature"] = json!(signature);
                    }
                    blocks.push(block);
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
}
