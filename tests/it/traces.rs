//! Spans after the OpenTelemetry GenAI conventions, as the host's tracer
//! receives them: one `invoke_agent` per run (under the host's span when the
//! run input names one), a `chat` per model request and an `execute_tool` per
//! call under it, a nested run under its call, content only when asked, and
//! nothing at all without a tracer. The tracer is the process's, so these
//! tests take turns and pick their own spans out by trace id.

use std::sync::{Arc, Mutex};

use crate::common::agents::*;
use crate::common::server::{MockServer, Reply};
use crate::common::tracer::{Received, TURN};
use crate::common::*;
use ferrule::agent::{AgentBuilder, RunInput, RunStatus};
use ferrule::hook::{Hook, HookDecision, HookRequest, HookStage};
use ferrule::tool::{Invocation, ToolOutcome, ToolResult};
use ferrule::trace::{AttributeValue, SpanData, SpanKind, StatusCode, TraceContext};
use serde_json::{json, Value};

fn string<'a>(span: &'a SpanData, key: &str) -> Option<&'a str> {
    match span.attributes.get(key) {
        Some(AttributeValue::String(text)) => Some(text),
        _ => None,
    }
}

fn int(span: &SpanData, key: &str) -> Option<i64> {
    match span.attributes.get(key) {
        Some(AttributeValue::Int(n)) => Some(*n),
        _ => None,
    }
}

fn named<'a>(spans: &'a [Arc<SpanData>], operation: &str) -> Vec<&'a Arc<SpanData>> {
    spans.iter().filter(|s| string(s, "gen_ai.operation.name") == Some(operation)).collect()
}

fn run_id(events: &[Value]) -> String {
    events[0]["run_id"].as_str().unwrap().to_owned()
}

const HOST_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HOST_SPAN: &str = "b7ad6b7169203331";

fn under_host(prompt: &str) -> RunInput {
    let mut input = RunInput::prompt(prompt);
    let context = TraceContext { traceparent: format!("00-{HOST_TRACE}-{HOST_SPAN}-01"), tracestate: None };
    input.trace_parent = Some(context.parent().unwrap());
    input
}

/// A scripted agent that calls `lookup` (which keeps the traceparent it is
/// given), then answers; `extra` adds config fields.
fn lookup_agent(extra: Value, seen: Arc<Mutex<Vec<Option<String>>>>) -> ferrule::agent::Agent {
    let lookup = tool("lookup", json!({}), move |call: Invocation| {
        seen.lock().unwrap().push(call.trace().map(|t| t.traceparent()));
        async { ToolOutcome::Completed(ToolResult::text("Gold")) }
    });
    let script = json!([
        {"tool_calls": [call("c1", "lookup", json!({"customer": "C-100"}))],
         "usage": {"input_tokens": 10, "output_tokens": 2}},
        {"text": "C-100 is on Gold.", "usage": {"input_tokens": 20, "output_tokens": 5, "cached_tokens": 4}}
    ]);
    let mut config = json!({"name": "support", "system": "Be brief."});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    agent(script, config, vec![lookup])
}

