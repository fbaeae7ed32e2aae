//! Agents called as tools (docs/performance.md, "Agents as tools"), on the
//! scripted model: what a nested call costs beside a plain tool call, and many
//! callers each with a nested run at once. bench/agents/peer.py runs the same
//! workloads on the OpenAI Agents SDK (`Agent.as_tool`). Run with `make
//! bench-agents`; nothing here is asserted.
//!
//! - A1: one run of 50 rounds, one call per round, of a no-op Rust tool and
//!   then of an agent that answers at once (its own run of one model request):
//!   microseconds per round, with and without an event sink (which gets the
//!   nested run's events too).
//! - A2: 1,000 concurrent callers, each calling an agent once; every model
//!   response takes 10 ms (the caller's two and the agent's one): wall time and
//!   the process's peak resident memory.

use std::time::{Duration, Instant};

use ferrule::agent::{Agent, AgentBuilder, AgentToolMode, AgentToolOptions, AgentToolSpec, Event, RunInput, RunStatus};
use ferrule::tool::Tool;
use serde_json::{json, Value};

mod common;
use common::{median, noop_tool, peak_rss_kib, timed_run, REPEATS};

const ROUNDS: u64 = 50;
const CALLERS: usize = 1000;

fn main() {
    concurrent_callers();
    println!("A1 nested calls: one run of {ROUNDS} rounds, one call per round (medians of {REPEATS})");
    let caller = |tool: &str| {
        json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [{"id": "c1", "name": tool, "arguments": {"input": "go"}}], "repeat": ROUNDS - 1},
            {"text": "done"}]}, "max_rounds": ROUNDS})
    };
    let plain = build(caller("noop"), Some(noop()), None);
    let answering = build(json!({"model": {"provider": "scripted", "script": [{"text": "ok"}]}}), None, None);
    let nested = build(caller("helper"), None, Some(&answering));
    for (label, agent) in [("no-op Rust tool", &plain), ("agent as the tool", &nested)] {
        let quiet = median(|| run(agent, false));
        let with_events = median(|| run(agent, true));
        for (sink, time) in [("no event sink", quiet), ("event sink", with_events)] {
            println!(
                "  {label:18} {sink:13}: run {:8.2} ms  {:7.2} us/round",
                time.as_secs_f64() * 1e3,
                time.as_secs_f64() * 1e6 / ROUNDS as f64
            );
        }
    }
}

/// A2: `CALLERS` concurrent runs, each calling an agent once, every model
/// response taking 10 ms.
fn concurrent_callers() {
    let agent =
        build(json!({"model": {"provider": "scripted", "script": [{"text": "ok", "delay_ms": 10}]}}), None, None);
    let caller = build(
        json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [{"id": "c1", "name": "helper", "arguments": {"input": "go"}}], "delay_ms": 10},
            {"text": "done", "delay_ms": 10}]}}),
        None,
        Some(&agent),
    );
    let (started, cpu) = (Instant::now(), cpu_time());
    let runs: Vec<_> = (0..CALLERS).map(|_| caller.start(RunInput::prompt("go"), None).expect("start")).collect();
    for run in &runs {
        assert_eq!(run.wait_blocking().expect("wait").status, RunStatus::Completed);
    }
    println!(
        "A2 {CALLERS} concurrent callers, each calling an agent once (3 model responses of 10 ms = 30 ms): wall {:.1} ms, CPU {:.1} ms, peak RSS {} MiB",
        started.elapsed().as_secs_f64() * 1e3,
        (cpu_time() - cpu).as_secs_f64() * 1e3,
        peak_rss_kib() / 1024
    );
}

/// An agent of `config` with the tool `noop`, or `agent` as the tool `helper`.
fn build(config: Value, tool: Option<Tool>, agent: Option<&Agent>) -> Agent {
    let mut builder = AgentBuilder::from_json(&config.to_string()).expect("config");
    if let Some(tool) = tool {
        builder.add_tool(tool).expect("tool");
    }
    if let Some(agent) = agent {
        let spec = AgentToolSpec {
            name: "helper".into(),
            description: "Helps.".into(),
            agent: agent.clone(),
            input_schema: None,
            mode: AgentToolMode::Tool,
            options: AgentToolOptions::default(),
        };
        builder.add_agent(spec).expect("agent");
    }
    builder.build().expect("build")
}

/// A no-op tool taking the same arguments as an agent.
fn noop() -> Tool {
    noop_tool(json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}))
}

fn run(agent: &Agent, events: bool) -> Duration {
    timed_run(agent, events.then(|| Box::new(|_: &Event| {}) as Box<dyn ferrule::agent::EventSink>))
}

/// The CPU time this process used so far (user and system).
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}
