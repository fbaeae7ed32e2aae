//! The built-in OTLP/HTTP exporter against a receiver on 127.0.0.1: the
//! protobuf it sends, decoded with `opentelemetry-proto`, holds the run's
//! spans with their attributes and parentage; a collector that never answers
//! or is not there costs a run nothing.

use std::time::{Duration, Instant};

use crate::common::agents::*;
use crate::common::server::{Ending, MockServer, Reply};
use crate::common::*;
use ferrule::agent::{RunInput, RunStatus};
use ferrule::trace::TraceContext;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode, Span};
use prost::Message;
use serde_json::{json, Value};

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()).and_then(|v| v.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key) {
        Some(any_value::Value::StringValue(text)) => Some(text),
        _ => None,
    }
}

/// Every span the receiver got, once it got `count` (or thirty seconds passed).
fn exported(server: &MockServer, count: usize) -> (Vec<ExportTraceServiceRequest>, Vec<Span>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let requests: Vec<ExportTraceServiceRequest> = server
            .requests()
            .iter()
            .map(|r| ExportTraceServiceRequest::decode(r.body.as_slice()).expect("an OTLP protobuf body"))
            .collect();
        let spans: Vec<Span> = requests
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| s.spans.clone())
            .collect();
        if spans.len() >= count || Instant::now() > deadline {
            return (requests, spans);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn exporting(server: &MockServer, extra: Value) -> Value {
    let mut otlp = json!({"endpoint": format!("{}/v1/traces", server.url()), "service_name": "support-desk",
                          "headers": {"x-collector-key": "collector-secret-123"}});
    otlp.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"trace": {"otlp": otlp}})
}

#[test]
fn a_runs_spans_reach_the_collector_as_otlp_protobuf() {
    let server = MockServer::start((0..8).map(|_| Reply::json(200, b"")).collect());
    let researcher = agent(json!([{"text": "the facts"}]), json!({}), vec![]);
    let boss = with_agents(
        json!([{"tool_calls": [call("c1", "researcher", json!({"input": "find facts"})), call("c2", "lookup", json!({}))]},
               {"text": "done"}]),
        exporting(&server, json!({})),
        vec![echo("lookup")],
        vec![as_tool("researcher", &researcher)],
    );
    let mut input = RunInput::prompt("go");
    let host = TraceContext {
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
        tracestate: None,
    };
    input.trace_parent = Some(host.parent().unwrap());
    let (result, _) = run_input(&boss, input);
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    // 2 runs, 3 model requests, 2 calls.
    let (requests, spans) = exported(&server, 7);
    assert_eq!(spans.len(), 7, "{spans:#?}");
    let request = &server.requests()[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/traces"));
    assert_eq!(request.header("content-type"), Some("application/x-protobuf"));
    assert_eq!(request.header("x-collector-key"), Some("collector-secret-123"));
    let resource = requests[0].resource_spans[0].resource.as_ref().unwrap();
    assert_eq!(text(&resource.attributes, "service.name"), Some("support-desk"));
    assert_eq!(text(&resource.attributes, "service.instance.id").map(str::len), Some(32));
    let scope = &requests[0].resource_spans[0].scope_spans[0];
    assert_eq!(scope.scope.as_ref().map(|s| s.name.as_str()), Some("ferrule"));
    assert!(scope.schema_url.starts_with("https://opentelemetry.io/schemas/"));

    let by_operation = |operation: &str| -> Vec<&Span> {
        spans.iter().filter(|s| text(&s.attributes, "gen_ai.operation.name") == Some(operation)).collect()
    };
    let trace_id = hex_bytes("4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(spans.iter().all(|s| s.trace_id == trace_id), "one trace, the host's");
    let runs = by_operation("invoke_agent");
    let top = runs.iter().find(|r| r.parent_span_id == hex_bytes("00f067aa0ba902b7")).expect("the run under the host");
    let calls = by_operation("execute_tool");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.parent_span_id == top.span_id && c.kind == SpanKind::Internal as i32));
    let agent_call = calls.iter().find(|c| text(&c.attributes, "gen_ai.tool.name") == Some("researcher")).unwrap();
    let nested = runs.iter().find(|r| r.parent_span_id == agent_call.span_id).expect("the nested run under its call");
    assert_eq!(nested.name, "invoke_agent researcher");
    let chats = by_operation("chat");
    assert_eq!(chats.len(), 3);
    assert!(chats.iter().all(|c| c.kind == SpanKind::Client as i32));
    assert_eq!(chats.iter().filter(|c| c.parent_span_id == nested.span_id).count(), 1);
    assert!(matches!(attribute(&chats[0].attributes, "gen_ai.response.finish_reasons"),
        Some(any_value::Value::ArrayValue(reasons)) if !reasons.values.is_empty()));
    for span in &spans {
        assert_eq!(span.status.as_ref().map(|s| s.code), Some(StatusCode::Unset as i32), "{}", span.name);
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano && span.start_time_unix_nano > 0);
        assert!(text(&span.attributes, "gen_ai.input.messages").is_none(), "no content unless asked");
    }
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn a_collector_that_never_answers_or_is_not_there_costs_a_run_nothing() {
    // Holds every export open for an hour: a run that waited for one would
    // not end within the test.
    let silent = MockServer::start((0..4).map(|_| Reply::json(200, b"").ending(Ending::Silent)).collect());
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone_url = format!("http://{}/v1/traces", gone.local_addr().unwrap());
    drop(gone);
    for config in
        [exporting(&silent, json!({"timeout_ms": 3_600_000})), json!({"trace": {"otlp": {"endpoint": gone_url}}})]
    {
        let script: Vec<Value> = (0..5).map(|_| json!({"text": "ok"})).collect();
        let agent = agent(json!(script), config, vec![]);
        for _ in 0..5 {
            let (result, _) = run(&agent, "go");
            assert_eq!(result.status, RunStatus::Completed);
        }
    }
    let (_, spans) = exported(&silent, 1);
    assert!(!spans.is_empty(), "the runs ended while the collector held their export, unanswered");
}

