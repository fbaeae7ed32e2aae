//! The cached encoders against the whole-tree oracle (`reference_bodies`): for
//! every prefix of long synthetic transcripts and of transcripts built from the
//! recorded provider responses, a request encoded from a run's cache has the same
//! bytes as the oracle's body for that prefix, under every model setting that
//! changes a body.

use crate::test_fixtures as fixtures;

use serde_json::{json, Value};

use super::anthropic::Messages;
use super::gemini::Gemini;
use super::http::{encode_body, ModelSettings, Protocol};
use super::openai_chat::ChatCompletions;
use super::openai_responses::Responses;
use super::reference_bodies;
use super::{decode_recorded, GenerationRequest, ProviderKind, ToolChoice, ToolDefinition, WireCache};
use crate::message::{AssistantMessage, Message, Part, SystemMessage, ToolCall, ToolResultMessage, UserMessage};

fn settings(stream: bool, max_tokens: Option<u32>, image_input: bool) -> ModelSettings {
    ModelSettings {
        name: "model-x".into(),
        max_tokens,
        stream,
        image_input,
        strict_tools: true,
        encrypted_reasoning: stream,
        server_history: false,
        thinking: None,
    }
}

fn tools() -> Vec<ToolDefinition> {
    let schema = json!({"type": "object", "properties": {"q": {"type": "string", "description": "zé \"quoted\""}},
        "required": ["q"], "additionalProperties": false});
    vec![
        ToolDefinition { name: "lookup".into(), description: "Looks up.".into(), input_schema: schema, strict: true },
        ToolDefinition { name: "noop".into(), description: "".into(), input_schema: json!({}), strict: false },
    ]
}

fn image(media_type: &str) -> Part {
    Part::Image { media_type: Some(media_type.into()), data: Some("iVBORw0KGgo=".into()), url: None }
}

fn user(content: Vec<Part>) -> Message {
    Message::User(UserMessage { content, origin: None })
}

/// A transcript of `rounds` rounds touching every encoding rule: plain and
/// multi-part user messages, system messages in the middle, thinking of both
/// providers, assistant text with and without calls, invalid argument text, tool
/// results with images (accepted, refused, by URL), files and errors.
fn synthetic(rounds: usize) -> Vec<Message> {
    let mut messages = vec![user(vec![Part::text("Start: naïve \u{1F600} \"q\"\n")])];
    for round in 0..rounds {
        match round % 7 {
            1 => messages.push(Message::System(SystemMessage { content: format!("Rule {round}."), origin: None })),
            3 if round < 10 => messages.push(Message::System(SystemMessage { content: String::new(), origin: None })),
            4 => messages.push(user(vec![
                Part::text(format!("look at {round}")),
                image("image/png"),
                Part::Image { media_type: None, data: None, url: Some("https://example.com/a.png".into()) },
                Part::File { media_type: "application/pdf".into(), data: "JVBERg==".into(), name: None },
            ])),
            _ => {}
        }
        let mut content = Vec::new();
        if round % 3 == 0 {
            content.push(Part::Thinking {
                thinking: format!("think {round}"),
                signature: Some("sig".into()),
                id: None,
            });
        }
        if round % 5 == 0 {
            content.push(Part::Thinking {
                thinking: if round % 10 == 0 { String::new() } else { format!("summary {round}") },
                signature: Some("gAAAA-encrypted".into()),
                id: Some(format!("rs_{round}")),
            });
        }
        if round % 2 == 0 {
            content.push(Part::text(format!("Working on {round}.")));
        }
        let calls = 1 + round % 3;
        let tool_calls: Vec<ToolCall> = (0..calls)
            .map(|i| ToolCall {
                id: format!("call_{round}_{i}"),
                name: if i == 0 { "lookup".into() } else { "noop".into() },
                arguments: match (round + i) % 4 {
                    0 => format!("{{\"q\": \"item {round}\", \"z\": 1, \"a\": [1, 2]}}"),
                    1 => "{}".into(),
                    2 => "not json".into(),
                    _ => "[1]".into(),
                },
                // Gemini's signature, on the first call of some rounds only.
                signature: (i == 0 && round % 4 == 1).then(|| format!("c2lnX3{round}")),
            })
            .collect();
        messages.push(Message::Assistant(AssistantMessage {
            content,
            tool_calls: tool_calls.clone(),
            ..Default::default()
        }));
        for (i, call) in tool_calls.iter().enumerate() {
            let mut content = vec![Part::text(format!("result {round}.{i}"))];
            match (round + i) % 6 {
                0 => content.push(image("image/png")),
                1 => content.extend([image("image/jpeg"), image("image/webp")]),
                2 => content.push(Part::Image {
                    media_type: None,
                    data: None,
                    url: Some("https://example.com/b.png".into()),
                }),
                3 => content.push(Part::File {
                    media_type: "text/csv".into(),
                    data: "YSxi".into(),
                    name: Some("t.csv".into()),
                }),
                _ => {}
            }
            messages.push(Message::Tool(ToolResultMessage {
                tool_call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: (round + i) % 5 == 4,
            }));
        }
    }
    // A response that stopped while reasoning.
    let reasoning_only =
        Part::Thinking { thinking: "hmm".into(), signature: Some("gAAAA".into()), id: Some("rs_x".into()) };
    messages.push(Message::Assistant(AssistantMessage { content: vec![reasoning_only], ..Default::default() }));
    messages.push(user(vec![Part::text("Go on.")]));
    messages.push(Message::Assistant(AssistantMessage { content: vec![Part::text("Done.")], ..Default::default() }));
    messages
}

