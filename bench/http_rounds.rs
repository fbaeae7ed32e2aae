//! W4 (issue: a flat HTTP path): the whole HTTP round of an `openai` agent against
//! a local keep-alive server on 127.0.0.1 that answers one tool call per request
//! until the run has had its rounds, then text.
//!
//! The server runs in a child process (this binary with `--serve`), so the CPU
//! time measured here is the client's alone: the process CPU clock is read by the
//! tool at each round. Printed: client CPU per round in the first and last tenth
//! of a 300-round run and their ratio, request bytes per round (what the encoder
//! wrote anew, and the body it sent), connections opened; the same against a
//! server that closes every connection, and with the Responses API keeping the
//! history on the server (`server_history`: flat bytes per request); then 100
//! concurrent runs of 5 rounds with a 10 ms server delay (wall time, peak RSS).
//! Run with `make bench`; nothing is asserted.

mod common;
#[path = "../tests/it/common/wire.rs"]
mod wire;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::http::Requests;
use common::proc_status;
use ferrule::agent::{Agent, AgentBuilder, RunInput, RunStatus};
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use serde_json::json;

const ROUNDS: usize = 300;
/// Runs of [`ROUNDS`] per server kind; the medians are printed.
const REPEATS: usize = 11;
const CONCURRENT_RUNS: usize = 100;
const CONCURRENT_ROUNDS: usize = 5;
const SERVER_DELAY_MS: u64 = 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--serve") {
        let number = |i: usize| args[at + i].parse::<u64>().expect("--serve ROUNDS DELAY_MS SETUP");
        return serve(number(1) as usize, number(2), Setup::parse(&args[at + 3]));
    }
    // FERRULE_BENCH_TRACE=1: the same, with a no-op host tracer set, so every
    // run records its spans (what tracing costs the HTTP path).
    let traced = std::env::var("FERRULE_BENCH_TRACE").is_ok_and(|v| v == "1");
    if traced {
        ferrule::trace::set_tracer(|_| {}).expect("tracer");
    }
    let how = if traced { ", traced (a no-op host tracer)" } else { "" };
    println!("W4 HTTP rounds: an openai agent, one tool call per round, local server in another process{how}");
    for setup in [Setup::KeepAlive, Setup::Closing, Setup::ServerHistory] {
        sequential(setup);
    }
    concurrent();
}

/// How the rounds travel.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// Chat Completions over one kept-alive connection.
    KeepAlive,
    /// Chat Completions, the server closing the connection after each response.
    Closing,
    /// Responses with `server_history`: each request names the previous response
    /// and carries only the round's tool result.
    ServerHistory,
}

impl Setup {
    fn name(self) -> &'static str {
        match self {
            Setup::KeepAlive => "keep-alive",
            Setup::Closing => "closing",
            Setup::ServerHistory => "server-history",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Setup::KeepAlive => "openai, keep-alive server",
            Setup::Closing => "openai, server closing each connection",
            Setup::ServerHistory => "openai-responses with server_history, keep-alive server",
        }
    }

    fn parse(name: &str) -> Setup {
        [Setup::KeepAlive, Setup::Closing, Setup::ServerHistory].into_iter().find(|s| s.name() == name).expect("setup")
    }
}

