//! MCP servers in the agent configuration: their tools offered and called in
//! runs on the scripted model, their state told in events, their faults
//! bounded, and their processes gone with the agent. The server is
//! `tests/mcp/stdio_server.py` (the `mcp` 2.x Python SDK, both eras).

use crate::common::mcp::{python, script, until_gone};
use crate::common::*;
use ferrule::agent::{Agent, RunStatus};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// The test server as a configured MCP server, with `extra` fields.
fn server(extra: Value) -> Value {
    let mut config = json!({"command": python(), "args": [script("stdio_server.py")]});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    config
}

fn mcp_agent(script: Value, servers: Value) -> Agent {
    agent(script, json!({"mcp_servers": servers}), vec![echo("lookup")])
}

/// The pid the server's `pid` tool gave in a run's transcript.
fn server_pid(result: &ferrule::agent::RunResult) -> i32 {
    let results = tool_results(result);
    let pid = results.iter().map(text).find_map(|t| t.parse().ok());
    pid.expect("a pid in the results")
}

#[test]
fn the_models_calls_reach_the_servers_tools_with_their_progress() {
    let script = json!([
        {"tool_calls": [call("c1", "py__echo", json!({"text": "héllo"})), call("c2", "py__count", json!({"to": 3}))]},
        {"tool_calls": [call("c3", "py__add", json!({"a": 2, "b": 3})), call("c4", "lookup", json!({}))]},
        {"text": "done"}
    ]);
    let agent = mcp_agent(script, json!({"py": server(json!({}))}));
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    let kinds = types(&events);
    // The server is reported in the first turn, before its model request.
    let reported = kinds.iter().position(|k| k == "mcp_server").expect("an mcp_server event");
    let first_delta = kinds.iter().position(|k| k == "message_end").unwrap();
    assert!(kinds[1] == "turn_start" && reported < first_delta, "{kinds:?}");
    let servers = of_type(&events, "mcp_server");
    assert_eq!(servers.len(), 1, "told once: nothing changed after");
    let server = servers[0];
    assert_eq!((server["server"].as_str(), server["status"].as_str()), (Some("py"), Some("ready")));
    assert_eq!(server["protocol_version"], "2026-07-28");
    let offered: Vec<&str> = server["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(offered.contains(&"py__echo") && offered.contains(&"py__count"), "{offered:?}");
    assert_eq!(server["added"], server["tools"]);
    let logged: String = of_type(&events, "mcp_server_log").iter().map(|l| l["lines"].to_string()).collect();
    assert!(!logged.contains("no request in flight"), "the handshake given up is no news: {logged}");
    let results: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert_eq!(results[..2], ["héllo".to_owned(), "counted to 3".to_owned()]);
    assert!(results[2].contains("\"sum\"") && results[2].contains('5'), "{results:?}");
    let ends = of_type(&events, "tool_execution_end");
    let add = ends.iter().find(|e| e["call_id"] == "c3").unwrap();
    assert_eq!(add["result"]["details"], json!({"sum": 5}), "structured content is the details");
    let updates: Vec<String> = of_type(&events, "tool_execution_update")
        .iter()
        .filter(|u| u["call_id"] == "c2")
        .map(|u| u["partial"]["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(updates, ["step 1", "step 2", "step 3"]);
}

#[test]
fn selection_approval_and_names_follow_the_configuration() {
    let servers = json!({
        "py": server(json!({"allowed_tools": ["echo", "add", "missing"], "excluded_tools": ["add", "gone"],
                           "needs_approval": ["echo"]})),
        "raw": server(json!({"prefix": false, "allowed_tools": ["echo", "pid"]})),
    });
    let script = json!([{"tool_calls": [call("c1", "py__echo", json!({"text": "x"}))]}, {"text": "done"}]);
    let agent = agent(script, json!({"mcp_servers": servers}), vec![echo("pid")]);
    let (result, events) = run(&agent, "go");
    let reports = of_type(&events, "mcp_server");
    let py = reports.iter().find(|r| r["server"] == "py").unwrap();
    assert_eq!(py["tools"], json!(["py__echo"]));
    assert_eq!(py["left_out"][0]["name"], "missing");
    assert!(py["left_out"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("allowed_tools names it, but the server has no such tool"));
    assert_eq!(py["left_out"][1]["name"], "gone");
    assert!(py["left_out"][1]["reason"].as_str().unwrap().contains("excluded_tools names it"));
    let raw = reports.iter().find(|r| r["server"] == "raw").unwrap();
    assert_eq!(raw["tools"], json!(["echo"]), "unprefixed");
    let taken = raw["left_out"].as_array().unwrap().iter().find(|l| l["name"] == "pid").expect("pid left out");
    assert!(taken["reason"].as_str().unwrap().contains("the agent's own tool"), "{taken}");
    // needs_approval: the call waits for the host.
    assert_eq!(result.status, RunStatus::Interrupted);
    assert_eq!(result.interruptions[0].name, "py__echo");
}

#[test]
fn a_server_that_cannot_start_is_absent_or_fails_the_run_when_required() {
    let broken = json!({"command": "/nonexistent/ferrule-mcp-server"});
    let script = json!([{"tool_calls": [call("c1", "gone__x", json!({}))]}, {"text": "done"}]);
    let (result, events) = run(&mcp_agent(script.clone(), json!({"gone": broken})), "go");
    assert_eq!(result.status, RunStatus::Completed);
    let report = of_type(&events, "mcp_server")[0];
    assert_eq!(report["status"], "unavailable");
    assert!(report["error"].as_str().unwrap().contains("/nonexistent/ferrule-mcp-server"), "{report}");
    assert!(text(&tool_results(&result)[0]).contains("Unknown tool \"gone__x\""));

    let mut required = broken.clone();
    required["required"] = json!(true);
    let (result, events) = run(&mcp_agent(script, json!({"gone": required})), "go");
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::McpUnavailable);
    assert!(error.message.contains("\"gone\" is required"), "{}", error.message);
    assert_event_invariants(&events);
}

#[test]
fn a_server_that_never_answers_is_bounded_by_its_startup_timeout() {
    let mut silent = hostile(&["--silent"]);
    silent["startup_timeout_ms"] = json!(500);
    silent["required"] = json!(true);
    let script = json!([{"text": "never"}]);
    let started = std::time::Instant::now();
    let (result, events) = run(&mcp_agent(script, json!({"silent": silent})), "go");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "waited past the startup timeout");
    assert_eq!(result.error.as_ref().unwrap().code, ErrorCode::McpUnavailable);
    let report = of_type(&events, "mcp_server")[0];
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("startup timeout of 500 ms") && error.contains("silent here"), "{error}");
    let logged = of_type(&events, "mcp_server_log");
    assert!(logged.iter().any(|l| l["lines"].to_string().contains("silent here")), "{logged:?}");
}

#[test]
fn a_server_that_dies_mid_call_fails_the_call_and_is_started_again_at_the_next_turn() {
    let script = json!([
        {"tool_calls": [call("c1", "py__pid", json!({}))]},
        {"tool_calls": [call("c2", "py__die", json!({})), call("c3", "py__sleep", json!({"seconds": 600}))]},
        {"tool_calls": [call("c4", "py__pid", json!({}))]},
        {"text": "done"}
    ]);
    let agent = mcp_agent(script, json!({"py": server(json!({}))}));
    let started = std::time::Instant::now();
    let (result, events) = run(&agent, "go");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "a call waited for its timeout");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let results = tool_results(&result);
    let first_pid: i32 = text(&results[0]).parse().unwrap();
    for dead in &results[1..3] {
        assert_eq!(dead["is_error"], true, "{dead}");
        assert!(text(dead).contains("went away") && text(dead).contains("dying now"), "{}", text(dead));
    }
    let second_pid: i32 = text(&results[3]).parse().unwrap();
    assert_ne!(first_pid, second_pid, "a new process");
    let reports = of_type(&events, "mcp_server");
    assert_eq!(reports.last().unwrap()["restarts"], 1, "{reports:?}");
    assert_eq!(reports.last().unwrap()["status"], "ready");
    assert!(until_gone(first_pid, false));
    drop(agent);
    drop(result);
    assert!(until_gone(second_pid, false), "the server outlived its agent");
}

