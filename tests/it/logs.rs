//! The host's logger: what ferrule has to say outside a run's events reaches
//! it (retries, dropped tool calls, MCP servers' stderr), on ferrule's logger
//! thread, filtered by level, with no secret in it. The logger is the
//! process's, so these tests take turns and pick their own records out.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::common::mcp::{python, script};
use crate::common::server::{MockServer, Reply};
use crate::common::wire;
use crate::common::*;
use ferrule::agent::RunStatus;
use ferrule::log::{LogLevel, LogRecord};
use serde_json::{json, Value};

/// One logger at a time.
static TURN: Mutex<()> = Mutex::new(());

/// The records a logger received, with the thread each came on.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(LogRecord, String)>>>);

impl Received {
    /// Sets a logger at `level` that keeps what it receives; the turn is held
    /// until the guard goes.
    fn set(level: LogLevel) -> (Received, MutexGuard<'static, ()>) {
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let received = Received::default();
        let kept = received.clone();
        ferrule::log::set_logger(level, move |record| {
            let thread = std::thread::current().name().unwrap_or_default().to_owned();
            kept.0.lock().unwrap().push((record, thread));
        })
        .unwrap();
        (received, turn)
    }

    /// The records that `pick` picks, once there are `count` of them (or the
    /// patience ran out).
    fn wait_for(&self, count: usize, pick: impl Fn(&LogRecord) -> bool) -> Vec<(LogRecord, String)> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let picked: Vec<_> = self.0.lock().unwrap().iter().filter(|(r, _)| pick(r)).cloned().collect();
            if picked.len() >= count || Instant::now() > deadline {
                return picked;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn field<'a>(record: &'a LogRecord, key: &str) -> &'a Value {
    record.fields.get(key).unwrap_or(&Value::Null)
}

/// A run whose first request is refused (503) and whose answer carries one
/// good call and two broken ones (no id; an id used before).
fn retried_run_with_broken_calls() -> (Arc<ferrule::agent::RunResult>, Vec<Value>) {
    let calls = [("c1", "logs_echo", "{}"), ("", "logs_without_id", "{}"), ("c1", "logs_twice", "{}")];
    let server = MockServer::start(vec![
        Reply::json(503, br#"{"error": {"message": "busy"}}"#),
        Reply::sse(&wire::chat("", &calls)),
        Reply::sse(&wire::chat("done", &[])),
    ]);
    let model = json!({"max_retries": 1, "retry_backoff_ms": 1});
    let agent = provider_agent("openai", &format!("{}/v1", server.url()), model, json!({}), vec![echo("logs_echo")]);
    run(&agent, "go")
}

#[test]
fn retries_and_dropped_calls_reach_the_logger_on_its_thread() {
    let (received, _turn) = Received::set(LogLevel::Warn);
    let (result, events) = retried_run_with_broken_calls();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    let retries = received.wait_for(1, |r| field(r, "run_id") == run_id.as_str());
    assert_eq!(retries.len(), 1, "{retries:?}");
    let (retry, thread) = &retries[0];
    assert_eq!(
        (retry.level, retry.target.as_str(), thread.as_str()),
        (LogLevel::Warn, "ferrule::provider", "ferrule-log")
    );
    let announced = &of_type(&events, "retry")[0];
    assert_eq!(field(retry, "attempt"), &announced["attempt"]);
    assert_eq!(field(retry, "code"), &announced["error"]["code"]);
    assert_eq!(field(retry, "turn"), 1);
    assert!(retry.message.contains("tried again") && retry.message.contains("busy"), "{}", retry.message);
    assert!(retry.time_unix_nano > 0);
    let dropped = received.wait_for(2, |r| matches!(field(r, "tool").as_str(), Some("logs_without_id" | "logs_twice")));
    let why: Vec<&str> = dropped.iter().map(|(r, _)| r.message.as_str()).collect();
    assert_eq!(
        why,
        [
            "a tool call of the model's response was dropped: it has no id",
            "a tool call of the model's response was dropped: its id is an earlier call's"
        ]
    );
    assert_eq!(tool_results(&result).len(), 1, "the model's one good call ran");
}

#[test]
fn records_below_the_level_are_not_made() {
    let (received, _turn) = Received::set(LogLevel::Error);
    let (_, events) = retried_run_with_broken_calls();
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    // A record of the run would have come long before the run ended.
    std::thread::sleep(Duration::from_millis(100));
    let all = received.wait_for(0, |_| true);
    assert!(all.iter().all(|(r, _)| r.level == LogLevel::Error), "{all:?}");
    assert!(all.iter().all(|(r, _)| field(r, "run_id") != run_id.as_str()), "{all:?}");
    ferrule::log::remove_logger();
    let (result, _) = retried_run_with_broken_calls();
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(received.wait_for(0, |_| true).len(), all.len(), "no logger, no records");
}

#[test]
fn an_mcp_servers_stderr_reaches_the_logger_without_its_secrets() {
    let (received, _turn) = Received::set(LogLevel::Info);
    let secret = "tok-9f8e7d6c5b4a3210";
    let server = json!({"command": python(), "args": [script("stdio_server.py")],
                        "env": {"FERRULE_TEST_GREETING": format!("hello, my token is {secret}"), "TOKEN": secret}});
    let agent = agent(json!([{"text": "done"}]), json!({"mcp_servers": {"logs_server": server}}), vec![]);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let from_server = |r: &LogRecord| field(r, "server") == "logs_server";
    let records = received.wait_for(2, from_server);
    let said: Vec<(LogLevel, &str, &Value)> =
        records.iter().map(|(r, _)| (r.level, r.message.as_str(), field(r, "stream"))).collect();
    assert!(said.contains(&(LogLevel::Info, "hello, my token is [redacted]", &json!("stderr"))), "{said:?}");
    assert!(said
        .iter()
        .any(|(level, message, _)| *level == LogLevel::Info && message.starts_with("the server is ready")));
    assert!(records.iter().all(|(r, _)| r.target == "ferrule::mcp"));
    let everything = serde_json::to_string(&received.wait_for(0, |_| true).iter().map(|(r, _)| r).collect::<Vec<_>>());
    assert!(!everything.unwrap().contains(secret), "no record holds the server's secret");
    drop(agent);
}
