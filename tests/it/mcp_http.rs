//! MCP servers over streamable HTTP: `tests/mcp/http_server.py` (the `mcp`
//! 2.x Python SDK, both eras on one endpoint) on 127.0.0.1, reached from the
//! agent configuration's `url`.

use crate::common::mcp::{python, script, HttpServer};
use crate::common::*;
use ferrule::agent::{Agent, RunStatus};
use serde_json::{json, Value};

fn http_agent(script: Value, server: Value, extra: Value) -> Agent {
    let mut config = json!({"mcp_servers": {"web": server}});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    agent(script, config, vec![])
}

#[test]
fn a_stateless_http_server_lists_calls_streams_progress_and_announces_changes() {
    let server = HttpServer::start(&python(), &script("http_server.py"), &[]);
    let script = json!([
        {"tool_calls": [
            call("c1", "web__echo", json!({"text": "héllo wörld"})),
            call("c2", "web__count", json!({"to": 3})),
            call("c3", "web__grow", json!({"name": "sprout"})),
        ]},
        {"tool_calls": [call("c4", "web__sprout", json!({}))]},
        {"tool_calls": [call("c5", "web__seen_headers", json!({}))]},
        {"text": "done"}
    ]);
    let config = json!({"url": server.url, "headers": {"X-Team": "a"}});
    let (result, events) = run(&http_agent(script, config, json!({})), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    let report = of_type(&events, "mcp_server")[0];
    assert_eq!(
        (report["status"].as_str(), report["protocol_version"].as_str()),
        (Some("ready"), Some("2026-07-28")),
        "{report}"
    );
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert_eq!(texts[0], "héllo wörld");
    assert_eq!(texts[1], "counted to 3");
    assert_eq!(texts[3], "sprout", "the change announced on the subscription took effect at the next turn");
    let headers: Value = serde_json::from_str(&texts[4]).unwrap();
    assert_eq!(headers["x-team"], "a");
    assert_eq!(
        (headers["mcp-method"].as_str(), headers["mcp-name"].as_str()),
        (Some("tools/call"), Some("seen_headers"))
    );
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
    let updates: Vec<&str> = of_type(&events, "tool_execution_update")
        .iter()
        .filter(|u| u["call_id"] == "c2")
        .map(|u| u["partial"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(updates, ["step 1", "step 2", "step 3"], "progress streamed over the answer's event stream");
}

#[test]
fn json_answers_and_a_call_past_its_timeout_leave_the_server_usable() {
    let server = HttpServer::start(&python(), &script("http_server.py"), &["--json"]);
    let script = json!([
        {"tool_calls": [call("c1", "web__sleep", json!({"seconds": 30}))]},
        {"tool_calls": [call("c2", "web__echo", json!({"text": "after"}))]},
        {"text": "done"}
    ]);
    let config = json!({"url": server.url, "tool_timeout_ms": 300});
    let started = std::time::Instant::now();
    let (result, _) = run(&http_agent(script, config, json!({})), "go");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the call outlived its timeout");
    let results = tool_results(&result);
    assert_eq!(results[0]["is_error"], true);
    assert!(text(&results[0]).contains("timed out after 300 ms"), "{}", text(&results[0]));
    assert_eq!(text(&results[1]), "after");
}

#[test]
fn a_bearer_token_is_sent_and_never_repeated() {
    const TOKEN: &str = "tok-ferrule-http-9QxW2rT7vK3mZ8pL";
    let server = HttpServer::start(&python(), &script("http_server.py"), &["--token", TOKEN]);
    // SAFETY: no other test reads or writes these variables.
    unsafe {
        std::env::set_var("FERRULE_TEST_MCP_TOKEN", TOKEN);
        std::env::set_var("FERRULE_TEST_MCP_WRONG", "wrong-token-that-is-echoed-1234");
    }
    let script = json!([{"tool_calls": [call("c1", "web__echo", json!({"text": "in"}))]}, {"text": "done"}]);
    let good = json!({"url": server.url, "bearer_token_env": "FERRULE_TEST_MCP_TOKEN"});
    let (result, events) = run(&http_agent(script.clone(), good, json!({})), "go");
    assert_eq!(text(&tool_results(&result)[0]), "in");
    assert!(!serde_json::to_string(&events).unwrap().contains(TOKEN));

    let wrong = json!({"url": server.url, "bearer_token_env": "FERRULE_TEST_MCP_WRONG",
                       "headers": {"X-Api-Key": "header-secret-value-5678"}});
    let (result, events) = run(&http_agent(script.clone(), wrong, json!({})), "go");
    let report = of_type(&events, "mcp_server")[0];
    assert_eq!(report["status"], "unavailable");
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("401"), "{error}");
    let everything = format!("{}{:?}", serde_json::to_string(&events).unwrap(), result);
    assert!(!everything.contains("wrong-token-that-is-echoed"), "the server's echo of the token was repeated");
    assert!(!everything.contains("header-secret-value"), "a header value was repeated");

    let unset = json!({"url": server.url, "bearer_token_env": "FERRULE_TEST_MCP_UNSET"});
    let (_, events) = run(&http_agent(script, unset, json!({})), "go");
    let error = of_type(&events, "mcp_server")[0]["error"].as_str().unwrap().to_owned();
    assert!(error.contains("FERRULE_TEST_MCP_UNSET") && error.contains("not set"), "{error}");
}

#[test]
fn a_server_that_is_not_there_is_unavailable_at_once() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let script = json!([{"text": "done"}]);
    let (result, events) = run(&http_agent(script, json!({"url": url}), json!({})), "go");
    assert_eq!(result.status, RunStatus::Completed);
    let error = of_type(&events, "mcp_server")[0]["error"].as_str().unwrap().to_owned();
    assert!(error.contains("could not connect"), "{error}");
}

#[test]
fn a_server_that_goes_away_after_it_started_is_down_and_a_required_one_fails_the_run() {
    let server = HttpServer::start(&python(), &script("http_server.py"), &["--json"]);
    let script = json!([{"tool_calls": [call("c1", "web__echo", json!({"text": "x"}))]}, {"text": "done"}]);
    let agent = http_agent(script, json!({"url": server.url, "required": true}), json!({}));
    let (result, _) = run(&agent, "go");
    assert_eq!(text(&tool_results(&result)[0]), "x");
    drop(server);
    // The broken subscription, or the call, finds the server gone; the turn
    // after that cannot start it again.
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Failed, "the required server is gone");
    assert_eq!(result.error.as_ref().unwrap().code, ferrule::ErrorCode::McpUnavailable);
    assert_event_invariants(&events);
}