/// Transcripts built from the recorded responses: each decoded message answered
/// by tool results (every other one with an image), then the next prompt.
fn recorded() -> Option<Vec<Message>> {
    let providers = fixtures::fixtures_dir()?.join("providers");
    let mut messages = vec![user(vec![Part::text("go")])];
    for (dir, kind) in [
        ("openai-chat", ProviderKind::Openai),
        ("openai-compatible", ProviderKind::OpenaiCompatible),
        ("openai-responses", ProviderKind::OpenaiResponses),
        ("anthropic", ProviderKind::Anthropic),
        ("gemini", ProviderKind::Gemini),
    ] {
        let mut paths: Vec<_> = std::fs::read_dir(providers.join(dir)).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        for path in paths {
            let name = path.to_string_lossy().into_owned();
            let stream = !name.ends_with(".json");
            let Ok(message) = decode_recorded(kind, &fixtures::stream_body(&path), stream) else { continue };
            let results: Vec<Message> = message
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, call)| {
                    let mut content = vec![Part::text(format!("answer for {}", call.name))];
                    if i % 2 == 0 {
                        content.push(image("image/gif"));
                    }
                    Message::Tool(ToolResultMessage {
                        tool_call_id: call.id.clone(),
                        name: call.name.clone(),
                        content,
                        is_error: false,
                    })
                })
                .collect();
            messages.push(Message::Assistant(message));
            messages.extend(results);
            messages.push(user(vec![Part::text(format!("next after {name}"))]));
        }
    }
    Some(messages)
}