#[test]
fn a_run_is_an_invoke_agent_span_under_the_hosts_with_its_requests_and_calls_under_it() {
    let received = Received::set();
    let seen = Arc::default();
    let agent = lookup_agent(json!({}), Arc::clone(&seen));
    let (result, events) = run_input(&agent, under_host("Plan of C-100?"));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let spans = received.trace_of(&run_id(&events));
    assert_eq!(spans.len(), 4, "{spans:#?}");

    let run = named(&spans, "invoke_agent")[0];
    assert_eq!(run.trace_id.to_string(), HOST_TRACE);
    assert_eq!(run.parent_span_id.map(|id| id.to_string()).as_deref(), Some(HOST_SPAN));
    assert_eq!(run.name, "invoke_agent support");
    assert_eq!((run.kind, run.status.code), (SpanKind::Internal, StatusCode::Unset));
    assert_eq!(string(run, "gen_ai.agent.name"), Some("support"));
    assert_eq!(string(run, "gen_ai.provider.name"), Some("ferrule.scripted"));
    assert_eq!(string(run, "gen_ai.conversation.id"), Some(run_id(&events).as_str()));
    assert_eq!((int(run, "gen_ai.usage.input_tokens"), int(run, "gen_ai.usage.output_tokens")), (Some(30), Some(7)));
    assert_eq!(int(run, "gen_ai.usage.cache_read.input_tokens"), Some(4));
    assert_eq!(spans.last().map(|s| s.span_id), Some(run.span_id), "the run's span ends last");

    let chats = named(&spans, "chat");
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!((chat.kind, chat.parent_span_id), (SpanKind::Client, Some(run.span_id)));
        assert!(chat.start_time_unix_nano >= run.start_time_unix_nano);
        assert!(chat.end_time_unix_nano <= run.end_time_unix_nano);
    }
    let reasons: Vec<_> = chats.iter().map(|c| c.attributes.get("gen_ai.response.finish_reasons").cloned()).collect();
    assert_eq!(
        reasons,
        [Some(AttributeValue::Strings(vec!["tool_calls".into()])), Some(AttributeValue::Strings(vec!["stop".into()]))]
    );
    assert_eq!(int(chats[1], "gen_ai.usage.input_tokens"), Some(20));

    let tool = named(&spans, "execute_tool")[0];
    assert_eq!((tool.name.as_str(), tool.parent_span_id), ("execute_tool lookup", Some(run.span_id)));
    assert_eq!(string(tool, "gen_ai.tool.name"), Some("lookup"));
    assert_eq!(string(tool, "gen_ai.tool.call.id"), Some("c1"));
    assert_eq!(string(tool, "gen_ai.tool.type"), Some("function"));
    let traceparent = format!("00-{HOST_TRACE}-{}-01", tool.span_id);
    assert_eq!(*seen.lock().unwrap(), [Some(traceparent)], "the tool's function is given its span");

    // Nothing said is recorded unless asked.
    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert!(span.attributes.get(key).is_none(), "{key} in {}", span.name);
        }
        let json = serde_json::to_string(&**span).unwrap();
        assert!(!json.contains("C-100") && !json.contains("Gold") && !json.contains("Be brief"), "{json}");
    }
}

