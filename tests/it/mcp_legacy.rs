//! MCP servers that speak only the `initialize` handshake: the `mcp` 1.x
//! Python SDK's (`tests/mcp/legacy_server.py`), over stdio and over
//! streamable HTTP with and without sessions.

use crate::common::mcp::{python_1, script, HttpServer};
use crate::common::*;
use ferrule::agent::RunStatus;
use serde_json::{json, Value};

/// Runs `script` against the server `config`; checks the era and returns
/// the tool results' texts and the events.
fn run_against(config: Value, script: Value) -> (Vec<String>, Vec<Value>) {
    let agent = agent(script, json!({"mcp_servers": {"old": config}}), vec![]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    let report = of_type(&events, "mcp_server")[0];
    assert_eq!(
        (report["status"].as_str(), report["protocol_version"].as_str()),
        (Some("ready"), Some("2025-11-25")),
        "{report}"
    );
    (tool_results(&result).iter().map(text).collect(), events)
}

/// Calls, progress, a call given up, and a list change, in three turns.
fn exercise() -> Value {
    json!([
        {"tool_calls": [
            call("c1", "old__echo", json!({"text": "héllo"})),
            call("c2", "old__count", json!({"to": 2})),
            call("c3", "old__sleep", json!({"seconds": 30})),
        ]},
        {"tool_calls": [call("c4", "old__grow", json!({"name": "sprout"}))]},
        {"tool_calls": [call("c5", "old__sprout", json!({}))]},
        {"text": "done"}
    ])
}

fn check_exercise(texts: &[String], events: &[Value]) {
    assert_eq!(texts[0], "héllo");
    assert_eq!(texts[1], "counted to 2");
    assert!(texts[2].contains("timed out after 500 ms"), "{}", texts[2]);
    assert_eq!(texts[3], "grew sprout");
    assert_eq!(texts[4], "sprout", "the list change took effect at the next turn");
    let updates: Vec<&str> = of_type(events, "tool_execution_update")
        .iter()
        .filter(|u| u["call_id"] == "c2")
        .map(|u| u["partial"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(updates, ["step 1", "step 2"]);
}

#[test]
fn a_handshake_era_server_over_stdio() {
    let config = json!({"command": python_1(), "args": [script("legacy_server.py")], "tool_timeout_ms": 500});
    let (texts, events) = run_against(config, exercise());
    check_exercise(&texts, &events);
    let logged: String = of_type(&events, "mcp_server_log").iter().map(|l| l["lines"].to_string()).collect();
    assert!(logged.contains("sleep was cancelled"), "the call given up was cancelled at the server: {logged}");
}

#[test]
fn a_handshake_era_server_over_http_with_sessions() {
    let server = HttpServer::start(&python_1(), &script("legacy_server.py"), &["--http"]);
    let (texts, events) = run_against(json!({"url": server.url, "tool_timeout_ms": 500}), exercise());
    check_exercise(&texts, &events);
}

#[test]
fn a_handshake_era_server_over_http_without_sessions() {
    let server = HttpServer::start(&python_1(), &script("legacy_server.py"), &["--http", "--stateless"]);
    let script = json!([
        {"tool_calls": [call("c1", "old__echo", json!({"text": "héllo"})), call("c2", "old__count", json!({"to": 2}))]},
        {"text": "done"}
    ]);
    let (texts, _) = run_against(json!({"url": server.url}), script);
    assert_eq!(texts, ["héllo", "counted to 2"]);
}
