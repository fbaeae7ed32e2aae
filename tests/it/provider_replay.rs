//! Every recorded provider response in the shared fixtures, replayed through a
//! local HTTP server, parsed into the message it holds: text, thinking, each tool
//! call's id, name and complete arguments, stop reason and usage. A call id of
//! `*` is one ferrule made up (Gemini's calls usually come without).

use std::path::Path;

use crate::common::fixtures::{fixtures_dir, stream_body};
use crate::common::server::{MockServer, Reply};
use crate::common::*;
use ferrule::agent::RunStatus;
use ferrule::message::{Message, Part, StopReason};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// What a fixture must parse into.
struct Expect {
    file: &'static str,
    /// The whole text, or (with `…` at the end) how it starts.
    text: &'static str,
    /// Characters of text, when only the start is given.
    text_chars: usize,
    thinking_chars: usize,
    calls: &'static [(&'static str, &'static str, &'static str)],
    stop: StopReason,
    /// input, output, cached
    usage: (u64, u64, u64),
}

const fn expect(file: &'static str, text: &'static str, stop: StopReason, usage: (u64, u64, u64)) -> Expect {
    Expect { file, text, text_chars: 0, thinking_chars: 0, calls: &[], stop, usage }
}

const WEATHER_EDINBURGH: &str = r#"{"city":"Edinburgh","country":"UK","units":"c"}"#;

