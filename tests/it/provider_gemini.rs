//! Gemini's own rules against a local server: signatures sent back as they came
//! (checked against the requests Google's API accepted), calls without ids,
//! blocked prompts, both event separators, RetryInfo, the key's header, and
//! the generation settings.

use base64::Engine;

use crate::common::fixtures::{fixtures_dir, stream_body};
use crate::common::server::{Ending, MockServer, Reply};
use crate::common::wire::{self, base_url};
use crate::common::*;
use ferrule::agent::RunStatus;
use ferrule::message::{Message, Part};
use ferrule::tool::{Invocation, ToolOutcome, ToolResult};
use ferrule::ErrorCode;
use serde_json::{json, Value};

fn fixture(name: &str) -> Option<std::path::PathBuf> {
    Some(fixtures_dir()?.join("providers/gemini").join(name))
}

fn recorded_request(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name).unwrap()).unwrap()).unwrap()
}

/// A tool that answers `answer` whatever it is asked.
fn answering(name: &str, answer: &'static str) -> ferrule::tool::Tool {
    tool(name, json!({}), move |_: Invocation| async move { ToolOutcome::Completed(ToolResult::text(answer)) })
}

/// A run input that goes on from `messages` with `next`.
fn continued(messages: &[Message], next: &str) -> ferrule::agent::RunInput {
    let mut messages = serde_json::to_value(messages).unwrap();
    messages.as_array_mut().unwrap().push(json!({"role": "user", "content": next}));
    ferrule::agent::RunInput::from_json(&json!({"messages": messages}).to_string()).unwrap()
}

fn gemini_agent(
    server: &MockServer,
    model: Value,
    extra: Value,
    tools: Vec<ferrule::tool::Tool>,
) -> ferrule::agent::Agent {
    provider_agent("gemini", &base_url("gemini", server.url()), model, extra, tools)
}

/// The bytes of a signature, in either base64 alphabet.
fn signature_bytes(signature: &Value) -> Vec<u8> {
    let text = signature.as_str().expect("a signature is a string");
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text))
        .expect("a signature is base64")
}

#[test]
fn a_call_signature_goes_back_beside_its_call_as_the_accepted_request_did() {
    let Some(turn1) = fixture("stream-signature-roundtrip-turn1-function-call-crlf.sse") else { return };
    let turn2 = fixture("stream-signature-roundtrip-turn2-text-crlf.sse").unwrap();
    let server = MockServer::start(vec![Reply::sse(&stream_body(&turn1)), Reply::sse(&stream_body(&turn2))]);
    let agent = gemini_agent(&server, json!({}), json!({}), vec![answering("get_country", "Mexico")]);
    let (result, events) = run(&agent, "What is the capital of the user country? Call the tool");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);

    let accepted1 = recorded_request("stream-signature-roundtrip-turn1.request.json");
    assert_eq!(requests[0].json()["contents"], accepted1["contents"]);
    let accepted2 = recorded_request("stream-signature-roundtrip-turn2.request.json");
    let sent = requests[1].json()["contents"].clone();
    let accepted = &accepted2["contents"];
    assert_eq!(sent[0], accepted[0], "the prompt");
    // The model turn: the call with the signature beside it, in the same part.
    let (call, accepted_call) = (&sent[1]["parts"][0], &accepted[1]["parts"][0]);
    assert_eq!(sent[1]["role"], "model");
    assert_eq!(sent[1]["parts"].as_array().unwrap().len(), 1);
    assert_eq!(call["functionCall"]["name"], accepted_call["functionCall"]["name"]);
    assert_eq!(call["functionCall"]["args"], accepted_call["functionCall"]["args"]);
    assert_eq!(signature_bytes(&call["thoughtSignature"]), signature_bytes(&accepted_call["thoughtSignature"]));
    // The answer names the call it answers, by the id ferrule made up.
    let response = &sent[2]["parts"][0]["functionResponse"];
    assert_eq!(sent[2]["role"], "user");
    assert_eq!(response["name"], "get_country");
    assert_eq!(response["id"], call["functionCall"]["id"]);
    assert!(call["functionCall"]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(response["response"], json!({"output": "Mexico"}));
    assert_eq!(
        text(&serde_json::to_value(result.final_message.as_ref().unwrap()).unwrap()),
        "The capital of Mexico is Mexico City."
    );

    // The transcript keeps the signature verbatim.
    let calls: Vec<_> = result
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => a.tool_calls.first(),
            _ => None,
        })
        .collect();
    let recorded = std::fs::read_to_string(&turn1).unwrap();
    assert!(recorded.contains(calls[0].signature.as_deref().unwrap()), "kept as it came");
}

