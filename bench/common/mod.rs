//! What the benchmarks of runs share: the no-op tool, a timed run, the
//! median of repeated measures and the process's peak memory. Each bench is
//! a program of its own and uses some of these.
#![allow(dead_code)]

pub mod http;

use std::time::{Duration, Instant};

use ferrule::agent::{Agent, AgentBuilder, EventSink, RunInput, RunStatus};
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use serde_json::Value;

/// Measures taken for a median (after one to warm up).
pub const REPEATS: usize = 7;

/// The tool that does nothing and answers "ok", taking arguments of `schema`.
pub fn noop_tool(schema: Value) -> Tool {
    Tool::new("noop", "Does nothing.", schema, ToolOptions::default(), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult::text("ok"))
    })
    .expect("tool")
}

/// A builder from `config` with the no-op tool.
pub fn builder_with_noop(config: &Value, schema: Value) -> AgentBuilder {
    let mut builder = AgentBuilder::from_json(&config.to_string()).expect("config");
    builder.add_tool(noop_tool(schema)).expect("add");
    builder
}

/// The wall time of one run of `agent` on the prompt "go", its events (if
/// any) going to `sink`; the run must complete.
pub fn timed_run(agent: &Agent, sink: Option<Box<dyn EventSink>>) -> Duration {
    let started = Instant::now();
    let result = agent.start(RunInput::prompt("go"), sink).expect("start").wait_blocking().expect("wait");
    let elapsed = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    elapsed
}

/// The median of [`REPEATS`] measures, after one to warm up.
pub fn median(mut measure: impl FnMut() -> Duration) -> Duration {
    measure();
    let mut times: Vec<Duration> = (0..REPEATS).map(|_| measure()).collect();
    times.sort_unstable();
    times[REPEATS / 2]
}

/// The process's peak resident set (VmHWM), in KiB.
pub fn peak_rss_kib() -> u64 {
    proc_status("VmHWM:")
}

/// A line of /proc/self/status (`VmRSS:`, `Threads:`, ...) as a number, in
/// KiB for sizes; 0 when it cannot be read.
pub fn proc_status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}