#[test]
fn a_bad_otlp_configuration_is_refused_at_build() {
    for (otlp, why) in [
        (json!({"endpoint": "ftp://127.0.0.1/v1/traces"}), "trace.otlp.endpoint"),
        (json!({"endpoint": "http://127.0.0.1:4318/v1/traces", "headers": {"bad header": "x"}}), "trace.otlp.headers"),
        (json!({"endpoint": "http://127.0.0.1:4318/v1/traces", "batch": 1}), "batch"),
    ] {
        let config = json!({"model": {"provider": "scripted"}, "trace": {"otlp": otlp}});
        let Err(error) = ferrule::agent::AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build()) else {
            panic!("{otlp} was taken");
        };
        assert_eq!(error.code, ferrule::ErrorCode::InvalidArg, "{}", error.message);
        assert!(error.message.contains(why), "{}", error.message);
    }
}

#[test]
fn the_genai_client_metrics_reach_the_collector_when_the_agent_goes() {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;

    let server = MockServer::start((0..8).map(|_| Reply::json(200, b"")).collect());
    let script = json!([
        {"tool_calls": [call("c1", "lookup", json!({}))], "usage": {"input_tokens": 100, "output_tokens": 7}},
        {"text": "done", "usage": {"input_tokens": 120, "output_tokens": 3}}
    ]);
    let agent = agent(script, exporting(&server, json!({"metrics_interval_ms": 3_600_000})), vec![echo("lookup")]);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    drop(agent);
    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let found = server.requests().into_iter().find(|r| r.path == "/v1/metrics");
        if let Some(found) = found {
            break ExportMetricsServiceRequest::decode(found.body.as_slice()).expect("an OTLP metrics body");
        }
        assert!(Instant::now() < deadline, "no metrics export");
        std::thread::sleep(Duration::from_millis(20));
    };
    let scope = &metrics.resource_metrics[0].scope_metrics[0];
    let histogram = |name: &str| match scope.metrics.iter().find(|m| m.name == name).and_then(|m| m.data.clone()) {
        Some(Data::Histogram(histogram)) => histogram,
        other => panic!("{name}: {other:?}"),
    };
    let duration = histogram("gen_ai.client.operation.duration");
    assert_eq!(duration.data_points.iter().map(|p| p.count).sum::<u64>(), 2, "two model requests");
    let tokens = histogram("gen_ai.client.token.usage");
    let sum_of = |kind: &str| -> f64 {
        tokens
            .data_points
            .iter()
            .filter(|p| text(&p.attributes, "gen_ai.token.type") == Some(kind))
            .map(|p| p.sum.unwrap_or_default())
            .sum()
    };
    assert_eq!((sum_of("input"), sum_of("output")), (220.0, 10.0));
    let point = &tokens.data_points[0];
    assert_eq!(text(&point.attributes, "gen_ai.operation.name"), Some("chat"));
    assert_eq!(point.bucket_counts.len(), point.explicit_bounds.len() + 1);
}