#[test]
fn of_parallel_calls_only_the_first_carries_the_signature_and_answers_keep_their_order() {
    let Some(turn1) = fixture("nonstream-three-parallel-function-calls.json") else { return };
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Three jokes."}]}, "finishReason": "STOP"}]});
    let server = MockServer::start(vec![
        Reply::json(200, &std::fs::read(&turn1).unwrap()),
        Reply::json(200, answer.to_string().as_bytes()),
    ]);
    let topics = ["cars", "penguins", "cars"];
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tool = {
        let asked = asked.clone();
        tool("generate_topic", json!({}), move |_: Invocation| {
            let n = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { ToolOutcome::Completed(ToolResult::text(topics[n % 3])) }
        })
    };
    let agent = gemini_agent(&server, json!({"stream": false}), json!({"system": "Tell three jokes."}), vec![tool]);
    let (result, _) = run(&agent, "Go.");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let requests = server.requests();
    assert!(requests[0].path.ends_with("/models/test-model:generateContent"), "{}", requests[0].path);
    let sent = requests[1].json()["contents"].clone();
    let accepted = recorded_request("nonstream-three-parallel-function-calls-turn2.request.json")["contents"].clone();
    let (calls, accepted_calls) = (sent[1]["parts"].as_array().unwrap(), accepted[1]["parts"].as_array().unwrap());
    assert_eq!(calls.len(), 3);
    for (call, accepted_call) in calls.iter().zip(accepted_calls) {
        assert_eq!(call["functionCall"]["name"], accepted_call["functionCall"]["name"]);
        assert_eq!(call.get("thoughtSignature").is_some(), accepted_call.get("thoughtSignature").is_some());
    }
    assert_eq!(signature_bytes(&calls[0]["thoughtSignature"]), signature_bytes(&accepted_calls[0]["thoughtSignature"]));
    let responses = sent[2]["parts"].as_array().unwrap();
    assert_eq!(responses.len(), 3, "one user turn with the three answers");
    let ids: Vec<&Value> = calls.iter().map(|c| &c["functionCall"]["id"]).collect();
    let answered: Vec<&Value> = responses.iter().map(|r| &r["functionResponse"]["id"]).collect();
    assert_eq!(ids, answered, "answers in the calls' order, under their ids");
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
}

#[test]
fn an_answer_signature_on_a_trailing_empty_part_goes_back_on_it() {
    let Some(turn1) = fixture("stream-text-trailing-empty-part-signature.chunks.jsonl") else { return };
    let server = MockServer::start(vec![Reply::sse(&stream_body(&turn1)), Reply::sse(&wire::gemini("Yes.", &[]))]);
    let agent = gemini_agent(&server, json!({}), json!({}), vec![]);
    let (first, _) = run(&agent, "How many r's in strawberry?");
    assert_eq!(first.status, RunStatus::Completed, "{:?}", first.error);
    let (second, _) = run_input(&agent, continued(&first.messages, "Sure?"));
    assert_eq!(second.status, RunStatus::Completed, "{:?}", second.error);
    let sent = server.requests()[1].json();
    let parts = sent["contents"][1]["parts"].as_array().unwrap().clone();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts[0]["text"].as_str().unwrap().starts_with("There are **3**"));
    assert!(parts[0].get("thoughtSignature").is_none());
    assert_eq!(parts[1]["text"], "");
    let recorded = std::fs::read_to_string(&turn1).unwrap();
    assert!(recorded.contains(parts[1]["thoughtSignature"].as_str().unwrap()));
}

