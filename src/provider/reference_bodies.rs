//! The request bodies as ferrule built them before the wire transcript cache: a
//! whole `serde_json::Value` tree per request. Kept only as the oracle the
//! encoding tests compare the cached encoders' bytes with: how messages are
//! grouped, ordered and assembled into a body. The conversion of one message's
//! parts is the providers' own. The intended differences since (Responses
//! reasoning items sent back, Anthropic skipping them) are marked.

use serde_json::{json, Map, Value};

use super::http::ModelSettings;
use super::images;
use super::{GenerationRequest, ToolChoice};
use crate::error::Error;
use crate::message::{text_of, Message, Part};

pub(crate) mod chat {
    use super::super::openai_chat::{image_part, user_content};
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
                // Since the cache: a message with nothing to send is left out.
                Message::Assistant(m) if m.tool_calls.is_empty() && text_of(&m.content).is_empty() => {}
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
    use super::super::openai_responses::{image_part, user_content};
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
}

pub(crate) mod anthropic {
    use super::super::anthropic::{blocks, tool_result, DEFAULT_MAX_TOKENS};
    use super::*;

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
                    // Since the cache: an empty message is left out.
                    if !content.is_empty() {
                        out.push(json!({"role": "assistant", "content": content}));
                    }
                }
                Message::Tool(m) => results.push(tool_result(model, m)?),
            }
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": results}));
        }
        Ok((system.join("\n\n"), out))
    }
}

pub(crate) mod gemini {
    use super::super::gemini::{function_calling, function_response, generation_config, model_parts, user_parts};
    use super::*;

    pub(crate) fn body(model: &ModelSettings, request: &GenerationRequest<'_>) -> Value {
        let mut body = Map::new();
        let mut system: Vec<&str> = request.system.into_iter().collect();
        let mut contents: Vec<Value> = Vec::with_capacity(request.messages.len());
        let mut responses: Vec<Value> = Vec::new();
        let mut images: Vec<Value> = Vec::new();
        let flush = |contents: &mut Vec<Value>, responses: &mut Vec<Value>, images: &mut Vec<Value>| {
            for parts in [std::mem::take(responses), std::mem::take(images)] {
                if !parts.is_empty() {
                    contents.push(json!({"role": "user", "parts": parts}));
                }
            }
        };
        for message in request.messages {
            if !matches!(message, Message::Tool(_)) {
                flush(&mut contents, &mut responses, &mut images);
            }
            let (role, parts) = match message {
                Message::System(m) => {
                    system.push(&m.content);
                    continue;
                }
                Message::User(m) => ("user", user_parts(&m.content)),
                Message::Assistant(m) => ("model", model_parts(m)),
                Message::Tool(m) => {
                    let (response, its_images) = function_response(model, m);
                    responses.push(response);
                    images.extend(its_images);
                    continue;
                }
            };
            if !parts.is_empty() {
                contents.push(json!({"role": role, "parts": parts}));
            }
        }
        flush(&mut contents, &mut responses, &mut images);
        body.insert("contents".into(), Value::Array(contents));
        let system = system.join("\n\n");
        if !system.is_empty() {
            body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
        }
        if let Some(config) = generation_config(model, request) {
            body.insert("generationConfig".into(), config);
        }
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}))
                .collect();
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
            body.insert("toolConfig".into(), json!({"functionCallingConfig": function_calling(request.tool_choice)}));
        }
        Value::Object(body)
    }
}
