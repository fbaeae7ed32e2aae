//! Small, hand-made provider streams for tests that need a particular shape
//! (the recorded fixtures cover real-world bytes).
#![allow(dead_code)]

use serde_json::{json, Value};

/// A call as (id, name, arguments JSON text).
pub type Call<'a> = (&'a str, &'a str, &'a str);

fn sse(events: &[(Option<&str>, Value)]) -> Vec<u8> {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    body.into_bytes()
}

/// A Chat Completions stream with `text` (one event per word) and `calls`.
pub fn chat(text: &str, calls: &[Call]) -> Vec<u8> {
    let mut events = Vec::new();
    for word in text.split_inclusive(' ') {
        events.push((None, json!({"choices": [{"index": 0, "delta": {"content": word}}]})));
    }
    for (i, (id, name, arguments)) in calls.iter().enumerate() {
        events.push((
            None,
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]}),
        ));
        events.push((
            None,
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": i, "function": {"arguments": arguments}}]}}]}),
        ));
    }
    let reason = if calls.is_empty() { "stop" } else { "tool_calls" };
    events.push((None, json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})));
    events.push((None, json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})));
    let mut body = sse(&events);
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

/// An Anthropic Messages stream with `text` and `calls`.
pub fn anthropic(text: &str, calls: &[Call]) -> Vec<u8> {
    let mut events = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push((
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        events.push((
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        ));
        events.push((Some("content_block_stop"), json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (id, name, arguments) in calls {
        events.push((Some("content_block_start"), json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        events.push((Some("content_block_delta"), json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": arguments}})));
        events.push((Some("content_block_stop"), json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let reason = if calls.is_empty() { "end_turn" } else { "tool_use" };
    events.push((
        Some("message_delta"),
        json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 5}}),
    ));
    events.push((Some("message_stop"), json!({"type": "message_stop"})));
    sse(&events)
}

/// An OpenAI Responses stream with `text` and `calls`.
pub fn responses(text: &str, calls: &[Call]) -> Vec<u8> {
    identified_response("resp_0", text, calls)
}

/// An OpenAI Responses stream with `text` and `calls` from the response `id`.
pub fn identified_response(id: &str, text: &str, calls: &[Call]) -> Vec<u8> {
    let mut events = Vec::new();
    let mut index = 0;
    if !text.is_empty() {
        events.push((
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": index, "item": {"type": "message"}}),
        ));
        events.push((
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "output_index": index, "delta": text}),
        ));
        index += 1;
    }
    for (id, name, arguments) in calls {
        events.push((
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": name, "arguments": ""}}),
        ));
        events.push((
            Some("response.function_call_arguments.delta"),
            json!({"type": "response.function_call_arguments.delta", "output_index": index, "delta": arguments}),
        ));
        index += 1;
    }
    events.push((
        Some("response.completed"),
        json!({"type": "response.completed", "response": {"id": id, "status": "completed",
        "usage": {"input_tokens": 10, "output_tokens": 5}}}),
    ));
    sse(&events)
}

/// A Gemini stream with `text` (one chunk per word) and `calls` (one chunk,
/// the calls with their ids, the first with a signature), events separated by
/// CRLF as Google's server does; usage only in the last chunk is complete.
pub fn gemini(text: &str, calls: &[Call]) -> Vec<u8> {
    let mut chunks = Vec::new();
    let partial_usage = json!({"promptTokenCount": 3});
    for word in text.split_inclusive(' ') {
        chunks.push(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": word}]}, "index": 0}],
            "usageMetadata": partial_usage}));
    }
    if !calls.is_empty() {
        let parts: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (id, name, arguments))| {
                let args: Value = serde_json::from_str(arguments).expect("test calls have JSON arguments");
                let mut part = json!({"functionCall": {"id": id, "name": name, "args": args}});
                if i == 0 {
                    part["thoughtSignature"] = json!(GEMINI_SIGNATURE);
                }
                part
            })
            .collect();
        chunks.push(json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}));
    }
    chunks.push(json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, "thoughtsTokenCount": 1, "totalTokenCount": 15}}));
    chunks.iter().map(|chunk| format!("data: {chunk}\r\n\r\n")).collect::<String>().into_bytes()
}

/// The signature [`gemini`] puts on a response's first call.
pub const GEMINI_SIGNATURE: &str = "c2lnbmVkK2J5L2dlbWluaQ==";

/// The stream for `provider`.
pub fn stream(provider: &str, text: &str, calls: &[Call]) -> Vec<u8> {
    match provider {
        "gemini" => gemini(text, calls),
        "anthropic" => anthropic(text, calls),
        "openai-responses" => responses(text, calls),
        _ => chat(text, calls),
    }
}

/// The base URL for `provider` on a server at `url` (OpenAI's includes `/v1`).
pub fn base_url(provider: &str, url: &str) -> String {
    match provider {
        "anthropic" | "gemini" => url.to_owned(),
        _ => format!("{url}/v1"),
    }
}

/// The path each provider posts to.
pub fn path(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "/v1/messages",
        "gemini" => "/v1beta/models/test-model:streamGenerateContent?alt=sse",
        "openai-responses" => "/v1/responses",
        _ => "/v1/chat/completions",
    }
}

pub const PROVIDERS: [&str; 5] = ["openai", "openai-compatible", "openai-responses", "anthropic", "gemini"];
