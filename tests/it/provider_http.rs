//! The HTTP providers against a local server: the request bodies ferrule sends,
//! faults and retries, and keys that never leak.

use crate::common::server::{Ending, MockServer, Reply};
use crate::common::wire::{self, base_url, PROVIDERS};
use crate::common::*;
use ferrule::agent::RunStatus;
use ferrule::message::Part;
use ferrule::tool::{Invocation, Tool, ToolOutcome, ToolResult};
use ferrule::ErrorCode;
use serde_json::{json, Value};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn chart() -> Tool {
    tool("chart", json!({}), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult {
            content: vec![
                Part::text("the chart"),
                Part::Image { media_type: Some("image/png".into()), data: Some(PNG.into()), url: None },
            ],
            ..ToolResult::default()
        })
    })
}

fn broken() -> Tool {
    tool("broken", json!({}), |_: Invocation| async { ToolOutcome::Failed("the store is down".into()) })
}

const CALLS: [wire::Call; 3] =
    [("c1", "lookup", r#"{"text":"C-100"}"#), ("c2", "chart", r#"{"metric":"sales"}"#), ("c3", "broken", "{}")];

/// A two-round run with three parallel calls (a text result, an image result and
/// an error), returning the two request bodies.
fn two_rounds(provider: &str, model: Value) -> (Value, Value, MockServer) {
    let server = MockServer::start(vec![
        Reply::sse(&wire::stream(provider, "Checking.", &CALLS)),
        Reply::sse(&wire::stream(provider, "All done.", &[])),
    ]);
    let agent = provider_agent(
        provider,
        &base_url(provider, server.url()),
        model,
        json!({"system": "Be brief."}),
        vec![echo("lookup"), chart(), broken()],
    );
    let (result, events) = run(&agent, "Look up C-100.");
    assert_eq!(result.status, RunStatus::Completed, "{provider}: {:?}", result.error);
    assert_event_invariants(&events);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{provider}");
    for request in &requests {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, wire::path(provider), "{provider}");
    }
    (requests[0].json(), requests[1].json(), server)
}

#[test]
fn openai_chat_request_bodies() {
    let (first, second, server) = two_rounds("openai", json!({"max_tokens": 300}));
    assert_eq!(server.requests()[0].header("authorization"), Some(format!("Bearer {TEST_KEY}").as_str()));
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
    assert_eq!(first["max_completion_tokens"], 300);
    assert_eq!(first["tool_choice"], "auto");
    assert_eq!(
        first["tools"][0],
        json!({"type": "function", "function": {"name": "lookup", "description": "test tool lookup", "parameters": {"type": "object"}}})
    );
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look up C-100."}
        ])
    );
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": r#"{"text":"C-100"}"#}},
            {"id": "c2", "type": "function", "function": {"name": "chart", "arguments": r#"{"metric":"sales"}"#}},
            {"id": "c3", "type": "function", "function": {"name": "broken", "arguments": "{}"}}
        ]})
    );
    assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "c1", "content": "C-100"}));
    assert_eq!(messages[4], json!({"role": "tool", "tool_call_id": "c2", "content": "the chart"}));
    assert_eq!(messages[5], json!({"role": "tool", "tool_call_id": "c3", "content": "the store is down"}));
    // The round's images follow its tool messages, each call's introduced by its id.
    assert_eq!(
        messages[6],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Images from tool call c2:"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}
        ]})
    );
    assert_eq!(messages.len(), 7);
}

#[test]
fn openai_compatible_uses_max_tokens_and_sends_no_key_unless_named() {
    let server = MockServer::start(vec![Reply::sse(&wire::chat("hi", &[]))]);
    let config = json!({"model": {"provider": "openai-compatible", "name": "llama3", "base_url": format!("{}/v1", server.url()),
                                  "max_tokens": 50}});
    std::env::set_var("OPENAI_API_KEY", "sk-must-never-go-to-another-server");
    let agent = ferrule::agent::AgentBuilder::from_json(&config.to_string()).unwrap().build().unwrap();
    let (result, _) = run(&agent, "hi");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.json()["max_tokens"], 50);
}

#[test]
fn anthropic_request_bodies() {
    let (first, second, server) = two_rounds("anthropic", json!({}));
    let request = &server.requests()[0];
    assert_eq!(request.header("x-api-key"), Some(TEST_KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(first["system"], "Be brief.");
    assert_eq!(first["max_tokens"], 4096);
    assert_eq!(first["stream"], true);
    assert_eq!(first["tool_choice"], json!({"type": "auto"}));
    assert_eq!(
        first["tools"][1],
        json!({"name": "chart", "description": "test tool chart", "input_schema": {"type": "object"}})
    );
    assert_eq!(first["messages"], json!([{"role": "user", "content": [{"type": "text", "text": "Look up C-100."}]}]));
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"text": "C-100"}},
            {"type": "tool_use", "id": "c2", "name": "chart", "input": {"metric": "sales"}},
            {"type": "tool_use", "id": "c3", "name": "broken", "input": {}}
        ]})
    );
    // One user message answers the round; images sit inside their tool_result.
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "C-100"}], "is_error": false},
            {"type": "tool_result", "tool_use_id": "c2", "content": [
                {"type": "text", "text": "the chart"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
            ], "is_error": false},
            {"type": "tool_result", "tool_use_id": "c3", "content": [{"type": "text", "text": "the store is down"}], "is_error": true}
        ]})
    );
    assert_eq!(messages.len(), 3);
}