#[test]
fn content_is_recorded_when_the_agent_asks_for_it() {
    let received = Received::set();
    let agent = lookup_agent(json!({"trace": {"capture_content": true}}), Arc::default());
    let (_, events) = run(&agent, "Plan of C-100?");
    let spans = received.trace_of(&run_id(&events));
    let run_span = named(&spans, "invoke_agent")[0];
    assert_eq!(run_span.parent_span_id, None, "without a trace_context the run begins a trace");
    let chats = named(&spans, "chat");
    let input: Value = serde_json::from_str(string(chats[0], "gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(input, json!([{"role": "user", "parts": [{"type": "text", "content": "Plan of C-100?"}]}]));
    let system: Value = serde_json::from_str(string(chats[0], "gen_ai.system_instructions").unwrap()).unwrap();
    assert_eq!(system, json!([{"type": "text", "content": "Be brief."}]));
    let output: Value = serde_json::from_str(string(chats[1], "gen_ai.output.messages").unwrap()).unwrap();
    assert_eq!(
        output,
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "C-100 is on Gold."}], "finish_reason": "stop"}])
    );
    // The second request's span records what is new since the first's.
    let second: Value = serde_json::from_str(string(chats[1], "gen_ai.input.messages").unwrap()).unwrap();
    assert_eq!(int(chats[1], "ferrule.input.messages.earlier"), Some(1));
    assert_eq!(second[0]["parts"][0]["type"], "tool_call");
    assert_eq!(
        second[1],
        json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "Gold"}]})
    );
    let tool = named(&spans, "execute_tool")[0];
    assert_eq!(string(tool, "gen_ai.tool.call.arguments"), Some(r#"{"customer":"C-100"}"#));
    assert_eq!(string(tool, "gen_ai.tool.call.result"), Some("Gold"));
}

#[test]
fn with_a_compacted_history_every_message_is_still_recorded() {
    let received = Received::set();
    // A budget so small that each request keeps only the newest messages: the
    // requests' windows move instead of growing.
    let calls: Vec<Value> =
        (1..=6).map(|i| json!({"tool_calls": [call(&format!("c{i}"), "lookup", json!({}))]})).collect();
    let mut script = calls;
    script.push(json!({"text": "done"}));
    let extra = json!({"trace": {"capture_content": true}, "history": {"max_input_tokens": 60}});
    let agent = agent(json!(script), extra, vec![echo("lookup")]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert!(!of_type(&events, "history_compacted").is_empty(), "the history was compacted");
    let spans = received.trace_of(&run_id(&events));
    let recorded: String = named(&spans, "chat")
        .iter()
        .map(|chat| string(chat, "gen_ai.input.messages").unwrap_or_default().to_owned())
        .collect();
    for i in 1..=6 {
        let response = format!(r#"{{"id":"c{i}","response":"ok","type":"tool_call_response"}}"#);
        assert!(recorded.contains(&response), "the result of c{i} is in no request's span: {recorded}");
    }
}

#[test]
fn a_run_of_an_agent_called_as_a_tool_goes_under_its_call() {
    let received = Received::set();
    let researcher = agent(json!([{"text": "the facts"}]), json!({}), vec![]);
    let boss = with_agents(
        json!([{"tool_calls": [call("c1", "researcher", json!({"input": "find facts"}))]}, {"text": "done"}]),
        json!({}),
        vec![],
        vec![as_tool("researcher", &researcher)],
    );
    let (result, events) = run(&boss, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let spans = received.trace_of(&run_id(&events));
    let runs = named(&spans, "invoke_agent");
    assert_eq!(runs.len(), 2, "{spans:#?}");
    let call = named(&spans, "execute_tool")[0];
    assert_eq!(string(call, "ferrule.tool.source"), Some("agent"));
    let nested = runs.iter().find(|r| r.parent_span_id == Some(call.span_id)).expect("the nested run under its call");
    assert_eq!(nested.name, "invoke_agent researcher");
    assert_eq!(string(nested, "gen_ai.conversation.id"), Some(run_id(&events).as_str()), "one conversation");
    let nested_chat = named(&spans, "chat").into_iter().find(|c| c.parent_span_id == Some(nested.span_id));
    assert!(nested_chat.is_some(), "the nested run's request is under the nested run");
}

#[test]
fn hooks_see_the_runs_span_and_their_decisions_are_its_events() {
    let received = Received::set();
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let mut builder = AgentBuilder::from_json(
        &json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [call("c1", "lookup", json!({}))]}, {"text": "done"}]}})
        .to_string(),
    )
    .unwrap();
    builder.add_tool(echo("lookup")).unwrap();
    let hook = Hook::new(vec![HookStage::ToolCall], move |request: HookRequest| {
        kept.lock().unwrap().push(request.trace().map(|t| t.traceparent()));
        async { Ok(HookDecision::Deny("not today".into())) }
    })
    .unwrap();
    builder.add_hook(hook);
    let agent = builder.build().unwrap();
    let (_, events) = run(&agent, "go");
    let spans = received.trace_of(&run_id(&events));
    let run_span = named(&spans, "invoke_agent")[0];
    let expected = format!("00-{}-{}-01", run_span.trace_id, run_span.span_id);
    assert_eq!(*seen.lock().unwrap(), [Some(expected)]);
    let decisions: Vec<_> = run_span.events.iter().filter(|e| e.name == "ferrule.hook").collect();
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0].attributes.get("ferrule.hook.decision"), Some(&AttributeValue::from("deny")));
    let tool = named(&spans, "execute_tool")[0];
    assert_eq!((tool.status.code, string(tool, "error.type")), (StatusCode::Error, Some("tool_error")));
}

#[test]
fn a_model_request_over_http_names_its_response_and_its_retries() {
    let received = Received::set();
    let server = MockServer::start(vec![Reply::json(503, b"{}"), Reply::sse(&described_answer())]);
    let model = json!({"max_retries": 1, "retry_backoff_ms": 1});
    let agent = provider_agent("openai", &format!("{}/v1", server.url()), model, json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let spans = received.trace_of(&run_id(&events));
    let chat = named(&spans, "chat")[0];
    assert_eq!(chat.name, "chat test-model");
    assert_eq!(string(chat, "gen_ai.provider.name"), Some("openai"));
    assert_eq!(string(chat, "gen_ai.request.model"), Some("test-model"));
    assert_eq!(string(chat, "gen_ai.response.model"), Some("test-model-2026"));
    assert_eq!(string(chat, "gen_ai.response.id"), Some("chatcmpl-42"));
    assert_eq!(string(chat, "server.address"), Some("127.0.0.1"));
    let retries: Vec<_> = chat.events.iter().filter(|e| e.name == "ferrule.retry").collect();
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].attributes.get("ferrule.retry.attempt"), Some(&AttributeValue::Int(2)));
    let json = serde_json::to_string(&spans.iter().map(|s| &**s).collect::<Vec<_>>()).unwrap();
    assert!(!json.contains(TEST_KEY), "no key in a span");
}

