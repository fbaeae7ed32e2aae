//! The MCP client against a real server over stdio (`tests/mcp/stdio_server.py`,
//! on the `mcp` 2.x Python SDK that `scripts/setup.sh` installs in
//! `build/mcp-python`; `FERRULE_MCP_PYTHON` names another interpreter).

use std::sync::Arc;
use std::time::Duration;

use crate::common::mcp::{python, script};
use ferrule::mcp::{McpClient, McpError, ServerLog, StdioCommand, StdioServer, Transport, MODERN_VERSION};
use serde_json::{json, Value};

/// Long enough for any answer on a loaded machine: a test that waits this
/// long has failed.
const PATIENCE: Duration = Duration::from_secs(60);

fn server_command() -> StdioCommand {
    StdioCommand { command: python(), args: vec![script("stdio_server.py")], ..StdioCommand::default() }
}

fn spawn(command: &StdioCommand, max_message_bytes: usize) -> StdioServer {
    StdioServer::spawn(command, max_message_bytes, Arc::new(ServerLog::default())).unwrap()
}

async fn client_of(server: &StdioServer, timeout: Duration) -> Result<McpClient, McpError> {
    McpClient::connect(server.connection().clone(), timeout, Transport::Stdio).await
}

async fn connect(max_message_bytes: usize) -> (StdioServer, McpClient) {
    let server = spawn(&server_command(), max_message_bytes);
    let client = client_of(&server, PATIENCE).await.unwrap();
    (server, client)
}