#[test]
fn openai_responses_request_bodies() {
    let (first, second, server) = two_rounds("openai-responses", json!({"max_tokens": 99}));
    assert_eq!(server.requests()[0].header("authorization"), Some(format!("Bearer {TEST_KEY}").as_str()));
    assert_eq!(first["instructions"], "Be brief.");
    assert_eq!(first["max_output_tokens"], 99);
    assert_eq!(first["store"], false);
    assert_eq!(
        first["tools"][2],
        json!({"type": "function", "name": "broken", "description": "test tool broken",
        "parameters": {"type": "object"}, "strict": false})
    );
    assert_eq!(
        first["input"],
        json!([{"role": "user", "content": [{"type": "input_text", "text": "Look up C-100."}]}])
    );
    let input = second["input"].as_array().unwrap();
    // Plain string content; a list of output_text parts breaks the specification.
    assert_eq!(input[1], json!({"role": "assistant", "content": "Checking."}));
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": r#"{"text":"C-100"}"#})
    );
    assert_eq!(input[5], json!({"type": "function_call_output", "call_id": "c1", "output": "C-100"}));
    assert_eq!(
        input[6],
        json!({"type": "function_call_output", "call_id": "c2", "output": [
            {"type": "input_text", "text": "the chart"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto"}
        ]})
    );
    assert_eq!(input[7], json!({"type": "function_call_output", "call_id": "c3", "output": "the store is down"}));
    assert_eq!(input.len(), 8);
}

/// The recorded gpt-5.5 response: a reasoning item (no summary, encrypted
/// content), commentary text, then a call of get_capital.
fn reasoning_then_call() -> Option<Vec<u8>> {
    let dir = crate::common::fixtures::fixtures_dir()?;
    Some(std::fs::read(dir.join("providers/openai-responses/reasoning-text-then-function-call.sse")).unwrap())
}

#[test]
fn responses_reasoning_items_go_back_with_their_encrypted_content() {
    let Some(recorded) = reasoning_then_call() else { return };
    let server = MockServer::start(vec![Reply::sse(&recorded), Reply::sse(&wire::responses("Paris.", &[]))]);
    let url = base_url("openai-responses", server.url());
    let agent =
        provider_agent("openai-responses", &url, json!({"name": "gpt-5.5"}), json!({}), vec![echo("get_capital")]);
    let (result, _) = run(&agent, "capital?");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let first = server.requests()[0].json();
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(first["store"], false);
    // The transcript keeps the item: its id, and its encrypted content as the signature.
    let ferrule::message::Message::Assistant(answer) = &result.messages[1] else { panic!("{:?}", result.messages) };
    let Part::Thinking { thinking, signature: Some(encrypted), id: Some(id) } = &answer.content[0] else {
        panic!("no reasoning part: {answer:?}");
    };
    assert!(thinking.is_empty() && id.starts_with("rs_") && encrypted.starts_with("gAAAA"));
    let second = server.requests()[1].json();
    let input = second["input"].as_array().unwrap();
    assert_eq!(input[1], json!({"type": "reasoning", "id": id, "summary": [], "encrypted_content": encrypted}));
    assert_eq!(input[2]["role"], "assistant");
    assert_eq!(input[3]["type"], "function_call");
    assert_eq!(input[4]["type"], "function_call_output");
}

#[test]
fn encrypted_reasoning_is_asked_of_reasoning_models_only_unless_configured() {
    let include = |model: Value| {
        let server = MockServer::start(vec![Reply::sse(&wire::responses("ok", &[]))]);
        let agent =
            provider_agent("openai-responses", &base_url("openai-responses", server.url()), model, json!({}), vec![]);
        assert_eq!(run(&agent, "hi").0.status, RunStatus::Completed);
        server.requests()[0].json().get("include").cloned()
    };
    let asked = Some(json!(["reasoning.encrypted_content"]));
    for name in ["o3", "o4-mini", "gpt-5", "gpt-5.1-codex", "openai/gpt-oss-120b", "o1-2024-12-17"] {
        assert_eq!(include(json!({"name": name})), asked, "{name}");
    }
    for name in ["gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest", "o1x", "llama3"] {
        assert_eq!(include(json!({"name": name})), None, "{name}");
    }
    assert_eq!(include(json!({"name": "gpt-4o", "encrypted_reasoning": true})), asked);
    assert_eq!(include(json!({"name": "o3", "encrypted_reasoning": false})), None);
}