#[test]
fn a_list_change_takes_effect_at_the_next_turn() {
    let script = json!([
        {"tool_calls": [call("c1", "py__grow", json!({"name": "sprout"}))]},
        {"tool_calls": [call("c2", "py__sprout", json!({}))]},
        {"text": "done"}
    ]);
    let agent = mcp_agent(script, json!({"py": server(json!({}))}));
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let results: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert_eq!(results, ["grew sprout", "sprout"]);
    let reports = of_type(&events, "mcp_server");
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert_eq!(reports[1]["added"], json!(["py__sprout"]));
    assert_eq!(reports[1]["removed"], json!([]));
}

/// The hand-written server that breaks the protocol on request, as a
/// configured MCP server.
fn hostile(extra: &[&str]) -> Value {
    let mut args = vec![script("hostile_server.py")];
    args.extend(extra.iter().map(|a| a.to_string()));
    json!({"command": python(), "args": args})
}

#[test]
fn a_hostile_server_gets_a_bounded_outcome_for_each_fault_and_loses_nothing_else() {
    let script = json!([
        {"tool_calls": [
            call("c1", "bad__garbage", json!({})),
            call("c2", "bad__late_progress", json!({})),
            call("c3", "bad__storm", json!({})),
            call("c4", "bad__picture", json!({})),
            call("c5", "bad__mismatch", json!({})),
            call("c6", "bad__huge", json!({"megabytes": 50})),
        ]},
        {"tool_calls": [call("c7", "bad__echo", json!({"text": "still here"}))]},
        {"text": "done"}
    ]);
    let extra = json!({"mcp_servers": {"bad": hostile(&[])}, "max_tool_result_bytes": 100_000});
    let (result, events) = run(&agent(script, extra, vec![]), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    let report = of_type(&events, "mcp_server")[0];
    // The handshake era, found after the probe was refused; every page listed.
    assert_eq!(report["protocol_version"], "2025-11-25");
    assert_eq!(report["tools"].as_array().unwrap().len(), 11, "{report}");
    let broken = &report["left_out"][0];
    assert_eq!(broken["name"], "broken_schema");
    assert!(broken["reason"].as_str().unwrap().contains("https://example.com/x"), "{broken}");
    let results = tool_results(&result);
    let texts: Vec<String> = results.iter().map(text).collect();
    assert_eq!(texts[..3], ["survived".to_owned(), "early".to_owned(), "calm".to_owned()]);
    let picture = &results[3]["content"];
    assert_eq!(picture[0]["type"], "image");
    assert!(picture[1]["text"].as_str().unwrap().contains("audio"), "{picture}");
    assert_eq!((picture[2]["type"].as_str(), picture[2]["name"].as_str()), (Some("file"), Some("report.pdf")));
    assert_eq!(results[4]["is_error"], true);
    assert!(texts[4].contains("does not match its output schema"), "{}", texts[4]);
    assert_eq!(results[5]["is_error"], true);
    assert!(texts[5].contains("over the limit"), "{}", texts[5]);
    assert_eq!(texts[6], "still here", "the connection survived it all");
    let updates = of_type(&events, "tool_execution_update");
    assert!(updates.iter().all(|u| u["call_id"] != "c2"), "progress after its result was passed on");
    let notes: String = of_type(&events, "mcp_server_log").iter().map(|l| l["lines"].to_string()).collect();
    assert!(notes.contains("ferrule: a line that is no JSON-RPC message"), "{notes}");
    assert!(notes.contains("an answer to no request in flight (id 987654)"), "{notes}");
    let reports = of_type(&events, "mcp_server");
    assert_eq!(reports.len(), 1, "a storm of list changes that changed nothing is not a change");
}

#[test]
fn what_a_server_says_is_bounded_before_it_is_kept_or_repeated() {
    let script = json!([
        {"tool_calls": [call("c1", "bad__big_ids", json!({})), call("c2", "bad__huge_method", json!({})),
                        call("c3", "bad__echo", json!({"text": "beside"}))]},
        {"tool_calls": [call("c4", "bad__echo", json!({"text": "after"}))]},
        {"text": "done"}
    ]);
    let extra = json!({"mcp_servers": {"bad": hostile(&[])}, "max_tool_result_bytes": 100_000});
    let (result, events) = run(&agent(script, extra, vec![]), "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let logged = of_type(&events, "mcp_server_log");
    let size: usize = logged.iter().map(|l| l.to_string().len()).sum();
    assert!(size < 128 << 10, "the log events hold {size} bytes");
    assert!(logged.iter().any(|l| l["lines"].to_string().contains("no request in flight")), "{logged:?}");
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert!(texts[1].contains("over the limit"), "the oversized answer failed its call: {}", texts[1]);
    assert_eq!(texts[2..], ["beside".to_owned(), "after".to_owned()], "and nothing else");
    let reports = of_type(&events, "mcp_server");
    assert_eq!(reports.len(), 1, "the server was not started again: {reports:?}");
}

#[test]
fn a_list_past_its_bounds_is_offered_up_to_them_with_the_rest_left_out() {
    for (flag, wanted, rest) in [
        ("--crowded", "c3000", "more tools and the pages after them were left out"),
        ("--endless", "e90", "goes on past 100 pages"),
    ] {
        let mut server = hostile(&[flag]);
        server["allowed_tools"] = json!(["echo", wanted, "n".repeat(200)]);
        let extra = json!({"mcp_servers": {"bad": server}});
        let (result, events) = run(&agent(json!([{"text": "done"}]), extra, vec![]), "go");
        assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
        let report = &of_type(&events, "mcp_server")[0];
        assert_eq!(report["tools"], json!(["bad__echo", format!("bad__{wanted}")]), "{flag}: {}", report["error"]);
        let left_out = report["left_out"].as_array().unwrap();
        assert!(left_out.iter().any(|l| l["reason"].as_str().unwrap().contains(rest)), "{flag}: {left_out:?}");
        if flag == "--crowded" {
            let long = left_out.iter().find(|l| l["name"].as_str().unwrap().starts_with("nnn")).expect("the long name");
            assert!(long["reason"].as_str().unwrap().contains("longer than 128 bytes"), "{long}");
            assert!(long["name"].as_str().unwrap().len() < 200, "the name is cut in the event: {long}");
        }
    }
}

#[test]
fn a_listing_that_never_ends_holds_up_no_turn_past_its_bound_nor_the_servers_stop() {
    let script = json!([
        {"tool_calls": [call("c1", "bad__pid", json!({})), call("c2", "bad__hang_list", json!({}))]},
        {"tool_calls": [call("c3", "bad__echo", json!({"text": "on"}))]},
        {"tool_calls": [call("c4", "bad__echo", json!({"text": "and on"}))]},
        {"text": "done"}
    ]);
    let mut server = hostile(&[]);
    server["startup_timeout_ms"] = json!(1000);
    let agent = agent(script, json!({"mcp_servers": {"bad": server}}), vec![]);
    let started = std::time::Instant::now();
    let (result, _) = run(&agent, "go");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "a turn waited on the listing");
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert_eq!(texts[2..], ["on".to_owned(), "and on".to_owned()]);
    let pid: i32 = texts[0].parse().unwrap();
    drop((agent, result));
    assert!(until_gone(pid, false), "the server outlived its agent while a listing hung");
}

#[test]
fn a_name_two_servers_give_their_tools_is_offered_by_neither() {
    let mut one = hostile(&[]);
    one["prefix"] = json!(false);
    let two = one.clone();
    let script = json!([{"tool_calls": [call("c1", "echo", json!({"text": "whose?"}))]}, {"text": "done"}]);
    let (result, events) = run(&agent(script, json!({"mcp_servers": {"one": one, "two": two}}), vec![]), "go");
    for report in of_type(&events, "mcp_server") {
        assert_eq!(report["tools"], json!([]), "{report}");
        let echo = report["left_out"].as_array().unwrap().iter().find(|l| l["name"] == "echo").unwrap();
        assert!(echo["reason"].as_str().unwrap().contains("also that of a tool of the server"), "{echo}");
    }
    assert!(text(&tool_results(&result)[0]).contains("Unknown tool \"echo\""));
}

#[test]
fn the_servers_go_with_the_last_handle_of_their_agent() {
    let script = json!([{"tool_calls": [call("c1", "py__pid", json!({})), call("c2", "py__spawn_stubborn", json!({}))]}, {"text": "done"}]);
    let agent = mcp_agent(script, json!({"py": server(json!({}))}));
    let clone = agent.clone();
    let (result, _) = run(&agent, "go");
    let pid = server_pid(&result);
    let stubborn: i32 = text(&tool_results(&result)[1]).parse().unwrap();
    drop(agent);
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!crate::common::mcp::gone(pid, false), "a clone still holds the server");
    drop(clone);
    assert!(until_gone(pid, false) && until_gone(stubborn, false), "the server's group outlived its agent");
}