fn text_of(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

async fn until_gone(pid: i32, reaped: bool) -> bool {
    tokio::task::spawn_blocking(move || crate::common::mcp::until_gone(pid, reaped)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_lists_and_calls_its_tools() {
    let (server, client) = connect(1 << 20).await;
    // The server speaks both eras: the probe finds the stateless one.
    assert_eq!((client.protocol_version.as_str(), client.modern), (MODERN_VERSION, true));
    assert_eq!(client.server_info["name"], "ferrule-test-server");
    let listed = client.list_tools(PATIENCE).await.unwrap();
    assert!(listed.left_out.is_empty(), "{:?}", listed.left_out);
    let tools = listed.tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "fail", "count", "sleep", "shout", "spawn_stubborn", "environment", "die", "pid", "grow", "add"]
    );
    assert_eq!(tools[0].input_schema["required"], json!(["text"]));
    let echoed = client.call_tool("echo", json!({"text": "héllo"}), None, PATIENCE).await.unwrap();
    assert_eq!((text_of(&echoed).as_str(), echoed["isError"].as_bool()), ("héllo", Some(false)));
    let failed = client.call_tool("fail", json!({"reason": "no luck"}), None, PATIENCE).await.unwrap();
    assert_eq!(failed["isError"], true, "{failed}");
    assert!(text_of(&failed).contains("no luck"), "{failed}");
    let (updates, mut progress) = tokio::sync::mpsc::channel(16);
    let counted = client.call_tool("count", json!({"to": 3}), Some(updates), PATIENCE).await.unwrap();
    assert_eq!(text_of(&counted), "counted to 3");
    let mut seen = Vec::new();
    while let Ok(params) = progress.try_recv() {
        seen.push((params["progress"].as_f64(), params["message"].clone()));
    }
    let expected: Vec<(Option<f64>, Value)> =
        (1..=3).map(|step| (Some(step as f64), json!(format!("step {step}")))).collect();
    assert_eq!(seen, expected, "every progress notification came before the result");
    let unknown = client.call_tool("nonexistent", json!({}), None, PATIENCE).await;
    assert!(
        matches!(&unknown, Ok(result) if result["isError"] == true) || matches!(unknown, Err(McpError::Refused { .. }))
    );
    let pid = server.pid();
    server.stop(Duration::from_secs(5)).await;
    assert!(until_gone(pid, true).await, "the server outlived stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_in_flight_fails_at_once_when_the_server_dies() {
    let (server, client) = connect(1 << 20).await;
    let slow = client.call_tool("sleep", json!({"seconds": 600}), None, PATIENCE);
    let dying = client.call_tool("die", json!({}), None, PATIENCE);
    let (slow, dying) = tokio::join!(slow, dying);
    for outcome in [slow, dying] {
        match outcome {
            Err(McpError::Closed(why)) => assert!(why.contains("dying now"), "the reason has its stderr: {why}"),
            other => panic!("a call in flight was not failed at once: {other:?}"),
        }
    }
    let later = client.call_tool("echo", json!({"text": "x"}), None, PATIENCE).await;
    assert!(matches!(later, Err(McpError::Closed(_))), "{later:?}");
    server.stop(Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_cancelled_and_the_connection_goes_on() {
    let (server, client) = connect(1 << 20).await;
    let short = Duration::from_millis(200);
    let timed_out = client.call_tool("sleep", json!({"seconds": 2}), None, short).await;
    assert!(matches!(&timed_out, Err(McpError::TimedOut { method, .. }) if method == "tools/call"), "{timed_out:?}");
    let dropped = tokio::time::timeout(short, client.call_tool("sleep", json!({"seconds": 2}), None, PATIENCE)).await;
    assert!(dropped.is_err(), "the future was dropped unanswered");
    let echoed = client.call_tool("echo", json!({"text": "still here"}), None, PATIENCE).await.unwrap();
    assert_eq!(text_of(&echoed), "still here");
    server.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_floods_its_stderr_is_not_blocked() {
    let (server, client) = connect(1 << 20).await;
    let shouted = client.call_tool("shout", json!({"megabytes": 8}), None, PATIENCE).await.unwrap();
    assert_eq!(text_of(&shouted), "shouted");
    let tail = server.stderr_tail();
    assert!(!tail.is_empty() && tail.len() <= 64, "a bounded tail: {} lines", tail.len());
    let kept = |line: &String| line.len() <= 1024 + 20 && line.ends_with("... (2047 bytes)");
    assert!(tail.iter().all(kept), "a long line keeps its head: {:?}", tail.last().map(|l| &l[l.len() - 30..]));
    server.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_limit_fails_its_call_alone_without_being_read() {
    let (server, client) = connect(4096).await;
    let big = "y".repeat(64 * 1024);
    let outcome = client.call_tool("echo", json!({"text": big}), None, PATIENCE).await;
    match outcome {
        Err(McpError::Protocol(why)) => assert!(why.contains("over the limit of 4096"), "{why}"),
        other => panic!("an oversized answer was taken: {other:?}"),
    }
    let echoed = client.call_tool("echo", json!({"text": "small"}), None, PATIENCE).await.unwrap();
    assert_eq!(text_of(&echoed), "small", "the connection goes on");
    server.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_or_dropping_a_server_ends_everything_it_started() {
    let (server, client) = connect(1 << 20).await;
    let started = client.call_tool("spawn_stubborn", json!({}), None, PATIENCE).await.unwrap();
    let stubborn: i32 = text_of(&started).parse().unwrap();
    let pid = server.pid();
    server.stop(Duration::from_millis(200)).await;
    assert!(until_gone(pid, true).await && until_gone(stubborn, false).await, "the server's group outlived stop");

    let (server, client) = connect(1 << 20).await;
    let started = client.call_tool("spawn_stubborn", json!({}), None, PATIENCE).await.unwrap();
    let stubborn: i32 = text_of(&started).parse().unwrap();
    let pid = server.pid();
    drop(server);
    assert!(until_gone(pid, true).await && until_gone(stubborn, false).await, "the server's group outlived its drop");
    let after = client.call_tool("echo", json!({"text": "x"}), None, PATIENCE).await;
    assert!(matches!(after, Err(McpError::Closed(_))), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gets_a_minimal_environment_and_its_own_variables() {
    let mut command = server_command();
    command.env.insert("FERRULE_MCP_GIVEN".into(), "given".into());
    let server = spawn(&command, 1 << 20);
    let client = client_of(&server, PATIENCE).await.unwrap();
    let listed = client.call_tool("environment", json!({}), None, PATIENCE).await.unwrap();
    let names: Vec<String> = text_of(&listed).lines().map(str::to_owned).collect();
    assert!(names.contains(&"FERRULE_MCP_GIVEN".to_owned()) && names.contains(&"PATH".to_owned()), "{names:?}");
    let host_only: Vec<String> = std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| {
            !["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ"]
                .contains(&name.as_str())
        })
        .collect();
    let leaked: Vec<&String> = names.iter().filter(|name| host_only.contains(name)).collect();
    assert!(leaked.is_empty(), "the host's variables reached the server: {leaked:?}");
    server.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_reads_its_input_times_out_and_still_stops() {
    let command = StdioCommand {
        command: python(),
        args: vec!["-c".into(), "import time; time.sleep(120)".into()],
        ..StdioCommand::default()
    };
    let server = spawn(&command, 1 << 20);
    let short = Duration::from_millis(300);
    let silent = client_of(&server, short).await;
    assert!(matches!(silent, Err(McpError::TimedOut { .. })), "{:?}", silent.err());
    let big = json!({"text": "z".repeat(1 << 20)});
    for _ in 0..3 {
        let stuck = server.connection().request("tools/call", big.clone(), short).await;
        assert!(matches!(stuck, Err(McpError::TimedOut { .. })), "a write that cannot go on is bounded: {stuck:?}");
    }
    let pid = server.pid();
    let stopped = tokio::time::timeout(PATIENCE, server.stop(Duration::from_millis(100))).await;
    assert!(stopped.is_ok() && until_gone(pid, true).await, "stop waited on a blocked write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_fails_its_calls_even_while_a_child_holds_its_output() {
    let command = StdioCommand {
        command: "sh".into(),
        args: vec!["-c".into(), format!("sleep 120 & exec '{}' '{}'", python(), script("stdio_server.py"))],
        ..StdioCommand::default()
    };
    let server = spawn(&command, 1 << 20);
    let client = client_of(&server, PATIENCE).await.unwrap();
    let dying = client.call_tool("die", json!({}), None, PATIENCE).await;
    match dying {
        // The exit kills what is left of the group, so the output ends too:
        // whichever says so first, the reason has the server's last words.
        Err(McpError::Closed(why)) => assert!(why.contains("dying now"), "{why}"),
        other => panic!("the call waited for the output held by a child: {other:?}"),
    }
    server.stop(Duration::from_millis(100)).await;
}