#[test]
fn another_providers_transcript_sends_no_reasoning_and_its_first_call_the_validators_skip_value() {
    let server = MockServer::start(vec![Reply::sse(&wire::gemini("ok", &[]))]);
    let agent = gemini_agent(&server, json!({}), json!({}), vec![echo("lookup")]);
    let transcript: Vec<Message> = serde_json::from_value(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Anthropic's", "signature": "EqQBCkYIBxgCKkA"},
            {"type": "thinking", "thinking": "OpenAI's", "signature": "gAAAAB", "id": "rs_1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Let me look."}],
         "tool_calls": [{"id": "toolu_1", "name": "lookup", "arguments": "{\"text\":\"a\"}"}], "stop_reason": "tool_use"},
        {"role": "tool", "tool_call_id": "toolu_1", "name": "lookup", "content": "found"},
        {"role": "user", "content": "and?"}
    ]))
    .unwrap();
    let last = transcript.len() - 1;
    let (result, _) = run_input(&agent, continued(&transcript[..last], "and?"));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let sent = server.requests()[0].json();
    let text = sent.to_string();
    for absent in ["EqQBCkYIBxgCKkA", "gAAAAB", "Anthropic's", "OpenAI's", "opaque", "\"thought\""] {
        assert!(!text.contains(absent), "{absent} was sent: {text}");
    }
    // Gemini 3 refuses a turn whose first call has no signature; for a call
    // another model made, Google documents this value.
    assert_eq!(
        sent["contents"][1],
        json!({"role": "model", "parts": [{"text": "Let me look."},
            {"functionCall": {"id": "toolu_1", "name": "lookup", "args": {"text": "a"}},
             "thoughtSignature": "skip_thought_signature_validator"}]})
    );
    assert_eq!(
        sent["contents"][2],
        json!({"role": "user", "parts": [{"functionResponse": {"id": "toolu_1", "name": "lookup", "response": {"output": "found"}}}]})
    );
}

#[test]
fn a_blocked_prompt_is_a_clear_error_streamed_or_not() {
    let Some(stream) = fixture("stream-prompt-blocked-prohibited-content.chunks.jsonl") else { return };
    let whole = fixture("nonstream-prompt-blocked-prohibited-content.json").unwrap();
    for (reply, streamed) in
        [(Reply::sse(&stream_body(&stream)), true), (Reply::json(200, &std::fs::read(&whole).unwrap()), false)]
    {
        let server = MockServer::start(vec![reply]);
        let agent = gemini_agent(&server, json!({"stream": streamed, "max_retries": 2}), json!({}), vec![]);
        let (result, events) = run(&agent, "something prohibited");
        assert_eq!(result.status, RunStatus::Failed);
        let error = result.error.as_ref().unwrap();
        assert_eq!(error.code, ErrorCode::ProviderInvalidRequest, "{}", error.message);
        assert!(error.message.contains("blocked (PROHIBITED_CONTENT)"), "{}", error.message);
        assert!(of_type(&events, "retry").is_empty(), "a blocked prompt is not asked again");
        assert_eq!(server.requests().len(), 1);
    }
}

/// A `.chunks.jsonl` recording framed with CRLF separators.
fn crlf_body(path: &std::path::Path) -> Vec<u8> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("data: {l}\r\n\r\n")).collect::<String>().into_bytes()
}

#[test]
fn lf_and_crlf_separators_give_the_same_message() {
    let Some(dir) = fixtures_dir().map(|d| d.join("providers/gemini")) else { return };
    let mut compared = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".chunks.jsonl") || path.to_string_lossy().contains("blocked") {
            continue;
        }
        let messages: Vec<Value> = [stream_body(&path), crlf_body(&path)]
            .iter()
            .map(|body| {
                let message = ferrule::provider::decode_recorded(ferrule::provider::ProviderKind::Gemini, body, true)
                    .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
                let mut value = serde_json::to_value(message).unwrap();
                // Made-up ids differ from one decoding to the next.
                for call in value["tool_calls"].as_array_mut().into_iter().flatten() {
                    if call["id"].as_str().unwrap().starts_with("call_") {
                        call["id"] = json!("made up");
                    }
                }
                value
            })
            .collect();
        assert_eq!(messages[0], messages[1], "{}", path.display());
        compared += 1;
    }
    assert_eq!(compared, 6);
}