/// A Chat Completions stream that names its response and model.
fn described_answer() -> Vec<u8> {
    let chunk = json!({"id": "chatcmpl-42", "model": "test-model-2026", "choices": [{"index": 0,
        "delta": {"content": "hi"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}});
    format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()
}

#[test]
fn requests_carry_their_spans_traceparent_only_when_asked() {
    let received = Received::set();
    for propagate in [false, true] {
        let server = MockServer::start(vec![Reply::sse(&described_answer())]);
        let extra = json!({"trace": {"propagate": propagate}});
        let agent = provider_agent("openai", &format!("{}/v1", server.url()), json!({}), extra, vec![]);
        let mut input = under_host("go");
        input.trace_parent.as_mut().unwrap().tracestate = Some("vendor=1".into());
        let (_, events) = run_input(&agent, input);
        let spans = received.trace_of(&run_id(&events));
        let run_span = spans.iter().find(|s| string(s, "ferrule.run.id") == Some(run_id(&events).as_str())).unwrap();
        let chat = named(&spans, "chat").into_iter().find(|c| c.parent_span_id == Some(run_span.span_id)).unwrap();
        let request = &server.requests()[0];
        match propagate {
            true => {
                assert_eq!(
                    request.header("traceparent"),
                    Some(format!("00-{HOST_TRACE}-{}-01", chat.span_id).as_str())
                );
                assert_eq!(request.header("tracestate"), Some("vendor=1"));
            }
            false => assert_eq!((request.header("traceparent"), request.header("tracestate")), (None, None)),
        }
    }
}

#[test]
fn a_failed_request_fails_its_span_and_the_runs() {
    let received = Received::set();
    let server = MockServer::start(vec![Reply::json(401, br#"{"error": {"message": "bad key"}}"#)]);
    let agent = provider_agent("openai", &format!("{}/v1", server.url()), json!({}), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Failed);
    let spans = received.trace_of(&run_id(&events));
    for span in &spans {
        assert_eq!(
            (span.status.code, string(span, "error.type")),
            (StatusCode::Error, Some("PROVIDER_AUTH")),
            "{}",
            span.name
        );
    }
}

#[test]
fn without_a_tracer_nothing_is_recorded() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    ferrule::trace::remove_tracer();
    let seen = Arc::default();
    let agent = lookup_agent(json!({}), Arc::clone(&seen));
    let (result, _) = run_input(&agent, under_host("go"));
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(*seen.lock().unwrap(), [None], "no span, no traceparent");
}

#[test]
fn a_trace_the_host_does_not_sample_records_nothing() {
    let received = Received::set();
    let seen = Arc::default();
    let agent = lookup_agent(json!({}), Arc::clone(&seen));
    let mut input = RunInput::prompt("go");
    let context = TraceContext { traceparent: format!("00-{HOST_TRACE}-{HOST_SPAN}-00"), tracestate: None };
    input.trace_parent = Some(context.parent().unwrap());
    let (_, events) = run_input(&agent, input);
    // A run after it, sampled, shows the tracer was there all along.
    let (_, later) = run(&agent, "go");
    received.trace_of(&run_id(&later));
    let unsampled = run_id(&events);
    assert!(received.spans.lock().unwrap().iter().all(|s| string(s, "ferrule.run.id") != Some(unsampled.as_str())));
    assert_eq!(seen.lock().unwrap()[0], None, "no span, no traceparent for the tool");
}

#[test]
fn a_malformed_trace_context_is_refused() {
    for (input, why) in [
        (json!({"prompt": "x", "trace_context": {"traceparent": "00-xyz"}}), "trace_context.traceparent"),
        (
            json!({"prompt": "x", "trace_context": {"traceparent": format!("00-{HOST_TRACE}-{HOST_SPAN}-01"), "x": 1}}),
            "x",
        ),
        (json!({"prompt": "x", "trace_context": {"tracestate": "a=b"}}), "traceparent"),
    ] {
        let error = RunInput::from_json(&input.to_string()).unwrap_err();
        assert_eq!(error.code, ferrule::ErrorCode::InvalidArg);
        assert!(error.message.contains(why), "{}", error.message);
    }
}
