//! ferrule's MCP client against servers from the package registries, as
//! their users run them (pinned by `tests/mcp/node/package-lock.json` and
//! `tests/mcp/requirements.txt`, installed by `scripts/setup.sh`): the
//! reference "everything" server over stdio and over streamable HTTP (in a
//! network namespace of the test's own, where only `lo` exists: it listens
//! on every interface), the filesystem server on a scratch directory, and
//! the Python time and git servers.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::mcp::python;
use crate::common::*;
use ferrule::agent::{Agent, RunResult, RunStatus};
use serde_json::{json, Value};

/// The entry point of one of the registry's Node servers in `build/mcp-node`.
fn node_server(package: &str) -> String {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("build/mcp-node/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(entry.exists(), "{} is missing: run scripts/setup.sh (make test does)", entry.display());
    entry.display().to_string()
}

fn mcp_agent(script: Value, servers: Value) -> Agent {
    agent(script, json!({"mcp_servers": servers}), vec![])
}

/// Runs to the end and checks the run completed with its invariants.
fn completed(agent: &Agent) -> (std::sync::Arc<RunResult>, Vec<Value>) {
    let (result, events) = run(agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_event_invariants(&events);
    (result, events)
}

/// The everything server's calls: text, an image, structured content,
/// resource links, progress, and a call cancelled past its timeout.
fn everything_script() -> Value {
    json!([
        {"tool_calls": [
            call("c1", "ev__echo", json!({"message": "hello ferrule"})),
            call("c2", "ev__get-tiny-image", json!({})),
            call("c3", "ev__get-structured-content", json!({"location": "Chicago"})),
            call("c4", "ev__get-resource-links", json!({"count": 2})),
            call("c5", "ev__trigger-long-running-operation", json!({"duration": 2, "steps": 2})),
            call("c6", "ev__trigger-long-running-operation", json!({"duration": 30, "steps": 30})),
        ]},
        {"tool_calls": [call("c7", "ev__echo", json!({"message": "still here"}))]},
        {"text": "done"}
    ])
}

fn check_everything(result: &RunResult, events: &[Value]) {
    let report = of_type(events, "mcp_server")[0];
    assert_eq!(
        (report["status"].as_str(), report["protocol_version"].as_str()),
        (Some("ready"), Some("2025-11-25")),
        "{report}"
    );
    let results = tool_results(result);
    let texts: Vec<String> = results.iter().map(text).collect();
    assert_eq!(texts[0], "Echo: hello ferrule");
    let image = results[1]["content"].as_array().unwrap().iter().find(|p| p["type"] == "image").expect("an image part");
    assert_eq!(image["media_type"], "image/png");
    assert!(image["data"].as_str().unwrap().starts_with("iVBORw0KGgo"), "{image}");
    let ends = of_type(events, "tool_execution_end");
    let structured = ends.iter().find(|e| e["call_id"] == "c3").unwrap();
    assert!(structured["result"]["details"]["temperature"].is_number(), "{structured}");
    assert!(texts[3].contains("demo://resource/dynamic/") && texts[3].contains("Resource 2"), "{}", texts[3]);
    assert!(texts[4].contains("Long running operation completed"), "{}", texts[4]);
    let steps = of_type(events, "tool_execution_update").iter().filter(|u| u["call_id"] == "c5").count();
    assert_eq!(steps, 2, "one update per step");
    assert_eq!(results[5]["is_error"], true);
    assert!(texts[5].contains("timed out after 3000 ms"), "{}", texts[5]);
    assert_eq!(texts[6], "Echo: still here");
}

#[test]
fn the_everything_server_over_stdio() {
    let server =
        json!({"command": "node", "args": [node_server("server-everything"), "stdio"], "tool_timeout_ms": 3000});
    let started = Instant::now();
    let (result, events) = completed(&mcp_agent(everything_script(), json!({"ev": server})));
    assert!(started.elapsed() < Duration::from_secs(25), "the cancelled call was waited for");
    check_everything(&result, &events);
    // The server announces a list change after the handshake: nothing changed.
    assert_eq!(of_type(&events, "mcp_server").len(), 1);
}

/// The streamable HTTP check, run by [`the_everything_server_over_http`]
/// inside a network namespace of its own (the server binds every interface).
#[test]
#[ignore = "runs inside a network namespace, started by the_everything_server_over_http"]
fn everything_over_http_in_a_namespace() {
    assert!(std::env::var_os("FERRULE_IN_NETNS").is_some(), "run by the_everything_server_over_http");
    let mut child = Command::new("node")
        .args([node_server("server-everything"), "streamableHttp".into()])
        .env("PORT", "3001")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on port 3001") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server ended before it listened");
    }
    let server = json!({"url": "http://127.0.0.1:3001/mcp", "tool_timeout_ms": 3000});
    let (result, events) = completed(&mcp_agent(everything_script(), json!({"ev": server})));
    check_everything(&result, &events);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_everything_server_over_http() {
    let test = std::env::current_exe().unwrap();
    let inner = format!(
        "ip link set lo up && exec '{}' --exact mcp_registry::everything_over_http_in_a_namespace --include-ignored --test-threads 1",
        test.display()
    );
    let outcome =
        Command::new("unshare").args(["--net", "--", "sh", "-c", &inner]).env("FERRULE_IN_NETNS", "1").output();
    let outcome = outcome.expect("unshare runs (util-linux, as root or with user namespaces)");
    let output = String::from_utf8_lossy(&outcome.stdout);
    assert!(
        outcome.status.success() && output.contains("1 passed"),
        "{output}{}",
        String::from_utf8_lossy(&outcome.stderr)
    );
}

#[test]
fn the_filesystem_server_on_a_scratch_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let inside = root.join("notes.txt");
    let script = json!([
        {"tool_calls": [call("c1", "fs__write_file", json!({"path": inside, "content": "from ferrule\n"}))]},
        {"tool_calls": [
            call("c2", "fs__read_text_file", json!({"path": inside})),
            call("c3", "fs__list_directory", json!({"path": root})),
            call("c4", "fs__read_text_file", json!({"path": "/etc/hostname"})),
        ]},
        {"text": "done"}
    ]);
    let server = json!({"command": "node", "args": [node_server("server-filesystem"), root]});
    let (result, events) = completed(&mcp_agent(script, json!({"fs": server})));
    let report = of_type(&events, "mcp_server")[0];
    assert!(report["left_out"].as_array().unwrap().is_empty(), "every draft-07 schema compiled: {report}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "from ferrule\n", "the file is on the disk");
    let results = tool_results(&result);
    let texts: Vec<String> = results.iter().map(text).collect();
    assert_eq!(texts[1], "from ferrule\n");
    assert!(texts[2].contains("[FILE] notes.txt"), "{}", texts[2]);
    assert_eq!(results[3]["is_error"], true);
    assert!(texts[3].contains("Access denied"), "{}", texts[3]);
}

/// A scratch git repository with one commit and one changed file.
fn scratch_repository(dir: &Path) -> PathBuf {
    let git = |args: &[&str]| {
        let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"]);
    std::fs::write(dir.join("a.txt"), "two\n").unwrap();
    dir.to_path_buf()
}

#[test]
fn the_python_time_and_git_servers() {
    let dir = tempfile::tempdir().unwrap();
    let repository = scratch_repository(dir.path());
    let script = json!([
        {"tool_calls": [
            call("c1", "time__get_current_time", json!({"timezone": "UTC"})),
            call("c2", "git__git_status", json!({"repo_path": repository})),
            call("c3", "git__git_log", json!({"repo_path": repository})),
        ]},
        {"text": "done"}
    ]);
    let servers = json!({
        "time": {"command": python(), "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
        "git": {"command": python(), "args": ["-m", "mcp_server_git", "--repository", repository]},
    });
    let (result, events) = completed(&mcp_agent(script, servers));
    for report in of_type(&events, "mcp_server") {
        assert_eq!(
            (report["status"].as_str(), report["protocol_version"].as_str()),
            (Some("ready"), Some("2026-07-28")),
            "{report}"
        );
    }
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert!(texts[0].contains("UTC"), "{}", texts[0]);
    let ends = of_type(&events, "tool_execution_end");
    assert!(
        ends.iter().any(|e| e["call_id"] == "c1" && e["result"]["details"]["timezone"] == "UTC"),
        "structured time"
    );
    assert!(texts[1].contains("a.txt") && texts[1].contains("modified"), "{}", texts[1]);
    assert!(texts[2].contains("first"), "{}", texts[2]);
}
