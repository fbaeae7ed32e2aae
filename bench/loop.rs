//! W1, W2 and W3 (DESIGN section 7) with the tool in Rust, on the scripted model.
//!
//! W1 and W2 print the median wall time of a whole run and microseconds per round
//! (W1) or per call (W2), with and without an event sink. W3 starts 1,000 and then
//! 10,000 concurrent runs of 5 rounds with a 10 ms model delay and prints the wall
//! time and the process's peak resident memory. Run with `make bench`; nothing here
//! is asserted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ferrule::agent::{Agent, Event, RunInput, RunStatus};
use ferrule::hook::{Hook, HookDecision, HookHistory, HookRequest, HookStage};
use serde_json::Value;

mod common;
use common::{builder_with_noop as builder, median, peak_rss_kib, timed_run as run};

fn main() {
    let workloads: Value = serde_json::from_str(include_str!("workloads.json")).expect("bench/workloads.json");
    for (key, schema) in [("w1", "open_schema"), ("w2", "schema")] {
        let workload = &workloads[key];
        let agent = build(&workload["config"], workloads[schema].clone());
        let rounds = workload["rounds"].as_u64().unwrap() as f64;
        let calls = workload["calls"].as_u64().unwrap() as f64;
        let quiet = median(|| run(&agent, None));
        let counted = Arc::new(AtomicUsize::new(0));
        let with_events = median(|| {
            let counted = counted.clone();
            run(
                &agent,
                Some(Box::new(move |_: &Event| {
                    counted.fetch_add(1, Ordering::Relaxed);
                })),
            )
        });
        println!("{}", workload["description"].as_str().unwrap());
        for (label, time) in [("no event sink", quiet), ("event sink", with_events)] {
            println!(
                "  rust tool, {label:13}: run {:8.2} ms  {:7.2} us/round  {:6.2} us/call",
                time.as_secs_f64() * 1e3,
                time.as_secs_f64() * 1e6 / rounds,
                time.as_secs_f64() * 1e6 / calls,
            );
        }
    }
    let w1 = &workloads["w1"];
    let rounds = w1["rounds"].as_u64().unwrap() as f64;
    println!("W1 with no-op hooks (Rust), beside plain W1 above");
    let every =
        [HookStage::RunStart, HookStage::TurnStart, HookStage::ToolCall, HookStage::ToolResult, HookStage::FinalAnswer];
    for (label, stages, history) in [
        ("every stage", &every[..], HookHistory::Full),
        ("every stage, no history", &every[..], HookHistory::None),
        (
            "all but turn_start",
            &[HookStage::RunStart, HookStage::ToolCall, HookStage::ToolResult, HookStage::FinalAnswer][..],
            HookHistory::Full,
        ),
    ] {
        let mut builder = builder(&w1["config"], workloads["open_schema"].clone());
        for &stage in stages {
            let hook = Hook::new(vec![stage], |_: HookRequest| async { Ok(HookDecision::Continue) }).expect("hook");
            builder.add_hook(hook.with_history(history));
        }
        let agent = builder.build().expect("build");
        let time = median(|| run(&agent, None));
        println!(
            "  {label:23}: run {:8.2} ms  {:7.2} us/round",
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / rounds
        );
    }
    println!("W3 concurrency: concurrent runs of 5 rounds, model delay 10 ms");
    for runs in [1000, 10_000] {
        concurrency(runs);
    }
}

/// W3: `runs` concurrent runs of 5 rounds (4 tool rounds, then an answer), each
/// model turn taking 10 ms.
fn concurrency(runs: usize) {
    let config = serde_json::json!({"model": {"provider": "scripted", "script": [
        {"tool_calls": [{"id": "c1", "name": "noop", "arguments": {}}], "delay_ms": 10, "repeat": 4},
        {"text": "done", "delay_ms": 10}]}});
    let agent = build(&config, serde_json::json!({"type": "object"}));
    let started = Instant::now();
    let handles: Vec<_> = (0..runs).map(|_| agent.start(RunInput::prompt("go"), None).expect("start")).collect();
    for handle in &handles {
        assert_eq!(handle.wait_blocking().unwrap().status, RunStatus::Completed);
    }
    let elapsed = started.elapsed();
    println!(
        "  {runs:6} runs: wall {:8.1} ms (5 rounds x 10 ms of model time each = 50 ms), peak RSS {} MiB",
        elapsed.as_secs_f64() * 1e3,
        peak_rss_kib() / 1024
    );
}

fn build(config: &Value, schema: Value) -> Agent {
    builder(config, schema).build().expect("build")
}