#[test]
fn credential_headers_the_server_echoes_are_never_repeated_and_plain_ones_stay() {
    let server = HttpServer::start(&python(), &script("http_server.py"), &[]);
    let script = json!([{"tool_calls": [call("c1", "web__seen_headers", json!({}))]}, {"text": "done"}]);
    let headers = json!({"X-Api-Key": "k3y-S3c", "X-Team": "team-alpha-value", "X-Tenant": "acme", "Cookie": "seen"});
    let (result, events) = run(&http_agent(script, json!({"url": server.url, "headers": headers}), json!({})), "go");
    let seen: Value = serde_json::from_str(&text(&tool_results(&result)[0])).expect("the headers, as JSON");
    assert_eq!(seen["x-api-key"], "[redacted]", "a credential's header, however short: {seen}");
    assert_eq!(seen["x-team"], "[redacted]", "a value long enough to be a key: {seen}");
    assert_eq!(seen["x-tenant"], "acme", "a plain value stays: {seen}");
    assert_eq!(seen["cookie"], "[redacted]", "the tool seen_headers was listed and called all the same: {seen}");
    let everything = format!("{}{:?}", serde_json::to_string(&events).unwrap(), result);
    for secret in ["k3y-S3c", "team-alpha-value"] {
        assert!(!everything.contains(secret), "{secret} reached an event or the result");
    }
}