fn expectations() -> Vec<Expect> {
    use StopReason::*;
    vec![
        expect("openai-chat/finish-length-max-tokens-1.sse", "{\"", Length, (79, 1, 0)),
        Expect { text_chars: 149, ..expect("openai-chat/finish-length-text-obfuscation.sse", "Here is a list of all 50 U.S. states:\n\n1. Alabama…", Length, (14, 50, 0)) },
        expect("openai-chat/n3-choices-interleaved.sse", r#"{"city":"San Francisco","temperature":65,"units":"f"}"#, EndTurn, (79, 42, 0)),
        expect("openai-chat/refusal-delta.sse", "I'm sorry, I can't assist with that request.", EndTurn, (79, 11, 0)),
        Expect { text_chars: 159, ..expect("openai-chat/text-stop-with-usage-chunk.sse", "I'm unable to provide real-time weather updates.…", EndTurn, (14, 30, 0)) },
        Expect {
            calls: &[("call_c91SqDXlYFuETYv8mUHzz6pp", "GetWeatherArgs", WEATHER_EDINBURGH)],
            ..expect("openai-chat/tool-call-single-args-fragmented.sse", "", ToolUse, (76, 24, 0))
        },
        Expect {
            calls: &[("call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather", r#"{"city":"New York City"}"#)],
            ..expect("openai-chat/tool-call-single-get-weather.sse", "", ToolUse, (44, 16, 0))
        },
        Expect {
            calls: &[
                ("call_M26z19sncd7b4LBgzKRRbaUE", "secret_retrieval_tool", r#"{"password": "mellon"}"#),
                ("call_KPXe5NX7IcKkaBUhc6dto2QV", "secret_retrieval_tool", r#"{"password": "radiance"}"#),
            ],
            ..expect("openai-chat/tool-calls-two-parallel-obfuscation.sse", "", ToolUse, (75, 53, 0))
        },
        Expect {
            calls: &[
                ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#),
                ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#),
            ],
            ..expect("openai-chat/tool-calls-two-parallel.sse", "", ToolUse, (149, 60, 0))
        },
        Expect {
            calls: &[
                ("call_v6LacIrChvs6ITVpIZqy5tFc", "secret_retrieval_tool", r#"{"password": "mellon"}"#),
                ("call_onyWzk4mLTGKzW9cthmf4Llq", "secret_retrieval_tool", r#"{"password": "radiance"}"#),
            ],
            ..expect("openai-chat/nonstream-two-tool-calls.json", "", ToolUse, (75, 53, 0))
        },
        Expect {
            thinking_chars: 191,
            calls: &[("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", r#"{"location": "San Francisco"}"#)],
            ..expect("openai-compatible/deepseek-reasoner-tool-call.chunks.jsonl", "", ToolUse, (339, 83, 320))
        },
        Expect {
            thinking_chars: 1069,
            calls: &[("call_79382389", "weather", r#"{"location":"San Francisco"}"#)],
            ..expect("openai-compatible/xai-tool-call-single-chunk.chunks.jsonl", "", ToolUse, (307, 26, 306))
        },
        Expect {
            calls: &[("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", r#"{"country":"France"}"#)],
            ..expect("openai-responses/function-call-single.sse", "", ToolUse, (255, 16, 0))
        },
        Expect {
            calls: &[
                ("call_sKC7OABqf2A2PTLCm0CLeRWV", "secret_retrieval_tool", r#"{"password":"mellon"}"#),
                ("call_OdR3s3xop0vtgkDyWRMLafuH", "secret_retrieval_tool", r#"{"password":"radiance"}"#),
            ],
            ..expect("openai-responses/function-calls-two-parallel.sse", "", ToolUse, (36, 54, 0))
        },
        Expect { text_chars: 152, ..expect("openai-responses/incomplete-max-output-tokens.sse", "Sure! Here is a list of all 50 U.S. states:…", Length, (14, 50, 0)) },
        Expect {
            calls: &[("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", r#"{"country":"PotatoLand"}"#)],
            ..expect("openai-responses/reasoning-text-then-function-call.sse", "I’ll check the capital lookup tool for “PotatoLand.”", ToolUse, (63, 69, 0))
        },
        expect("openai-responses/text-only.sse", "4200 + 42 equals 4242.", EndTurn, (16, 11, 0)),
        Expect {
            calls: &[
                ("call_bzXaB1HDWsWy7n6bMrxJzNNa", "secret_retrieval_tool", r#"{"password":"mellon"}"#),
                ("call_Dd4wvykCr6NttXKxRK0BFH96", "secret_retrieval_tool", r#"{"password":"radiance"}"#),
            ],
            ..expect("openai-responses/nonstream-two-function-calls.json", "", ToolUse, (36, 54, 0))
        },
        expect("anthropic/text-only.sse", "4200 + 42 = 4242", EndTurn, (17, 15, 0)),
        Expect { text_chars: 150, ..expect("anthropic/text-stop-max-tokens.sse", "Here are all 50 U.S. states in alphabetical order:…", Length, (15, 50, 0)) },
        Expect {
            calls: &[("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", r#"{"location": "Paris"}"#)],
            ..expect("anthropic/text-then-tool-use.sse", "I'll check the current weather in Paris for you.", ToolUse, (377, 65, 0))
        },
        Expect {
            calls: &[
                ("toolu_015cUijgET79LXjgeYQerN2h", "secret_retrieval_tool", r#"{"password": "mellon"}"#),
                ("toolu_01XZTimPexA7h3EVKesnKt5T", "secret_retrieval_tool", r#"{"password": "radiance"}"#),
            ],
            ..expect("anthropic/text-then-two-parallel-tool-use.sse", "I'll retrieve the secrets for both passwords you provided.", ToolUse, (416, 109, 0))
        },
        Expect {
            text_chars: 1021,
            thinking_chars: 202,
            ..expect("anthropic/thinking-signature-then-text.sse", "Here are the basic steps for safely crossing the street:…", EndTurn, (43, 282, 0))
        },
        Expect {
            text_chars: 135,
            calls: &[(
                "toolu_01EKqbqmZrGRXy18eN7m9kvY",
                "make_file",
                "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes",
            )],
            ..expect("anthropic/tool-use-cut-by-max-tokens.sse", "I'll create a comprehensive tax guide…", Length, (450, 124, 0))
        },
        Expect {
            calls: &[("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", "{}")],
            ..expect("anthropic/tool-use-no-args.chunks.jsonl", "I'll update the issue list for you.", ToolUse, (565, 48, 0))
        },
        Expect {
            calls: &[
                ("toolu_01BUvqBj8Yb34pNAbCJJY1oc", "secret_retrieval_tool", r#"{"password":"mellon"}"#),
                ("toolu_01VPuQJ1LonDBYXrr8pqPkqQ", "secret_retrieval_tool", r#"{"password":"radiance"}"#),
            ],
            ..expect("anthropic/nonstream-text-and-two-tool-use.json", "I'll retrieve the secrets for both passwords you provided.", ToolUse, (416, 109, 0))
        },
        // Gemini: a SAFETY stop has no content; STOP with calls is tool use.
        expect("gemini/nonstream-finish-safety-empty-content.json", "", ContentFilter, (14, 0, 0)),
        Expect {
            calls: &[("*", "weather", r#"{"location":"San Francisco"}"#)],
            ..expect("gemini/nonstream-function-call-thought-signature.json", "", ToolUse, (29, 1816, 0))
        },
        expect("gemini/nonstream-max-tokens-no-parts.json", "", Length, (15, 2, 0)),
        Expect { text_chars: 78, ..expect("gemini/nonstream-text-signature-on-text-part.json", "There are **3** r's in strawberry.…", EndTurn, (9, 272, 0)) },
        Expect {
            calls: &[("*", "generate_topic", "{}"), ("*", "generate_topic", "{}"), ("*", "generate_topic", "{}")],
            ..expect("gemini/nonstream-three-parallel-function-calls.json", "", ToolUse, (83, 220, 0))
        },
        // Executed code and its output are not kept; the prompt of the server's
        // tool counts as input.
        Expect { text_chars: 82, ..expect("gemini/stream-code-execution-crlf.sse", "The result of $65465 - 6544 \\times 65464…", EndTurn, (507, 276, 0)) },
        Expect {
            calls: &[("*", "weather", r#"{"location":"San Francisco"}"#)],
            ..expect("gemini/stream-function-call-thought-signature.chunks.jsonl", "", ToolUse, (29, 819, 0))
        },
        // Vertex AI's arguments streamed by JSON path.
        Expect {
            calls: &[(
                "*",
                "writeItems",
                r#"{"operations":[{"action":"add","description":"Fresh red apple","itemid":"apple_001","price":0.5},{"action":"add","description":"Ripe yellow banana","itemid":"banana_001","price":0.3}]}"#,
            )],
            ..expect("gemini/stream-partial-args-array-no-terminator-vertex.chunks.jsonl", "", ToolUse, (54, 195, 0))
        },
        Expect {
            calls: &[("*", "getWeather", r#"{"location":"Boston"}"#), ("*", "getWeather", r#"{"location":"San Francisco"}"#)],
            ..expect("gemini/stream-partial-function-call-args.chunks.jsonl", "", ToolUse, (26, 155, 0))
        },
        Expect {
            calls: &[("*", "get_country", "{}")],
            ..expect("gemini/stream-signature-roundtrip-turn1-function-call-crlf.sse", "", ToolUse, (29, 212, 0))
        },
        // Usage from the last chunk, not the first.
        expect("gemini/stream-signature-roundtrip-turn2-text-crlf.sse", "The capital of Mexico is Mexico City.", EndTurn, (257, 8, 0)),
        expect("gemini/stream-text-finish-max-tokens-crlf.sse", "Here are all 50 U.S.", Length, (9, 48, 0)),
        Expect {
            calls: &[("g1bmv6il", "get_weather", r#"{"city":"San Francisco"}"#)],
            ..expect("gemini/stream-text-then-function-call-with-id.chunks.jsonl", "Let me check.", ToolUse, (83, 199, 0))
        },
        Expect { text_chars: 55, ..expect("gemini/stream-text-trailing-empty-part-signature.chunks.jsonl", "There are **3** \"r\"s in strawberry.…", EndTurn, (9, 208, 0)) },
        Expect {
            text_chars: 1938,
            thinking_chars: 1575,
            ..expect("gemini/stream-thought-parts-then-text-crlf.sse", "This is a great question! Safely crossing the street is all…", EndTurn, (34, 1256, 0))
        },
        Expect {
            thinking_chars: 320,
            calls: &[
                ("*", "read_theme", "{}"),
                ("*", "read_screen", r#"{"id":"A"}"#),
                ("*", "read_screen", r#"{"id":"B"}"#),
                ("*", "read_screen", r#"{"id":"C"}"#),
            ],
            ..expect("gemini/stream-thought-then-four-function-calls-vertex.chunks.jsonl", "", ToolUse, (249, 241, 0))
        },
        Expect {
            calls: &[("*", "secret_retrieval_tool", r#"{"password":"mellon"}"#), ("*", "secret_retrieval_tool", r#"{"password":"radiance"}"#)],
            ..expect("gemini/stream-two-function-calls-crlf.sse", "", ToolUse, (70, 101, 0))
        },
    ]
}

/// Recordings that end a request with an in-band error: file, code, message part.
const STREAM_ERRORS: &[(&str, ErrorCode, &str)] = &[
    (
        "openai-compatible/groq-midstream-event-error.sse",
        ErrorCode::ProviderInvalidRequest,
        "Tool call validation failed",
    ),
    (
        "openai-compatible/openrouter-comments-length-then-error.sse",
        ErrorCode::ProviderInvalidRequest,
        "Token limit reached",
    ),
    (
        "openai-responses/error-event-then-response-failed.chunks.jsonl",
        ErrorCode::ProviderRateLimited,
        "exceeded your current quota",
    ),
];

/// HTTP error bodies: file, code, message part.
const HTTP_ERRORS: &[(&str, ErrorCode, &str)] = &[
    ("errors/openai-chat-401-invalid-api-key.json", ErrorCode::ProviderAuth, "Incorrect API key provided"),
    ("errors/openai-chat-400-unsupported-parameter.json", ErrorCode::ProviderInvalidRequest, "unsupported_parameter"),
    ("errors/openai-chat-404-model-not-found.json", ErrorCode::ProviderNotFound, "model_not_found"),
    ("errors/openai-responses-400-model-not-found.json", ErrorCode::ProviderNotFound, "model_not_found"),
    ("errors/anthropic-401-authentication-error.json", ErrorCode::ProviderAuth, "invalid x-api-key"),
    ("errors/anthropic-404-not-found-model.json", ErrorCode::ProviderNotFound, "not_found_error"),
    // Google answers a bad key with 400; its reason says what it is.
    ("errors/gemini-400-invalid-argument-api-key-stream-endpoint.json", ErrorCode::ProviderAuth, "API key not valid"),
    ("errors/gemini-404-not-found-model-stream-endpoint.json", ErrorCode::ProviderNotFound, "NOT_FOUND"),
    ("errors/gemini-429-resource-exhausted-retry-info.json", ErrorCode::ProviderRateLimited, "RESOURCE_EXHAUSTED"),
];

/// Gemini's answers to a blocked prompt: 200, no candidates, the reason.
const BLOCKED: &[&str] = &[
    "gemini/stream-prompt-blocked-prohibited-content.chunks.jsonl",
    "gemini/nonstream-prompt-blocked-prohibited-content.json",
];

/// Recorded request bodies, which no test serves (`gemini_signatures_go_back...`
/// compares what ferrule sends with them).
const REQUESTS: &[&str] = &[
    "gemini/nonstream-three-parallel-function-calls-turn2.request.json",
    "gemini/stream-signature-roundtrip-turn1.request.json",
    "gemini/stream-signature-roundtrip-turn2.request.json",
];

/// Recordings of several exchanges, replayed in `recorded_exchanges_replay_in_order`.
const RECORDED: &[&str] = &[
    "errors/anthropic-429-rate-limit-x2-then-stream.recorded.json",
    "errors/anthropic-400-invalid-request-orphan-tool-result.recorded.json",
];

fn provider_of(file: &str) -> &'static str {
    match file.split('/').next().unwrap() {
        "openai-chat" => "openai",
        "openai-compatible" => "openai-compatible",
        "openai-responses" => "openai-responses",
        "anthropic" => "anthropic",
        "gemini" => "gemini",
        "errors" if file.contains("gemini") => "gemini",
        "errors" if file.contains("responses") => "openai-responses",
        "errors" if file.contains("openai") => "openai",
        "errors" => "anthropic",
        other => panic!("no provider for {other}"),
    }
}

fn base_url(provider: &str, server: &MockServer) -> String {
    crate::common::wire::base_url(provider, server.url())
}

/// Replays one body and returns the run result and its events.
fn replay(file: &str, reply: Reply) -> (std::sync::Arc<ferrule::agent::RunResult>, Vec<Value>, MockServer) {
    let provider = provider_of(file);
    let server = MockServer::start(vec![reply]);
    let stream = !file.ends_with(".json");
    let agent = provider_agent(
        provider,
        &base_url(provider, &server),
        json!({"stream": stream, "max_retries": 0}),
        json!({"max_rounds": 1}),
        vec![],
    );
    let (result, events) = run(&agent, "replay");
    (result, events, server)
}

fn assistant(result: &ferrule::agent::RunResult) -> &ferrule::message::AssistantMessage {
    match result.final_message.as_ref() {
        Some(Message::Assistant(message)) => message,
        other => panic!("no assistant message: {other:?} ({:?})", result.error),
    }
}

#[test]
fn every_recorded_response_parses_into_its_message() {
    let Some(fixtures) = fixtures_dir() else { return };
    let providers = fixtures.join("providers");
    for expected in expectations() {
        let path = providers.join(expected.file);
        let reply = if expected.file.ends_with(".json") {
            Reply::json(200, &std::fs::read(&path).unwrap())
        } else {
            Reply::sse(&stream_body(&path))
        };
        let (result, events, server) = replay(expected.file, reply);
        let message = assistant(&result);
        let file = expected.file;

        let text: String = message
            .content
            .iter()
            .filter_map(|p| match p {
                Part::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        match expected.text.strip_suffix('…') {
            Some(start) => {
                assert!(text.starts_with(start), "{file}: text {text:?}");
                assert_eq!(text.chars().count(), expected.text_chars, "{file}: text length");
            }
            None => assert_eq!(text, expected.text, "{file}"),
        }
        let thinking: usize = message
            .content
            .iter()
            .map(|p| match p {
                Part::Thinking { thinking, .. } => thinking.chars().count(),
                _ => 0,
            })
            .sum();
        assert_eq!(thinking, expected.thinking_chars, "{file}: thinking");
        let calls: Vec<(&str, &str, &str)> = message
            .tool_calls
            .iter()
            .zip(expected.calls.iter().map(|c| c.0).chain(std::iter::repeat("")))
            .map(|(c, expected_id)| {
                let id = match expected_id == "*" && c.id.starts_with("call_") {
                    true => "*",
                    false => c.id.as_str(),
                };
                (id, c.name.as_str(), c.arguments.as_str())
            })
            .collect();
        assert_eq!(calls, expected.calls, "{file}: tool calls");
        let ids: std::collections::HashSet<&str> = message.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), message.tool_calls.len(), "{file}: made-up ids are distinct");
        assert_eq!(message.stop_reason, expected.stop, "{file}: stop reason");
        let usage = (message.usage.input_tokens, message.usage.output_tokens, message.usage.cached_tokens);
        assert_eq!(usage, expected.usage, "{file}: usage");

        // Streamed pieces reach the host as deltas, and add up to the message.
        if !file.ends_with(".json") {
            let streamed: String =
                of_type(&events, "message_delta").iter().filter_map(|e| e["text"].as_str()).collect();
            assert_eq!(streamed, text, "{file}: text deltas");
        }
        // A tool_execution_start never carries half-streamed arguments.
        for start in of_type(&events, "tool_execution_start") {
            let id = start["call"]["id"].as_str().unwrap();
            let call = message.tool_calls.iter().find(|c| c.id == id).unwrap();
            assert_eq!(start["call"]["arguments"], call.arguments.as_str(), "{file}");
        }
        assert_event_invariants(&events);
        assert_eq!(server.requests().len(), 1, "{file}: one request");
    }
}

#[test]
fn thinking_keeps_its_signature() {
    let Some(fixtures) = fixtures_dir() else { return };
    let file = "anthropic/thinking-signature-then-text.sse";
    let (result, _, _server) = replay(file, Reply::sse(&stream_body(&fixtures.join("providers").join(file))));
    let signature = assistant(&result).content.iter().find_map(|p| match p {
        Part::Thinking { signature, .. } => signature.clone(),
        _ => None,
    });
    assert_eq!(signature.map(|s| s.len()), Some(504));
}

#[test]
fn in_band_errors_end_the_request_with_their_code() {
    let Some(fixtures) = fixtures_dir() else { return };
    for (file, code, needle) in STREAM_ERRORS {
        let (result, events, _server) = replay(file, Reply::sse(&stream_body(&fixtures.join("providers").join(file))));
        assert_eq!(result.status, RunStatus::Failed, "{file}");
        let error = result.error.as_ref().unwrap();
        assert_eq!(error.code, *code, "{file}: {}", error.message);
        assert!(error.message.contains(needle), "{file}: {}", error.message);
        assert!(of_type(&events, "retry").is_empty(), "{file}: output had streamed, so no retry");
    }
}

#[test]
fn http_error_bodies_are_classified() {
    let Some(fixtures) = fixtures_dir() else { return };
    for (file, code, needle) in HTTP_ERRORS {
        let status: u16 = file.split('-').find_map(|p| p.parse().ok()).unwrap();
        let body = std::fs::read(fixtures.join("providers").join(file)).unwrap();
        let (result, _, server) = replay(file, Reply::json(status, &body));
        let error = result.error.as_ref().unwrap();
        assert_eq!(error.code, *code, "{file}: {}", error.message);
        assert!(error.message.contains(needle), "{file}: {}", error.message);
        assert!(error.message.contains(&status.to_string()), "{file}: {}", error.message);
        assert_eq!(server.requests().len(), 1, "{file}: not retried");
    }
}

fn recorded_replies(path: &Path) -> Vec<Reply> {
    let exchanges: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    exchanges
        .iter()
        .map(|exchange| {
            let response = &exchange["response"];
            let status = response["status_code"].as_u64().unwrap() as u16;
            let body = match &response["body"] {
                Value::String(text) => text.clone().into_bytes(),
                other => other.to_string().into_bytes(),
            };
            let mut reply = if status == 200 && body.starts_with(b"event:") {
                Reply::sse(&body)
            } else {
                Reply::json(status, &body)
            };
            for name in ["x-should-retry", "retry-after"] {
                if let Some(value) = response["headers"][name].as_str() {
                    reply = reply.header(name, value);
                }
            }
            reply
        })
        .collect()
}

#[test]
fn recorded_exchanges_replay_in_order() {
    let Some(fixtures) = fixtures_dir() else { return };
    let errors = fixtures.join("providers");

    // Two 429s (x-should-retry: true, no retry-after), then the stream.
    let server = MockServer::start(recorded_replies(&errors.join(RECORDED[0])));
    let agent = provider_agent("anthropic", server.url(), json!({"max_retries": 2}), json!({}), vec![]);
    let (result, events) = run(&agent, "numbers");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let retries = of_type(&events, "retry");
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0]["attempt"], 2);
    assert_eq!(retries[1]["attempt"], 3);
    assert_eq!(retries[0]["error"]["code"], "PROVIDER_RATE_LIMITED");
    assert_eq!(
        crate::common::text(&serde_json::to_value(result.final_message.as_ref().unwrap()).unwrap()),
        "[12345,67890]"
    );
    assert_eq!(server.requests().len(), 3);

    // A tool round, then a 400 the provider says not to retry.
    let server = MockServer::start(recorded_replies(&errors.join(RECORDED[1])));
    let weather = echo("get_weather");
    let agent = provider_agent("anthropic", server.url(), json!({"stream": false}), json!({}), vec![weather]);
    let (result, events) = run(&agent, "weather");
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::ProviderInvalidRequest);
    assert!(error.message.contains("unexpected `tool_use_id`"), "{}", error.message);
    assert!(of_type(&events, "retry").is_empty());
    assert_eq!(server.requests().len(), 2);
    assert_eq!(tool_results(&result).len(), 1, "the tool round is in the transcript");
}

#[test]
fn every_fixture_file_is_covered() {
    let Some(fixtures) = fixtures_dir() else { return };
    let providers = fixtures.join("providers");
    let mut covered: Vec<String> = expectations().iter().map(|e| e.file.to_owned()).collect();
    covered.extend(STREAM_ERRORS.iter().chain(HTTP_ERRORS).map(|(f, _, _)| f.to_string()));
    covered.extend(RECORDED.iter().chain(BLOCKED).chain(REQUESTS).map(|f| f.to_string()));
    for dir in std::fs::read_dir(&providers).unwrap() {
        let dir = dir.unwrap();
        if !dir.file_type().unwrap().is_dir() || dir.file_name() == "licenses" {
            continue;
        }
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let name = format!("{}/{}", dir.file_name().to_string_lossy(), file.unwrap().file_name().to_string_lossy());
            assert!(covered.contains(&name), "{name} has no replay test");
        }
    }
}
