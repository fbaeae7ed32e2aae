//! W1 and W2 (DESIGN section 7) with the tool in Rust, on the scripted model.
//!
//! Prints one line per workload: median wall time of a whole run, microseconds per
//! round (W1) or per call (W2), with and without an event sink. Run with
//! `make bench`; nothing here is asserted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrule::agent::{Agent, AgentBuilder, Event, EventSink, RunInput, RunStatus};
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use serde_json::Value;

const REPEATS: usize = 7;

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
}

fn build(config: &Value, schema: Value) -> Agent {
    let mut builder = AgentBuilder::from_json(&config.to_string()).expect("config");
    let noop = Tool::new("noop", "Does nothing.", schema, ToolOptions::default(), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult::text("ok"))
    })
    .expect("tool");
    builder.add_tool(noop).expect("add");
    builder.build().expect("build")
}

fn run(agent: &Agent, sink: Option<Box<dyn EventSink>>) -> Duration {
    let started = Instant::now();
    let run = agent.start(RunInput::Prompt("go".into()), sink);
    let result = run.wait_blocking().expect("wait");
    let elapsed = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    elapsed
}

fn median(mut measure: impl FnMut() -> Duration) -> Duration {
    measure(); // warm-up
    let mut times: Vec<Duration> = (0..REPEATS).map(|_| measure()).collect();
    times.sort_unstable();
    times[REPEATS / 2]
}
