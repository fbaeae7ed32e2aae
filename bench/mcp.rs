//! MCP: one call of a server's echo tool, over stdio (`ferrule-mcp-test-server`,
//! built with the judge) and over streamable HTTP (`tests/mcp/http_server.py`,
//! the Python SDK's server on 127.0.0.1), measured two ways:
//!
//! - **client**: ferrule's MCP client alone (`McpClient::call_tool`), one call
//!   after another, and 64 at once (`join_all`), as `bench/mcp/peer.py`
//!   measures the OpenAI Agents SDK's client against the same servers;
//! - **in a run**: an agent whose scripted model calls the tool once per round,
//!   and 64 times per round (W2's fan-out), the whole loop included.
//!
//! The server is another process, so the CPU time read here (the process CPU
//! clock) is the client's alone. Printed per call: wall time and client CPU,
//! medians of 5 repeats. Run with `make bench-mcp`; nothing is asserted.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrule::agent::{AgentBuilder, Event, EventKind, RunInput, RunStatus};
use ferrule::mcp::{HttpLink, McpClient, McpServerConfig, Rpc, ServerLog, StdioCommand, StdioServer, Transport};
use serde_json::{json, Value};

const CALLS: usize = 2000;
const FAN_OUT: usize = 64;
const FAN_ROUNDS: usize = 30;
const REPEATS: usize = 5;
const PATIENCE: Duration = Duration::from_secs(60);

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let stdio_server = root.join("target/release/ferrule-mcp-test-server");
    assert!(stdio_server.exists(), "build the judge first (make judge)");
    let python = root.join("build/mcp-python/bin/python");
    let http = HttpServer::start(&python, &root.join("tests/mcp/http_server.py"));
    let stdio_config = json!({"command": stdio_server});
    let http_config = json!({"url": http.url});
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!("MCP: one echo call per step; per call: wall time and the client's CPU (medians of {REPEATS})");
    for (transport, config) in [("stdio", &stdio_config), ("http", &http_config)] {
        let (sequential, fanned) = runtime.block_on(client(config));
        report(&format!("{transport} client, one at a time"), sequential);
        report(&format!("{transport} client, {FAN_OUT} at once"), fanned);
        report(&format!("{transport} in a run, one per round"), in_a_run(config, 1, CALLS / 4));
        report(&format!("{transport} in a run, {FAN_OUT} per round"), in_a_run(config, FAN_OUT, FAN_ROUNDS));
    }
}

/// Wall time and client CPU per call.
type PerCall = (Duration, Duration);

fn report(what: &str, (wall, cpu): PerCall) {
    println!("  {what:<36} {:>8.1} µs wall {:>8.1} µs CPU", wall.as_secs_f64() * 1e6, cpu.as_secs_f64() * 1e6);
}

/// The median of `REPEATS` measurements of `measure`, which gives the time
/// and CPU of `calls` calls.
fn median(calls: usize, mut measure: impl FnMut() -> PerCall) -> PerCall {
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for _ in 0..REPEATS {
        let (wall, cpu) = measure();
        walls.push(wall / calls as u32);
        cpus.push(cpu / calls as u32);
    }
    walls.sort();
    cpus.sort();
    (walls[REPEATS / 2], cpus[REPEATS / 2])
}

/// The client alone: connected once, then calls one after another and 64 at once.
async fn client(config: &Value) -> (PerCall, PerCall) {
    let config: McpServerConfig = serde_json::from_value(config.clone()).unwrap();
    let log = Arc::new(ServerLog::default());
    let (rpc, transport, stdio): (Arc<dyn Rpc>, Transport, Option<StdioServer>) = match &config.command {
        Some(command) => {
            let command = StdioCommand { command: command.clone(), ..StdioCommand::default() };
            let server = StdioServer::spawn(&command, 16 << 20, log).unwrap();
            (server.connection().clone(), Transport::Stdio, Some(server))
        }
        None => (Arc::new(HttpLink::new(&config, 16 << 20, log).unwrap()), Transport::Http, None),
    };
    let client = McpClient::connect(rpc, PATIENCE, transport).await.unwrap();
    let echo = || client.call_tool("echo", json!({"text": "x"}), None, PATIENCE);
    for _ in 0..100 {
        echo().await.unwrap();
    }
    let mut sequential = Vec::new();
    let mut fanned = Vec::new();
    for _ in 0..REPEATS {
        let (start, cpu) = (Instant::now(), process_cpu());
        for _ in 0..CALLS {
            echo().await.unwrap();
        }
        sequential.push((start.elapsed(), process_cpu() - cpu));
        let (start, cpu) = (Instant::now(), process_cpu());
        for _ in 0..FAN_ROUNDS {
            for answer in futures_util::future::join_all((0..FAN_OUT).map(|_| echo())).await {
                answer.unwrap();
            }
        }
        fanned.push((start.elapsed(), process_cpu() - cpu));
    }
    if let Some(server) = stdio {
        server.stop(Duration::from_secs(2)).await;
    }
    let mut sequential = sequential.into_iter();
    let mut fanned = fanned.into_iter();
    (median(CALLS, || sequential.next().unwrap()), median(FAN_OUT * FAN_ROUNDS, || fanned.next().unwrap()))
}

/// A run whose model calls the echo tool `per_round` times in each of `rounds` rounds.
fn in_a_run(server: &Value, per_round: usize, rounds: usize) -> PerCall {
    let calls: Vec<Value> =
        (0..per_round).map(|i| json!({"id": format!("c{i}"), "name": "t__echo", "arguments": {"text": "x"}})).collect();
    let mut script: Vec<Value> = (0..rounds).map(|_| json!({"tool_calls": calls})).collect();
    script.push(json!({"text": "done"}));
    let config = json!({"model": {"provider": "scripted", "script": script}, "max_rounds": rounds + 1,
                        "max_concurrent_tools": FAN_OUT, "mcp_servers": {"t": server}});
    median(per_round * rounds, || {
        let agent = AgentBuilder::from_json(&config.to_string()).unwrap().build().unwrap();
        // The server's start is not measured: the clock starts at the first call.
        let started: Arc<Mutex<Option<(Instant, Duration)>>> = Arc::default();
        let mark = Arc::clone(&started);
        let sink = move |event: &Event| {
            if matches!(event.kind, EventKind::ToolExecutionStart { .. }) {
                mark.lock().unwrap().get_or_insert_with(|| (Instant::now(), process_cpu()));
            }
        };
        let result = agent.start(RunInput::prompt("go"), Some(Box::new(sink))).unwrap().wait_blocking().unwrap();
        let (end, cpu_end) = (Instant::now(), process_cpu());
        assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
        let (start, cpu) = started.lock().unwrap().expect("a call started");
        (end - start, cpu_end - cpu)
    })
}

/// The process's CPU time so far.
fn process_cpu() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The HTTP test server, running until dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(python: &PathBuf, script: &PathBuf) -> HttpServer {
        let mut child = Command::new(python)
            .arg(script)
            .args(["--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run scripts/setup.sh first");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
        HttpServer { child, url: format!("http://127.0.0.1:{}/mcp", port.trim()) }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