#[test]
fn reasoning_items_stay_with_their_provider() {
    // A transcript holding both kinds of reasoning, continued on each provider.
    let history = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Anthropic's.", "signature": "c2ln"},
            {"type": "thinking", "thinking": "OpenAI's.", "signature": "gAAAA", "id": "rs_1"},
            {"type": "text", "text": "Hello."}]},
        {"role": "user", "content": "again"}
    ]);
    for provider in ["anthropic", "openai-responses", "openai"] {
        let server = MockServer::start(vec![Reply::sse(&wire::stream(provider, "ok", &[]))]);
        let agent = provider_agent(provider, &base_url(provider, server.url()), json!({}), json!({}), vec![]);
        let input = ferrule::agent::RunInput::from_json(&json!({"messages": history}).to_string()).unwrap();
        let result = agent.start(input, None).unwrap().wait_blocking().unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{provider}: {:?}", result.error);
        let body = String::from_utf8(server.requests()[0].body.clone()).unwrap();
        assert_eq!(body.contains("Anthropic's."), provider == "anthropic", "{provider}: {body}");
        assert_eq!(body.contains("OpenAI's."), provider == "openai-responses", "{provider}: {body}");
    }
}

fn server_history_agent(server: &MockServer) -> ferrule::agent::Agent {
    let url = base_url("openai-responses", server.url());
    let model = json!({"name": "o3", "server_history": true});
    provider_agent("openai-responses", &url, model, json!({"system": "Be brief."}), vec![echo("lookup")])
}