#[test]
fn an_agent_gone_while_its_server_starts_stops_it_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("goodbye");
    let says = |what: &str| {
        let patience = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::time::Instant::now() < patience {
            if std::fs::read_to_string(&marker).is_ok_and(|said| said == what) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    };
    let server = hostile(&["--silent", "--goodbye", marker.to_str().unwrap()]);
    let agent = agent(json!([{"text": "done"}]), json!({"mcp_servers": {"bad": server}}), vec![]);
    assert!(says("started"), "the server started");
    drop(agent);
    assert!(says("stdin closed"), "the server that never answered its handshake saw its input end, not a SIGKILL");
}

#[test]
fn bad_server_configurations_are_refused_at_build() {
    for (servers, named) in [
        (json!({"s": {"command": "x", "url": "http://127.0.0.1:1/mcp"}}), "mcp_servers.s.url"),
        (json!({"s": {}}), "mcp_servers.s.command"),
        (json!({"a__b": {"command": "x"}}), "__"),
        (json!({"s": {"command": "x", "startup_timeout": 1}}), "startup_timeout"),
    ] {
        let config = json!({"model": {"provider": "scripted"}, "mcp_servers": servers});
        let error = ferrule::agent::AgentBuilder::from_json(&config.to_string()).err().expect("refused");
        assert_eq!(error.code, ErrorCode::InvalidArg, "{servers}");
        assert!(error.message.contains(named), "{servers}: {}", error.message);
    }
}

#[test]
fn a_tool_choice_no_server_could_offer_is_refused_at_build() {
    let build = |servers: Value, choice: &str| {
        let config =
            json!({"model": {"provider": "scripted"}, "mcp_servers": servers, "tool_choice": {"name": choice}});
        let built = ferrule::agent::AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build());
        built.map(drop).map_err(|error| (error.code, error.message))
    };
    let files = json!({"files": {"command": "true"}});
    let refused = build(files.clone(), "fles__read").expect_err("a typo in the server's name");
    assert_eq!(refused.0, ErrorCode::InvalidArg);
    assert!(refused.1.contains("fles__read"), "{}", refused.1);
    assert!(build(files, "files__read").is_ok(), "a name the server's tools may have");
    assert!(build(json!({"files": {"command": "true", "prefix": false}}), "read").is_ok(), "unprefixed");
}