/// [`REPEATS`] runs of [`ROUNDS`] rounds, each against a new server.
fn sequential(setup: Setup) {
    let runs: Vec<RunFigures> = (0..REPEATS).map(|_| one_run(setup)).collect();
    let median = |figure: fn(&RunFigures) -> f64| {
        let mut values: Vec<f64> = runs.iter().map(figure).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let last = &runs[runs.len() - 1];
    println!(
        "  {}: {ROUNDS} rounds, medians of {REPEATS} runs: {:.0} ms wall, {} connection(s) per run",
        setup.describe(),
        median(|r| r.wall_ms),
        last.connections
    );
    println!(
        "    client CPU per round: first tenth {:.3} ms, last tenth {:.3} ms, ratio {:.2} (runs: {}), whole run {:.3} ms",
        median(|r| r.first_ms),
        median(|r| r.last_ms),
        median(|r| r.last_ms / r.first_ms),
        runs.iter().map(|r| format!("{:.2}", r.last_ms / r.first_ms)).collect::<Vec<_>>().join(" "),
        median(|r| r.mean_ms),
    );
    println!(
        "    request body: grows {:.0} bytes per round in the first tenth, {:.0} in the last; {} bytes at round 1, {} at round {ROUNDS}",
        last.new_bytes_first, last.new_bytes_last, last.first_body, last.last_body,
    );
}

/// What one sequential run measured.
struct RunFigures {
    wall_ms: f64,
    first_ms: f64,
    last_ms: f64,
    mean_ms: f64,
    new_bytes_first: f64,
    new_bytes_last: f64,
    first_body: usize,
    last_body: usize,
    connections: usize,
}

/// One run of [`ROUNDS`] rounds; per-round client CPU from the tool's readings.
fn one_run(setup: Setup) -> RunFigures {
    let server = Server::start(ROUNDS, 0, setup);
    let readings = Arc::new(Mutex::new(Vec::with_capacity(ROUNDS)));
    let agent = agent(&server, setup, readings.clone());
    let started = Instant::now();
    let result = agent.start(RunInput::prompt("Go."), None).expect("start").wait_blocking().unwrap();
    let wall = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.rounds as usize, ROUNDS);
    let stats = server.finish();
    let cpu = readings.lock().unwrap().clone();
    // cpu[i] is read in round i + 1's tool, so cpu[i + 1] - cpu[i] is one whole round.
    let rounds: Vec<f64> = cpu.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3).collect();
    let tenth = ROUNDS / 10;
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let bodies = &stats.bodies;
    // A body grows by what its request encoded anew; the rest is copied.
    let growth = |range: std::ops::Range<usize>| {
        range.clone().map(|i| bodies[i + 1] - bodies[i]).sum::<usize>() as f64 / range.len() as f64
    };
    RunFigures {
        wall_ms: wall.as_secs_f64() * 1e3,
        first_ms: mean(&rounds[..tenth]),
        last_ms: mean(&rounds[rounds.len() - tenth..]),
        mean_ms: mean(&rounds),
        new_bytes_first: growth(0..tenth),
        new_bytes_last: growth(bodies.len() - 1 - tenth..bodies.len() - 1),
        first_body: bodies[0],
        last_body: bodies[bodies.len() - 1],
        connections: stats.connections,
    }
}

/// [`CONCURRENT_RUNS`] runs of [`CONCURRENT_ROUNDS`] rounds at once on one agent.
fn concurrent() {
    let server = Server::start(CONCURRENT_ROUNDS, SERVER_DELAY_MS, Setup::KeepAlive);
    let agent = agent(&server, Setup::KeepAlive, Arc::new(Mutex::new(Vec::new())));
    let before = proc_status("VmRSS:");
    let started = Instant::now();
    let runs: Vec<_> =
        (0..CONCURRENT_RUNS).map(|_| agent.start(RunInput::prompt("Go."), None).expect("start")).collect();
    for run in &runs {
        let result = run.wait_blocking().unwrap();
        assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    }
    let wall = started.elapsed();
    let stats = server.finish();
    println!(
        "  {CONCURRENT_RUNS} concurrent runs x {CONCURRENT_ROUNDS} rounds, server delay {SERVER_DELAY_MS} ms: wall {:.0} ms \
         ({} ms of server delay per run), {} connections, RSS {} MiB before, peak {} MiB",
        wall.as_secs_f64() * 1e3,
        CONCURRENT_ROUNDS as u64 * SERVER_DELAY_MS,
        stats.connections,
        before / 1024,
        proc_status("VmHWM:") / 1024
    );
}

fn agent(server: &Server, setup: Setup, readings: Arc<Mutex<Vec<Duration>>>) -> Agent {
    std::env::set_var("FERRULE_BENCH_KEY", "sk-bench");
    let mut model = json!({"provider": "openai", "name": "bench", "base_url": format!("{}/v1", server.url),
        "api_key_env": "FERRULE_BENCH_KEY"});
    if setup == Setup::ServerHistory {
        model["provider"] = json!("openai-responses");
        model["server_history"] = json!(true);
    }
    let config = json!({"model": model, "system": "You are a benchmark.", "max_rounds": ROUNDS + 1});
    let mut builder = AgentBuilder::from_json(&config.to_string()).expect("config");
    let schema = json!({"type": "object", "properties": {"step": {"type": "integer"}}});
    let noop =
        Tool::new("noop", "Records the client's CPU time.", schema, ToolOptions::default(), move |_: Invocation| {
            readings.lock().unwrap().push(process_cpu());
            async { ToolOutcome::Completed(ToolResult::text("ok")) }
        })
        .expect("tool");
    builder.add_tool(noop).expect("add");
    builder.build().expect("build")
}

