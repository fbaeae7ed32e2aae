//! Provider benchmarks (DESIGN section 7): SSE parsing throughput over the recorded
//! fixtures, and the overhead of a full round trip through a local HTTP server
//! compared with the scripted model. Run with `make bench`; nothing is asserted.

#[path = "../tests/it/common/gemini_spec.rs"]
mod gemini_spec;
#[path = "../tests/it/common/openai_spec.rs"]
mod openai_spec;
#[path = "../tests/it/common/server.rs"]
mod server;
#[path = "../tests/it/common/wire.rs"]
mod wire;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ferrule::agent::{AgentBuilder, RunInput, RunStatus};
use ferrule::provider::decode_recorded;
use ferrule::provider::ProviderKind;
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use serde_json::json;
use server::{MockServer, Reply};

const ROUNDS: usize = 200;

fn main() {
    sse_throughput();
    round_trip();
}

fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("FERRULE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"));
    dir.join("providers").is_dir().then_some(dir.join("providers"))
}

fn sse_throughput() {
    let Some(providers) = fixtures() else {
        println!("SSE parsing: SKIPPED, fixtures not found (set FERRULE_FIXTURES)");
        return;
    };
    println!("SSE parsing throughput over the recorded streams (SSE parser + decoder + message assembly)");
    for (dir, kind) in [
        ("openai-chat", ProviderKind::Openai),
        ("openai-compatible", ProviderKind::OpenaiCompatible),
        ("openai-responses", ProviderKind::OpenaiResponses),
        ("anthropic", ProviderKind::Anthropic),
    ] {
        let bodies: Vec<Vec<u8>> = std::fs::read_dir(providers.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "sse"))
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        let bytes: usize = bodies.iter().map(Vec::len).sum();
        let mut passes = 0u64;
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(500) {
            for body in &bodies {
                // Streams that end in an in-band error are parsed all the same.
                let _ = std::hint::black_box(decode_recorded(kind, body, true));
            }
            passes += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "  {dir:18} {:3} files {:7} bytes: {:7.1} MB/s",
            bodies.len(),
            bytes,
            (bytes as f64 * passes as f64) / seconds / 1e6
        );
    }
}

fn noop() -> Tool {
    Tool::new("noop", "Does nothing.", json!({"type": "object"}), ToolOptions::default(), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult::text("ok"))
    })
    .unwrap()
}

fn time_run(config: serde_json::Value) -> Duration {
    let mut builder = AgentBuilder::from_json(&config.to_string()).unwrap();
    builder.add_tool(noop()).unwrap();
    let agent = builder.build().unwrap();
    let started = Instant::now();
    let result = agent.start(RunInput::prompt("go"), None).expect("start").wait_blocking().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    elapsed
}

fn round_trip() {
    let call = [("c1", "noop", "{}")];
    let scripted = time_run(json!({"model": {"provider": "scripted", "script": [
        {"tool_calls": [{"id": "c1", "name": "noop", "arguments": {}}], "repeat": ROUNDS - 1}, {"text": "done"}]},
        "max_rounds": ROUNDS}));
    let mut replies: Vec<Reply> = (0..ROUNDS - 1).map(|_| Reply::sse(&wire::chat("", &call))).collect();
    replies.push(Reply::sse(&wire::chat("done", &[])));
    let server = MockServer::start(replies);
    std::env::set_var("FERRULE_BENCH_KEY", "sk-bench");
    let http =
        time_run(json!({"model": {"provider": "openai", "name": "bench", "base_url": format!("{}/v1", server.url()),
        "api_key_env": "FERRULE_BENCH_KEY"}, "max_rounds": ROUNDS}));
    let per_round = |d: Duration| d.as_secs_f64() * 1e6 / ROUNDS as f64;
    println!(
        "Round trip, {ROUNDS} rounds of one tool call (local HTTP server on 127.0.0.1, a new connection per request)"
    );
    println!("  scripted model : {:8.1} us/round", per_round(scripted));
    println!(
        "  openai over HTTP: {:8.1} us/round ({:.0}x the scripted round)",
        per_round(http),
        http.as_secs_f64() / scripted.as_secs_f64()
    );
}