/// The oracle's bytes, or its error message.
type Oracle = fn(&ModelSettings, &GenerationRequest<'_>) -> Result<Value, String>;

/// Every prefix of `messages` encoded through one cache (as a run would) and
/// from a fresh cache, against the oracle.
fn compare(protocol: &impl Protocol, oracle: Oracle, messages: &[Message]) {
    let tools = tools();
    let tool_refs: Vec<&ToolDefinition> = tools.iter().collect();
    let choices = [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None, ToolChoice::Named("lookup".into())];
    let variants = [settings(true, None, true), settings(false, Some(100), false), settings(true, Some(64), true)];
    for (v, model) in variants.iter().enumerate() {
        let mut wire = WireCache::default();
        for end in 0..=messages.len() {
            let system = ["You are \"helpful\".", "", "You are \"helpful\"."][v];
            let request = GenerationRequest {
                turn: 1,
                run_serial: 1,
                run_id: "run-1",
                system: (v != 1 || end % 2 == 0).then_some(system),
                messages: &messages[..end],
                tools: if v == 2 { &[] } else { &tool_refs },
                tool_choice: &choices[end % choices.len()],
                output_schema: None,
                trace: None,
            };
            let expected = oracle(model, &request).map(|body| serde_json::to_vec(&body).unwrap());
            let cached = encode_body(protocol, model, &request, None, &mut wire).map_err(|e| e.message);
            assert_eq!(
                cached.as_deref().map(String::from_utf8_lossy),
                expected.as_deref().map(String::from_utf8_lossy),
                "{}: variant {v}, the first {end} messages, from the run's cache",
                protocol.name()
            );
            if end % 37 == 0 || end == messages.len() {
                let fresh =
                    encode_body(protocol, model, &request, None, &mut WireCache::default()).map_err(|e| e.message);
                assert_eq!(fresh, cached, "{}: variant {v}, {end} messages, from a fresh cache", protocol.name());
            }
        }
    }
}

fn chat_oracle(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, String> {
    Ok(reference_bodies::chat::body(true, model, request))
}

fn compatible_oracle(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, String> {
    Ok(reference_bodies::chat::body(false, model, request))
}

fn responses_oracle(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, String> {
    Ok(reference_bodies::responses::body(model, request))
}

fn gemini_oracle(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, String> {
    Ok(reference_bodies::gemini::body(model, request))
}

fn anthropic_oracle(model: &ModelSettings, request: &GenerationRequest<'_>) -> Result<Value, String> {
    reference_bodies::anthropic::body(model, request).map_err(|e| e.message)
}

#[test]
fn cached_bodies_match_the_oracle_on_long_synthetic_transcripts() {
    let messages = synthetic(70);
    compare(&ChatCompletions { is_openai: true }, chat_oracle, &messages);
    compare(&ChatCompletions { is_openai: false }, compatible_oracle, &messages);
    compare(&Responses, responses_oracle, &messages);
    compare(&Messages, anthropic_oracle, &messages);
    compare(&Gemini, gemini_oracle, &messages);
}

#[test]
fn cached_bodies_match_the_oracle_on_the_recorded_responses() {
    let Some(messages) = recorded() else { return };
    assert!(messages.len() > 40, "the fixtures gave a short transcript: {}", messages.len());
    compare(&ChatCompletions { is_openai: true }, chat_oracle, &messages);
    compare(&Responses, responses_oracle, &messages);
    compare(&Messages, anthropic_oracle, &messages);
    compare(&Gemini, gemini_oracle, &messages);
}

#[test]
fn an_anthropic_image_type_it_refuses_fails_and_leaves_no_cache_behind() {
    let mut messages = synthetic(3);
    let model = settings(true, None, true);
    messages.push(Message::Tool(ToolResultMessage {
        tool_call_id: "x".into(),
        name: "noop".into(),
        content: vec![image("image/bmp")],
        is_error: false,
    }));
    let request = GenerationRequest {
        turn: 1,
        run_serial: 1,
        run_id: "run-1",
        system: None,
        messages: &messages,
        tools: &[],
        tool_choice: &ToolChoice::Auto,
        output_schema: None,
        trace: None,
    };
    let mut wire = WireCache::default();
    let error = encode_body(&Messages, &model, &request, None, &mut wire).unwrap_err();
    assert!(error.message.contains("image/bmp"), "{}", error.message);
    assert!(wire.transcript.is_none());
}

#[test]
fn a_shorter_or_other_wire_transcript_starts_the_cache_over() {
    let messages = synthetic(10);
    let model = settings(true, None, true);
    let mut wire = WireCache::default();
    let body = |messages: &[Message],
                wire: &mut WireCache,
                protocol: &dyn Fn(&GenerationRequest<'_>, &mut WireCache) -> Vec<u8>| {
        protocol(
            &GenerationRequest {
                turn: 1,
                run_serial: 1,
                run_id: "run-1",
                system: None,
                messages,
                tools: &[],
                tool_choice: &ToolChoice::Auto,
                output_schema: None,
                trace: None,
            },
            wire,
        )
    };
    let chat = |request: &GenerationRequest<'_>, wire: &mut WireCache| {
        encode_body(&ChatCompletions { is_openai: true }, &model, request, None, wire).unwrap()
    };
    let responses = |request: &GenerationRequest<'_>, wire: &mut WireCache| {
        encode_body(&Responses, &model, request, None, wire).unwrap()
    };
    body(&messages, &mut wire, &chat);
    let short = body(&messages[..5], &mut wire, &chat);
    assert_eq!(short, body(&messages[..5], &mut WireCache::default(), &chat));
    let other = body(&messages[..5], &mut wire, &responses);
    assert_eq!(other, body(&messages[..5], &mut WireCache::default(), &responses));
}

#[test]
fn reasoning_goes_back_only_with_what_followed_it() {
    let reasoning =
        |id: &str| Part::Thinking { thinking: String::new(), signature: Some("gAAAA".into()), id: Some(id.into()) };
    let messages = vec![
        user(vec![Part::text("hi")]),
        // Stopped for length while reasoning: nothing followed the item.
        Message::Assistant(AssistantMessage { content: vec![reasoning("rs_alone")], ..Default::default() }),
        user(vec![Part::text("go on")]),
        Message::Assistant(AssistantMessage {
            content: vec![reasoning("rs_answered"), Part::text("Done.")],
            ..Default::default()
        }),
    ];
    let request = GenerationRequest {
        turn: 1,
        run_serial: 1,
        run_id: "run-1",
        system: None,
        messages: &messages,
        tools: &[],
        tool_choice: &ToolChoice::Auto,
        output_schema: None,
        trace: None,
    };
    let body = encode_body(&Responses, &settings(true, None, true), &request, None, &mut WireCache::default()).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    let ids: Vec<&str> = body["input"].as_array().unwrap().iter().filter_map(|item| item["id"].as_str()).collect();
    assert_eq!(ids, ["rs_answered"]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

    /// Every prefix of a random transcript (calls answered or not), through one
    /// cache and a fresh one, encodes to the oracle's bytes for every provider
    /// (or to its error).
    #[test]
    fn cached_bodies_match_the_oracle_on_random_transcripts(messages in crate::test_transcripts::transcript(false)) {
        compare(&ChatCompletions { is_openai: true }, chat_oracle, &messages);
        compare(&ChatCompletions { is_openai: false }, compatible_oracle, &messages);
        compare(&Responses, responses_oracle, &messages);
        compare(&Messages, anthropic_oracle, &messages);
        compare(&Gemini, gemini_oracle, &messages);
    }
}