/// Which round a request belongs to, from 1.
fn round_of(body: &[u8], setup: Setup) -> usize {
    if setup != Setup::ServerHistory {
        return 1 + body.windows(13).filter(|w| w == b"\"role\":\"tool\"").count();
    }
    let marker = b"\"previous_response_id\":\"resp_";
    let Some(at) = body.windows(marker.len()).position(|w| w == marker) else { return 1 };
    let digits = body[at + marker.len()..].iter().take_while(|b| b.is_ascii_digit()).map(|b| (b - b'0') as usize);
    1 + digits.fold(0, |n, d| n * 10 + d)
}

/// The CPU time of this process (every thread) so far.
fn process_cpu() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The server child process.
struct Server {
    child: Child,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    url: String,
}

/// What the server saw: body bytes of each request in order, connections accepted.
struct ServerStats {
    bodies: Vec<usize>,
    connections: usize,
}

impl Server {
    fn start(rounds: usize, delay_ms: u64, setup: Setup) -> Server {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--serve", &rounds.to_string(), &delay_ms.to_string(), setup.name()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("server process");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = lines.next().expect("server address").unwrap();
        Server { child, lines, url }
    }

    /// Stops the server (it exits when its stdin closes) and reads its report.
    fn finish(mut self) -> ServerStats {
        drop(self.child.stdin.take());
        let mut stats = ServerStats { bodies: Vec::new(), connections: 0 };
        for line in self.lines.by_ref().map_while(Result::ok) {
            match line.split_once(' ') {
                Some(("body", bytes)) => stats.bodies.push(bytes.parse().unwrap()),
                Some(("connections", count)) => stats.connections = count.parse().unwrap(),
                _ => {}
            }
        }
        let _ = self.child.wait();
        stats
    }
}

/// The child: answers a tool call in each round before the last, then text. The
/// round is the number of tool results in the request plus one, or (with server
/// history) the number in the previous response's id plus one. Prints its
/// address, then (when its stdin closes) each body size and the connection count.
fn serve(rounds: usize, delay_ms: u64, setup: Setup) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    println!("http://{}", listener.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(Mutex::new(0usize));
    {
        let (bodies, connections) = (bodies.clone(), connections.clone());
        std::thread::spawn(move || {
            for socket in listener.incoming().map_while(Result::ok) {
                *connections.lock().unwrap() += 1;
                let bodies = bodies.clone();
                std::thread::spawn(move || connection(socket, rounds, delay_ms, setup, &bodies));
            }
        });
    }
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let mut out = std::io::stdout().lock();
    for size in bodies.lock().unwrap().iter() {
        let _ = writeln!(out, "body {size}");
    }
    let _ = writeln!(out, "connections {}", connections.lock().unwrap());
}

fn connection(socket: TcpStream, rounds: usize, delay_ms: u64, setup: Setup, bodies: &Mutex<Vec<usize>>) {
    let mut requests = Requests::new(socket);
    while let Some(body) = requests.next_body() {
        bodies.lock().unwrap().push(body.len());
        let round = round_of(&body, setup);
        std::thread::sleep(Duration::from_millis(delay_ms));
        let (id, arguments) = (format!("call_{round}"), format!("{{\"step\":{round}}}"));
        let calls: &[wire::Call] = if round >= rounds { &[] } else { &[(&id, "noop", &arguments)] };
        let text = if calls.is_empty() { "All done." } else { "" };
        let reply = match setup {
            Setup::ServerHistory => wire::identified_response(&format!("resp_{round}"), text, calls),
            _ => wire::chat(text, calls),
        };
        let keep_alive = setup != Setup::Closing;
        if !requests.reply(&reply, keep_alive) || !keep_alive {
            return;
        }
    }
}