#[test]
fn server_history_sends_only_what_follows_the_previous_response() {
    let server = MockServer::start(vec![
        Reply::sse(&wire::identified_response("resp_1", "Checking.", &[("c1", "lookup", r#"{"text":"A"}"#)])),
        Reply::sse(&wire::identified_response("resp_2", "", &[("c2", "lookup", r#"{"text":"B"}"#)])),
        Reply::sse(&wire::identified_response("resp_3", "Both found.", &[])),
    ]);
    let (result, _) = run(&server_history_agent(&server), "Look up A and B.");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 3);
    // The first request carries the whole input; the server is asked to store it.
    assert_eq!(bodies[0]["store"], true);
    assert!(bodies[0].get("previous_response_id").is_none());
    assert!(bodies[0].get("include").is_none(), "the server keeps the reasoning");
    assert_eq!(bodies[0]["input"].as_array().unwrap().len(), 1);
    for (body, previous, call) in [(&bodies[1], "resp_1", "c1"), (&bodies[2], "resp_2", "c2")] {
        assert_eq!(body["previous_response_id"], previous);
        assert_eq!(
            body["input"],
            json!([{"type": "function_call_output", "call_id": call, "output": if call == "c1" { "A" } else { "B" }}])
        );
        // Instructions and tools are not carried over by the server.
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["tools"].as_array().unwrap().len(), 1);
        assert_eq!(body["store"], true);
    }
    // The transcript is whole all the same.
    assert_eq!(result.messages.len(), 6);
}

#[test]
fn server_history_sends_the_whole_history_when_the_previous_response_is_gone() {
    let gone = br#"{"error": {"message": "Previous response with id 'resp_1' not found.",
        "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}}"#;
    let server = MockServer::start(vec![
        Reply::sse(&wire::identified_response("resp_1", "", &[("c1", "lookup", r#"{"text":"A"}"#)])),
        Reply::json(400, gone),
        Reply::sse(&wire::identified_response("resp_2", "", &[("c2", "lookup", r#"{"text":"B"}"#)])),
        Reply::sse(&wire::identified_response("resp_3", "Done.", &[])),
    ]);
    let (result, events) = run(&server_history_agent(&server), "Look up A, then B.");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert!(of_type(&events, "retry").is_empty(), "falling back is not a retry");
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 4);
    assert_eq!(bodies[1]["previous_response_id"], "resp_1");
    // The fallback: no previous response, the whole input, still stored.
    assert!(bodies[2].get("previous_response_id").is_none());
    assert_eq!(bodies[2]["store"], true);
    let kinds: Vec<&str> = bodies[2]["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item.get("type").or(item.get("role")).and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(kinds, ["user", "function_call", "function_call_output"]);
    // The response that answered the fallback is continued from.
    assert_eq!(bodies[3]["previous_response_id"], "resp_2");
    assert_eq!(bodies[3]["input"].as_array().unwrap().len(), 1);
}

#[test]
fn server_history_is_not_fallen_back_from_on_other_failures() {
    let invalid =
        br#"{"error": {"message": "Invalid tool output.", "type": "invalid_request_error", "param": "input"}}"#;
    let server = MockServer::start(vec![
        Reply::sse(&wire::identified_response("resp_1", "", &[("c1", "lookup", r#"{"text":"A"}"#)])),
        Reply::json(400, invalid),
    ]);
    let (result, _) = run(&server_history_agent(&server), "Look up A.");
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(result.error.as_ref().unwrap().code, ErrorCode::ProviderInvalidRequest);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn server_history_belongs_to_the_responses_provider() {
    for provider in ["openai", "anthropic", "openai-compatible"] {
        let config = json!({"model": {"provider": provider, "name": "m", "base_url": "http://127.0.0.1:9",
            "api_key_env": TEST_KEY_ENV, "server_history": true}});
        std::env::set_var(TEST_KEY_ENV, TEST_KEY);
        let error = ferrule::agent::AgentBuilder::from_json(&config.to_string())
            .and_then(|builder| builder.build())
            .err()
            .unwrap_or_else(|| panic!("{provider} took server_history"));
        assert_eq!(error.code, ErrorCode::InvalidArg);
        assert!(error.message.contains("server_history"), "{}", error.message);
    }
}

#[test]
fn images_a_model_cannot_take_become_notes_for_every_provider() {
    for provider in PROVIDERS {
        let (_, second, _server) = two_rounds(provider, json!({"image_input": false}));
        let text = second.to_string();
        assert!(!text.contains(PNG), "{provider}: the image was sent");
        assert!(
            text.contains(r#"[image 1 of 1 not shown: model \"test-model\" does not accept image input]"#),
            "{provider}: {text}"
        );
    }
}

#[test]
fn anthropic_refuses_other_image_types_before_sending() {
    let server = MockServer::start(vec![Reply::sse(&wire::anthropic("", &[("c1", "bmp", "{}")]))]);
    let bmp = tool("bmp", json!({}), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult {
            content: vec![Part::Image { media_type: Some("image/bmp".into()), data: Some("Qk0=".into()), url: None }],
            ..ToolResult::default()
        })
    });
    let agent = provider_agent("anthropic", server.url(), json!({}), json!({}), vec![bmp]);
    let (result, _) = run(&agent, "draw");
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::ProviderInvalidRequest);
    assert!(error.message.contains("image/bmp"), "{}", error.message);
    assert_eq!(server.requests().len(), 1, "the second request was never sent");
}

#[test]
fn strict_tools_are_refused_before_sending_where_unsupported() {
    for (provider, supported) in [
        ("openai", true),
        ("openai-responses", true),
        ("anthropic", false),
        ("openai-compatible", false),
        ("gemini", false),
    ] {
        let server = MockServer::start(vec![Reply::sse(&wire::stream(provider, "ok", &[]))]);
        let strict = tool("lookup", json!({"strict": true}), |_: Invocation| async {
            ToolOutcome::Completed(ToolResult::text("x"))
        });
        let agent = provider_agent(provider, &base_url(provider, server.url()), json!({}), json!({}), vec![strict]);
        let (result, _) = run(&agent, "go");
        if supported {
            assert_eq!(result.status, RunStatus::Completed, "{provider}");
            let body = server.requests()[0].json().to_string();
            assert!(body.contains(r#""strict":true"#), "{provider}: {body}");
        } else {
            let error = result.error.as_ref().unwrap();
            assert_eq!(error.code, ErrorCode::ProviderInvalidRequest, "{provider}");
            assert!(error.message.contains("strict"), "{provider}: {}", error.message);
            assert!(server.requests().is_empty(), "{provider}: nothing was sent");
        }
    }
}

#[test]
fn tool_choice_translates_per_provider() {
    let cases = [
        ("openai", json!("required"), json!("required")),
        ("openai", json!({"name": "lookup"}), json!({"type": "function", "function": {"name": "lookup"}})),
        ("openai-responses", json!({"name": "lookup"}), json!({"type": "function", "name": "lookup"})),
        ("anthropic", json!("required"), json!({"type": "any"})),
        ("anthropic", json!("none"), json!({"type": "none"})),
        ("anthropic", json!({"name": "lookup"}), json!({"type": "tool", "name": "lookup"})),
    ];
    for (provider, choice, wire_choice) in cases {
        let server = MockServer::start(vec![Reply::sse(&wire::stream(provider, "ok", &[]))]);
        let agent = provider_agent(
            provider,
            &base_url(provider, server.url()),
            json!({}),
            json!({"tool_choice": choice}),
            vec![echo("lookup")],
        );
        run(&agent, "go");
        assert_eq!(server.requests()[0].json()["tool_choice"], wire_choice, "{provider} {choice}");
    }
}

// ---- faults ---------------------------------------------------------------------

fn chat_agent(server: &MockServer, model: Value) -> ferrule::agent::Agent {
    provider_agent("openai", &format!("{}/v1", server.url()), model, json!({}), vec![])
}

fn failure(server: &MockServer, model: Value) -> (ferrule::Error, Vec<Value>) {
    let (result, events) = run(&chat_agent(server, model), "go");
    assert_eq!(result.status, RunStatus::Failed);
    assert_event_invariants(&events);
    (result.error.clone().unwrap(), events)
}

#[test]
fn a_connection_cut_mid_stream_fails_without_retry() {
    let long = wire::chat(&"word ".repeat(200), &[]);
    let server = MockServer::start(vec![Reply::sse(&long).ending(Ending::Cut), Reply::sse(&wire::chat("again", &[]))]);
    let (error, events) = failure(&server, json!({}));
    assert_eq!(error.code, ErrorCode::ProviderNetwork, "{}", error.message);
    assert!(of_type(&events, "retry").is_empty(), "output had streamed");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_malformed_chunk_fails_the_request() {
    let body = b"data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"a\"}}]}\n\ndata: {not json}\n\n";
    let server = MockServer::start(vec![Reply::sse(body)]);
    let (error, _) = failure(&server, json!({}));
    assert_eq!(error.code, ErrorCode::ProviderMalformedStream, "{}", error.message);
}

#[test]
fn a_server_that_stops_sending_hits_the_idle_timeout() {
    let server = MockServer::start(vec![Reply::sse(&wire::chat("partial answer", &[])[..60]).ending(Ending::Stall)]);
    let (error, _) = failure(&server, json!({"timeouts": {"idle_ms": 150}, "max_retries": 0}));
    assert_eq!(error.code, ErrorCode::Timeout, "{}", error.message);
    assert!(error.message.contains("150 ms"), "{}", error.message);
}

#[test]
fn a_server_that_never_answers_hits_the_first_byte_timeout_and_is_retried() {
    let stalled = Reply { status: 200, headers: vec![], chunks: vec![], ending: Ending::Silent };
    let server = MockServer::start(vec![stalled.clone(), stalled]);
    let (error, events) = failure(&server, json!({"timeouts": {"first_byte_ms": 100}, "max_retries": 1}));
    assert_eq!(error.code, ErrorCode::Timeout, "{}", error.message);
    assert_eq!(of_type(&events, "retry").len(), 1);
}

#[test]
fn rate_limits_honour_retry_after_then_succeed() {
    let limited =
        Reply::json(429, br#"{"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}"#)
            .header("retry-after", "1");
    let server = MockServer::start(vec![limited, Reply::sse(&wire::chat("finally", &[]))]);
    let (result, events) = run(&chat_agent(&server, json!({})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let retries = of_type(&events, "retry");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["attempt"], 2);
    assert_eq!(retries[0]["delay_ms"], 1000);
    assert_eq!(retries[0]["error"]["code"], "PROVIDER_RATE_LIMITED");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn retry_after_ms_and_backoff_bound_the_wait() {
    let limited = || Reply::json(429, b"{}").header("retry-after-ms", "20");
    let server = MockServer::start(vec![limited(), Reply::json(503, b"{}"), Reply::sse(&wire::chat("ok", &[]))]);
    let (result, events) = run(&chat_agent(&server, json!({"max_retries": 2, "retry_backoff_ms": 40})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let delays: Vec<u64> = of_type(&events, "retry").iter().map(|r| r["delay_ms"].as_u64().unwrap()).collect();
    assert_eq!(delays[0], 20);
    // The second wait is backoff: 40 ms doubled once, within ±25 % jitter.
    assert!((60..=100).contains(&delays[1]), "{delays:?}");
}

#[test]
fn an_auth_failure_is_not_retried() {
    let server =
        MockServer::start(vec![Reply::json(401, br#"{"error": {"message": "bad key", "code": "invalid_api_key"}}"#)]);
    let (error, events) = failure(&server, json!({"max_retries": 3}));
    assert_eq!(error.code, ErrorCode::ProviderAuth);
    assert!(of_type(&events, "retry").is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn overload_is_retried_until_the_attempts_run_out() {
    let overloaded =
        || Reply::json(529, br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#);
    let server =
        MockServer::start(vec![overloaded(), overloaded(), overloaded(), Reply::sse(&wire::anthropic("late", &[]))]);
    let agent = provider_agent("anthropic", server.url(), json!({"max_retries": 2}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::ProviderOverloaded);
    assert!(error.message.contains("Overloaded"));
    assert_eq!(of_type(&events, "retry").len(), 2);
    assert_eq!(server.requests().len(), 3);

    let server = MockServer::start(vec![Reply::json(503, b"busy"), Reply::sse(&wire::chat("recovered", &[]))]);
    let (result, _) = run(&chat_agent(&server, json!({})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
}

fn anthropic_error_event(kind: &str) -> String {
    format!("event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"{kind}\", \"message\": \"Overloaded\"}}}}\n\n")
}

#[test]
fn an_error_event_mid_stream_ends_the_request_with_its_code() {
    let text = wire::anthropic("some text", &[]);
    let cut = String::from_utf8(text).unwrap();
    let before_stop = cut.split("event: message_delta").next().unwrap().to_owned();
    let server =
        MockServer::start(vec![Reply::sse((before_stop + &anthropic_error_event("overloaded_error")).as_bytes())]);
    let agent = provider_agent("anthropic", server.url(), json!({}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.error.as_ref().unwrap().code, ErrorCode::ProviderOverloaded);
    assert!(of_type(&events, "retry").is_empty(), "text had streamed");

    // Before any output, the same error is retried.
    let server = MockServer::start(vec![
        Reply::sse(anthropic_error_event("overloaded_error").as_bytes()),
        Reply::sse(&wire::anthropic("second try", &[])),
    ]);
    let agent = provider_agent("anthropic", server.url(), json!({}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(of_type(&events, "retry").len(), 1);
}

#[test]
fn a_body_far_larger_than_any_bound_fails_cleanly() {
    // One event of 20 MiB, never finished: the parser gives up at its bound.
    let mut body = b"data: \"".to_vec();
    body.extend(std::iter::repeat_n(b'x', 20 << 20));
    let reply = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: body.chunks(1 << 16).map(<[u8]>::to_vec).collect(),
        ending: Ending::Complete,
    };
    let server = MockServer::start(vec![reply]);
    let (error, _) = failure(&server, json!({}));
    assert_eq!(error.code, ErrorCode::ProviderMalformedStream, "{}", error.message);
    assert!(error.message.contains("larger than"), "{}", error.message);
}

#[test]
fn an_unreachable_server_is_a_network_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let agent =
        provider_agent("openai", &format!("http://127.0.0.1:{port}/v1"), json!({"max_retries": 1}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.error.as_ref().unwrap().code, ErrorCode::ProviderNetwork);
    assert_eq!(of_type(&events, "retry").len(), 1);
}

#[test]
fn the_whole_request_timeout_bounds_a_slow_stream() {
    let server = MockServer::start(vec![Reply::sse(&wire::chat("slow", &[])[..40]).ending(Ending::Stall)]);
    let (error, _) = failure(&server, json!({"timeouts": {"total_ms": 200}, "max_retries": 0}));
    assert_eq!(error.code, ErrorCode::Timeout);
    assert!(error.message.contains("200 ms") && error.message.contains("whole request"), "{}", error.message);
}

// ---- secrets --------------------------------------------------------------------

#[test]
fn the_api_key_never_reaches_events_errors_or_results() {
    let echoed = format!(
        r#"{{"error": {{"message": "Incorrect API key provided: {TEST_KEY}. Key fragment {}.", "code": "invalid_api_key"}}}}"#,
        &TEST_KEY[3..20]
    );
    let server = MockServer::start(vec![
        Reply::sse(&wire::chat("", &[("c1", "lookup", "{}")])),
        Reply::json(401, echoed.as_bytes()),
    ]);
    let agent = chat_agent(&server, json!({}));
    let agent_with_tool =
        provider_agent("openai", &format!("{}/v1", server.url()), json!({}), json!({}), vec![echo("lookup")]);
    drop(agent);
    let (result, events) = run(&agent_with_tool, "go");
    assert_eq!(result.error.as_ref().unwrap().code, ErrorCode::ProviderAuth);
    let emitted = format!("{}{}", serde_json::to_string(&events).unwrap(), serde_json::to_string(&*result).unwrap());
    assert!(emitted.contains("Incorrect API key provided"), "the provider's message is kept");
    assert!(!emitted.contains(TEST_KEY), "the key leaked: {emitted}");
    assert!(!emitted.contains(&TEST_KEY[3..20]), "a piece of the key leaked: {emitted}");
    assert!(!format!("{:?}", result.error).contains(TEST_KEY));
}

#[test]
fn a_missing_key_is_reported_at_build() {
    let config = json!({"model": {"provider": "anthropic", "name": "claude", "api_key_env": "FERRULE_TEST_UNSET_KEY"}});
    std::env::remove_var("FERRULE_TEST_UNSET_KEY");
    let err = ferrule::agent::AgentBuilder::from_json(&config.to_string()).unwrap().build().err().unwrap();
    assert_eq!(err.code, ErrorCode::ProviderAuth);
    assert!(err.message.contains("FERRULE_TEST_UNSET_KEY"), "{}", err.message);
}

#[test]
fn stream_false_reads_whole_responses() {
    let body = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
    let server = MockServer::start(vec![Reply::json(200, body.to_string().as_bytes())]);
    let (result, events) = run(&chat_agent(&server, json!({"stream": false})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert!(server.requests()[0].json().get("stream").is_none());
    assert_eq!(of_type(&events, "message_delta")[0]["text"], "whole");
    assert_eq!(result.usage.input_tokens, 3);
}

#[test]
fn anthropic_thinking_and_its_signature_go_back_on_the_next_turn() {
    let thinking = [
        r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Need the plan."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2lnbmF0dXJl"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"lookup","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"text\":\"C-1\"}"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        r#"{"type":"message_stop"}"#,
    ]
    .iter()
    .map(|data| format!("data: {data}\n\n"))
    .collect::<String>();
    let server = MockServer::start(vec![Reply::sse(thinking.as_bytes()), Reply::sse(&wire::anthropic("Gold.", &[]))]);
    let agent = provider_agent("anthropic", server.url(), json!({}), json!({}), vec![echo("lookup")]);
    let (result, events) = run(&agent, "plan?");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(of_type(&events, "message_delta")[0]["thinking"], "Need the plan.");
    let second = server.requests()[1].json();
    assert_eq!(
        second["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Need the plan.", "signature": "c2lnbmF0dXJl"})
    );
    assert_eq!(second["messages"][1]["content"][1]["type"], "tool_use");
}

// ---- connections ------------------------------------------------------------------

/// Three runs of two rounds each (a call, then the answer) on one agent. The tool
/// takes a moment, as tools do: the HTTP pool takes a connection back on a task
/// of its own once the response has ended, and a request made within that moment
/// opens another connection.
fn three_runs_of_two_rounds(closing: bool) -> MockServer {
    let reply = |body: Vec<u8>| {
        let reply = Reply::sse(&body);
        if closing {
            reply.header("connection", "close")
        } else {
            reply
        }
    };
    let round = || [reply(wire::chat("", &[("c1", "lookup", r#"{"text":"A"}"#)])), reply(wire::chat("Found.", &[]))];
    let server = MockServer::start((0..3).flat_map(|_| round()).collect());
    let lookup = tool("lookup", json!({}), |_: Invocation| async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        ToolOutcome::Completed(ToolResult::text("A"))
    });
    let agent = provider_agent("openai", &base_url("openai", server.url()), json!({}), json!({}), vec![lookup]);
    for _ in 0..3 {
        let (result, _) = run(&agent, "Look up A.");
        assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(server.requests().len(), 6);
    server
}

#[test]
fn connections_are_reused_across_the_rounds_and_runs_of_an_agent() {
    // One connection, unless a request was made before the pool had taken the
    // last one back.
    let connections = three_runs_of_two_rounds(false).connections();
    assert!(connections <= 2, "{connections} connections for 6 requests");
}

#[test]
fn a_server_that_closes_each_connection_gets_a_new_one_per_request() {
    assert_eq!(three_runs_of_two_rounds(true).connections(), 6);
}

// ---- hostile servers --------------------------------------------------------------

#[test]
fn a_redirect_to_another_origin_is_refused_for_every_provider() {
    for provider in PROVIDERS {
        for status in [302, 307] {
            let elsewhere = MockServer::start(vec![Reply::sse(&wire::stream(provider, "stolen", &[]))]);
            let location = format!("{}{}", elsewhere.url(), wire::path(provider));
            let server = MockServer::start(vec![Reply::json(status, b"{}").header("location", &location)]);
            let model = json!({"headers": {"x-team-token": "team-token-5f1e2d3c"}, "max_retries": 2});
            let agent = provider_agent(provider, &base_url(provider, server.url()), model, json!({}), vec![]);
            let (result, _) = run(&agent, "go");
            assert_eq!(result.status, RunStatus::Failed, "{provider} {status}");
            let error = result.error.clone().unwrap();
            assert_eq!(error.code, ErrorCode::ProviderNetwork, "{provider} {status}: {}", error.message);
            assert!(
                error.message.contains("another origin") && error.message.contains(elsewhere.url()),
                "{provider} {status}: {}",
                error.message
            );
            assert!(elsewhere.requests().is_empty(), "{provider} {status}: the other origin got the request");
            assert_eq!(server.requests().len(), 1, "{provider} {status}: a refused redirect is not retried");
        }
    }
}

#[test]
fn a_redirect_within_the_origin_is_followed_with_the_body() {
    let server = MockServer::start(vec![
        Reply::json(307, b"{}").header("location", "/v1/moved/chat/completions"),
        Reply::sse(&wire::chat("moved", &[])),
    ]);
    let (result, _) = run(&chat_agent(&server, json!({})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let requests = server.requests();
    assert_eq!(requests[1].path, "/v1/moved/chat/completions");
    assert_eq!(requests[1].body, requests[0].body);
    assert_eq!(requests[1].header("authorization"), requests[0].header("authorization"));
}

#[test]
fn absurd_retry_after_values_end_in_the_rate_limit_error_not_a_panic() {
    for (header, value) in [("retry-after", "inf"), ("retry-after", "1e300"), ("retry-after-ms", "1e300")] {
        let server = MockServer::start(vec![Reply::json(429, b"{}").header(header, value)]);
        let (error, _) = failure(&server, json!({"max_retries": 0}));
        assert_eq!(error.code, ErrorCode::ProviderRateLimited, "{header}: {value}: {}", error.message);
    }
}

#[test]
fn header_values_are_scrubbed_from_errors_like_keys() {
    let echoed = br#"{"error": {"message": "token team-token-5f1e2d3c is not valid here", "code": "invalid_api_key"}}"#;
    let server = MockServer::start(vec![Reply::json(401, echoed)]);
    let (error, _) = failure(&server, json!({"headers": {"x-team-token": "team-token-5f1e2d3c", "x-flag": "true"}}));
    assert!(!error.message.contains("5f1e2d3c"), "{}", error.message);
    assert!(error.message.contains("[redacted] is not valid"), "{}", error.message);
}

#[test]
fn responses_refuses_a_max_tokens_below_its_minimum_when_built() {
    let config = json!({"model": {"provider": "openai-responses", "name": "m", "base_url": "http://127.0.0.1:9",
                                  "api_key_env": TEST_KEY_ENV, "max_tokens": 15}});
    std::env::set_var(TEST_KEY_ENV, TEST_KEY);
    let Err(err) = ferrule::agent::AgentBuilder::from_json(&config.to_string()).unwrap().build() else {
        panic!("a max_tokens of 15 was accepted")
    };
    assert_eq!(err.code, ErrorCode::InvalidArg);
    assert!(err.message.contains("at least 16"), "{}", err.message);
}

#[test]
fn openai_providers_are_asked_for_structured_output_natively() {
    let strict = json!({"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"],
        "additionalProperties": false});
    let loose = json!({"type": "object", "properties": {"plan": {"type": "string"}}});
    for (provider, schema, is_strict) in [
        ("openai", &strict, true),
        ("openai", &loose, false),
        ("openai-responses", &strict, true),
        ("openai-responses", &loose, false),
    ] {
        let server = MockServer::start(vec![Reply::sse(&wire::stream(provider, r#"{"plan": "gold"}"#, &[]))]);
        let agent = provider_agent(
            provider,
            &base_url(provider, server.url()),
            json!({}),
            json!({"output_schema": schema}),
            vec![],
        );
        let (result, _) = run(&agent, "plan?");
        assert_eq!(result.status, RunStatus::Completed, "{provider}: {:?}", result.error);
        assert_eq!(result.output, Some(json!({"plan": "gold"})));
        let body = server.requests()[0].json();
        let format = json!({"name": "output", "schema": schema, "strict": is_strict});
        if provider == "openai" {
            assert_eq!(body["response_format"], json!({"type": "json_schema", "json_schema": format}), "{provider}");
        } else {
            let mut format = format;
            format["type"] = json!("json_schema");
            assert_eq!(body["text"], json!({"format": format}), "{provider}");
        }
    }
    // Anthropic has no such option; the answer is checked all the same.
    let server = MockServer::start(vec![Reply::sse(&wire::anthropic(r#"{"plan": "gold"}"#, &[]))]);
    let agent = provider_agent("anthropic", server.url(), json!({}), json!({"output_schema": strict}), vec![]);
    assert_eq!(run(&agent, "plan?").0.output, Some(json!({"plan": "gold"})));
    let body = server.requests()[0].json();
    assert!(body.get("response_format").is_none() && body.get("text").is_none());
}

// ---- history budget ---------------------------------------------------------------

#[test]
fn a_long_run_under_a_history_budget_sends_requests_that_stay_under_it() {
    const ROUNDS: usize = 500;
    const BUDGET_TOKENS: usize = 2_000;
    // The server reports no usage, so ferrule estimates by bytes (4 per token).
    let without_usage = |body: Vec<u8>| -> Vec<u8> {
        let text = String::from_utf8(body).unwrap();
        text.split_inclusive("\n\n").filter(|event| !event.contains("\"usage\"")).collect::<String>().into_bytes()
    };
    let mut replies: Vec<Reply> = (0..ROUNDS - 1)
        .map(|i| Reply::sse(&without_usage(wire::chat("", &[(&format!("c{i}"), "fetch", r#"{"page":1}"#)]))))
        .collect();
    replies.push(Reply::sse(&without_usage(wire::chat("All fetched.", &[]))));
    let server = MockServer::start(replies);
    let fetch =
        tool("fetch", json!({}), |_: Invocation| async { ToolOutcome::Completed(ToolResult::text("row ".repeat(80))) });
    let history = json!({"history": {"max_input_tokens": BUDGET_TOKENS}, "max_rounds": ROUNDS});
    let agent = provider_agent("openai", &base_url("openai", server.url()), json!({}), history, vec![fetch]);
    let (result, events) = run(&agent, "Start the long job.");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.messages.len(), 1 + 2 * (ROUNDS - 1) + 1, "the transcript keeps everything");
    let requests = server.requests();
    assert_eq!(requests.len(), ROUNDS);
    // The bound: the budget in bytes, plus what every request sends besides the
    // messages (model, tools, options) and one round's exchange of slack.
    let bound = BUDGET_TOKENS * 4 + 1_500;
    for (round, request) in requests.iter().enumerate() {
        let body = request.json();
        assert!(request.body.len() <= bound, "request {round} sends {} bytes (bound {bound})", request.body.len());
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["content"], "Start the long job.", "request {round} lost the first user message");
        if round > 0 {
            let last = messages.last().unwrap();
            assert_eq!(last["tool_call_id"], format!("c{}", round - 1), "request {round} lost the live exchange");
        }
    }
    let compacted = of_type(&events, "history_compacted");
    assert!(compacted.len() > ROUNDS / 2, "{} compacted requests", compacted.len());
    assert!(compacted.iter().all(|e| e["dropped"].as_u64().unwrap() > 0));
}