#[test]
fn retry_info_says_how_long_to_wait() {
    let Some(dir) = fixtures_dir() else { return };
    let body =
        std::fs::read_to_string(dir.join("providers/errors/gemini-429-resource-exhausted-retry-info.json")).unwrap();
    let body = body.replace("34.4s", "0.25s");
    let server = MockServer::start(vec![Reply::json(429, body.as_bytes()), Reply::sse(&wire::gemini("ok", &[]))]);
    let agent = gemini_agent(&server, json!({"max_retries": 1, "retry_backoff_ms": 1}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let retries = of_type(&events, "retry");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["delay_ms"], 250);
    assert_eq!(retries[0]["error"]["code"], "PROVIDER_RATE_LIMITED");
}

#[test]
fn the_key_goes_in_its_header_never_in_the_url() {
    let server = MockServer::start(vec![Reply::sse(&wire::gemini("ok", &[]))]);
    let agent = gemini_agent(&server, json!({"name": "models/gemini-2.5-flash"}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    assert_eq!(request.header("x-goog-api-key"), Some(TEST_KEY));
    assert!(request.header("authorization").is_none());
    assert!(!request.path.contains(TEST_KEY) && !serde_json::to_string(&events).unwrap().contains(TEST_KEY));

    for name in ["../secrets", "gemini?key=x", "models/", "a b", "tunedModels/x/y"] {
        std::env::set_var(TEST_KEY_ENV, TEST_KEY);
        let config = json!({"model": {"provider": "gemini", "name": name, "api_key_env": TEST_KEY_ENV}});
        let error = ferrule::agent::AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build()).err();
        let error = error.unwrap_or_else(|| panic!("{name} was taken"));
        assert_eq!(error.code, ErrorCode::InvalidArg, "{name}");
        assert!(error.message.contains("model.name"), "{}", error.message);
    }
}

#[test]
fn thinking_tool_choice_and_the_answer_schema_reach_the_generation_settings() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let server = MockServer::start(vec![
        Reply::sse(&wire::gemini("{\"n\": 1}", &[])),
        Reply::sse(&wire::gemini("{\"n\": 2}", &[])),
    ]);
    let model = json!({"max_tokens": 256, "thinking": {"include_thoughts": true, "budget_tokens": 1024}});
    let plain = gemini_agent(&server, model, json!({"output_schema": schema}), vec![]);
    run(&plain, "count");
    let with_tools = gemini_agent(
        &server,
        json!({"thinking": {"level": "low"}}),
        json!({"output_schema": schema, "tool_choice": {"name": "lookup"}}),
        vec![echo("lookup")],
    );
    run(&with_tools, "count");
    let requests = server.requests();
    let first = requests[0].json();
    assert_eq!(
        first["generationConfig"],
        json!({"maxOutputTokens": 256, "responseJsonSchema": schema, "responseMimeType": "application/json",
               "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 1024}})
    );
    assert!(first.get("tools").is_none() && first.get("toolConfig").is_none());
    let second = requests[1].json();
    assert_eq!(
        second["generationConfig"],
        json!({"thinkingConfig": {"thinkingLevel": "LOW"}}),
        "no schema beside tools"
    );
    assert_eq!(
        second["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}})
    );
    assert_eq!(
        second["tools"],
        json!([{"functionDeclarations": [{"name": "lookup", "description": "test tool lookup", "parametersJsonSchema": {"type": "object"}}]}])
    );

    for (provider, thinking) in [
        ("openai", json!({"level": "high"})),
        ("anthropic", json!({"level": "high"})),
        ("scripted", json!({"level": "high"})),
        ("gemini", json!({"level": "high", "budget_tokens": 0})),
        ("gemini", json!({"level": "huge"})),
    ] {
        std::env::set_var(TEST_KEY_ENV, TEST_KEY);
        let config =
            json!({"model": {"provider": provider, "name": "m", "api_key_env": TEST_KEY_ENV, "thinking": thinking}});
        let error = ferrule::agent::AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build()).err();
        assert_eq!(error.map(|e| e.code), Some(ErrorCode::InvalidArg), "{provider} took {thinking}");
    }
}

#[test]
fn thoughts_stream_as_thinking_and_stay_out_of_the_next_request() {
    let Some(path) = fixture("stream-thought-parts-then-text-crlf.sse") else { return };
    let server = MockServer::start(vec![Reply::sse(&stream_body(&path)), Reply::sse(&wire::gemini("ok", &[]))]);
    let agent = gemini_agent(&server, json!({}), json!({}), vec![]);
    let (first, events) = run(&agent, "How do I cross the street?");
    let thinking: String = of_type(&events, "message_delta").iter().filter_map(|e| e["thinking"].as_str()).collect();
    assert_eq!(thinking.chars().count(), 1575);
    run_input(&agent, continued(&first.messages, "Thanks."));
    let sent = server.requests()[1].json();
    let model_turn = &sent["contents"][1];
    assert_eq!(model_turn["role"], "model");
    let parts = model_turn["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "the answer, its signature on it; the thoughts stay out");
    assert_eq!(parts[0]["thoughtSignature"].as_str().map(str::len), Some(6152));
    assert_eq!(parts[0]["text"].as_str().map(|t| t.chars().count()), Some(1938));
    let kept = first
        .messages
        .iter()
        .any(|m| matches!(m, Message::Assistant(a) if a.content.iter().any(|p| matches!(p, Part::Thinking { .. }))));
    assert!(kept, "the transcript keeps the thoughts");
}

#[test]
fn tool_images_go_in_the_user_turn_after_the_function_responses() {
    let png = "iVBORw0KGgo=";
    let chart = tool("chart", json!({}), move |_: Invocation| async move {
        ToolOutcome::Completed(ToolResult {
            content: vec![
                Part::text("the chart"),
                Part::Image { media_type: Some("image/png".into()), data: Some(png.into()), url: None },
            ],
            ..ToolResult::default()
        })
    });
    let calls = [("c1", "chart", "{}"), ("c2", "lookup", r#"{"text":"x"}"#)];
    let server = MockServer::start(vec![Reply::sse(&wire::gemini("", &calls)), Reply::sse(&wire::gemini("ok", &[]))]);
    let agent = gemini_agent(&server, json!({}), json!({}), vec![chart, echo("lookup")]);
    let (result, _) = run(&agent, "draw");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let sent = server.requests()[1].json();
    let contents = sent["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 4, "{sent:#}");
    let responses: Vec<&Value> = contents[2]["parts"].as_array().unwrap().iter().collect();
    assert!(responses.iter().all(|p| p.get("functionResponse").is_some()), "only responses: {responses:?}");
    assert_eq!(responses.len(), 2);
    assert_eq!(
        contents[3],
        json!({"role": "user", "parts": [{"text": "Images from tool call c1:"},
            {"inlineData": {"data": png, "mimeType": "image/png"}}]})
    );
}

#[test]
fn the_chunk_with_the_finish_reason_ends_the_response_on_a_connection_left_open() {
    let server = MockServer::start(vec![Reply::sse(&wire::gemini("done", &[])).ending(Ending::Stall)]);
    let agent = gemini_agent(&server, json!({"timeouts": {"idle_ms": 5000}}), json!({}), vec![]);
    let started = std::time::Instant::now();
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "it waited for the connection to end");
}

/// Decodes a body the way a run would.
fn decoded(body: &str, stream: bool) -> Result<ferrule::message::AssistantMessage, ferrule::Error> {
    ferrule::provider::decode_recorded(ferrule::provider::ProviderKind::Gemini, body.as_bytes(), stream)
}

fn finished(parts: Value, reason: &str) -> String {
    format!("data: {}\n\n", json!({"candidates": [{"content": {"parts": parts}, "finishReason": reason}]}))
}

#[test]
fn hostile_responses_get_clear_errors() {
    let cases = [
        (finished(json!([]), "OTHER"), "OTHER"),
        (finished(json!([]), "SOMETHING_NEW"), "SOMETHING_NEW"),
        (finished(json!([{"functionCall": {"name": "", "args": {}}}]), "STOP"), "no name"),
        (finished(json!([{"functionCall": {"name": "f", "args": [1]}}]), "STOP"), "not an object"),
        (finished(json!([{"functionCall": 5}]), "STOP"), "not an object"),
        (finished(json!([{"functionCall": {"args": {"a": 1}}}]), "STOP"), "no name"),
        (
            finished(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}}]), "STOP"),
            "without the call",
        ),
        (
            finished(
                json!([{"functionCall": {"name": "f", "willContinue": true}},
                       {"functionCall": {"partialArgs": [{"jsonPath": "$.a[3]", "nullValue": null}], "willContinue": true}}]),
                "STOP",
            ),
            "past the end",
        ),
    ];
    for (body, needle) in cases {
        let error = decoded(&body, true).unwrap_err();
        assert!(error.message.contains(needle), "{needle}: {}", error.message);
    }
    for body in ["{}", r#"{"candidates": []}"#, r#"[{"candidates": []}]"#] {
        let error = decoded(body, false).unwrap_err();
        assert_eq!(error.code, ErrorCode::ProviderMalformedStream, "{body}: {}", error.message);
    }
    // Arguments that start in the call's own part are kept; what comes after
    // the finish reason is not read.
    let body = finished(
        json!([{"functionCall": {"name": "f", "willContinue": true, "partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}},
               {"functionCall": {}}]),
        "STOP",
    ) + &finished(json!([{"functionCall": {"name": "late", "args": {}}}]), "STOP");
    let message = decoded(&body, true).unwrap();
    assert_eq!(message.tool_calls.len(), 1);
    assert_eq!(message.tool_calls[0].arguments, r#"{"a":"x"}"#);
    // A signature on a later part of a call whose arguments stream is the call's.
    let body = finished(
        json!([{"functionCall": {"name": "f", "willContinue": true}},
               {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "numberValue": 1}], "willContinue": true},
                "thoughtSignature": "U0lH"},
               {"functionCall": {}}]),
        "STOP",
    );
    let message = decoded(&body, true).unwrap();
    assert_eq!(message.tool_calls[0].signature.as_deref(), Some("U0lH"));
    assert_eq!(message.tool_calls[0].arguments, r#"{"a":1}"#);
    let huge = json!({"usageMetadata": {"promptTokenCount": u64::MAX, "toolUsePromptTokenCount": 1},
        "candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": "STOP"}]});
    assert_eq!(decoded(&huge.to_string(), false).unwrap().usage.input_tokens, u64::MAX);
}

#[test]
fn a_gemini_transcript_goes_to_other_providers_without_its_signatures() {
    let transcript = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "", "signature": "U0lH"}]},
        {"role": "user", "content": "call it"},
        {"role": "assistant", "content": [{"type": "text", "text": "Calling.", "signature": "U0lH"}],
         "tool_calls": [{"id": "g1", "name": "lookup", "arguments": "{}", "signature": "U0lH"}], "stop_reason": "tool_use"},
        {"role": "tool", "tool_call_id": "g1", "name": "lookup", "content": "found"}
    ]);
    let messages: Vec<Message> = serde_json::from_value(transcript).unwrap();
    for provider in ["anthropic", "openai", "openai-responses"] {
        let server = MockServer::start(vec![Reply::sse(&wire::stream(provider, "ok", &[]))]);
        let agent =
            provider_agent(provider, &base_url(provider, server.url()), json!({}), json!({}), vec![echo("lookup")]);
        let (result, _) = run_input(&agent, continued(&messages, "and?"));
        assert_eq!(result.status, RunStatus::Completed, "{provider}: {:?}", result.error);
        let sent = server.requests()[0].json();
        let text = sent.to_string();
        assert!(!text.contains("U0lH"), "{provider} sent a signature: {text}");
        // The message that held only a signature is left out, not sent empty.
        let assistants = text.matches("\"assistant\"").count();
        assert_eq!(assistants, 1, "{provider}: {sent:#}");
    }
}
