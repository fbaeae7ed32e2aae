//! What tracing costs a run: W1 (DESIGN section 7, the tool in Rust, on the
//! scripted model) with no tracer, with the host's tracer set (a no-op one),
//! with content captured too, and with the agent's own OTLP exporter whose
//! collector is down. The setups take turns in every repetition, so the
//! machine's drift falls on all alike; each prints the median of its runs and
//! its ratio to the untraced run. Run with `make bench`; nothing is asserted.

use std::time::Duration;

use ferrule::agent::Agent;
use serde_json::{json, Value};

mod common;
use common::{builder_with_noop, timed_run};

const REPEATS: usize = 31;

/// A setup of tracing: its name, the agent's `trace` and whether the host's
/// tracer is set.
struct Setup {
    name: &'static str,
    trace: Value,
    host_tracer: bool,
}

fn main() {
    let workloads: Value = serde_json::from_str(include_str!("workloads.json")).expect("bench/workloads.json");
    let w1 = &workloads["w1"];
    let rounds = w1["rounds"].as_u64().unwrap() as f64;
    let setups = [
        Setup { name: "no tracer", trace: json!({}), host_tracer: false },
        Setup { name: "host tracer (no-op)", trace: json!({}), host_tracer: true },
        Setup { name: "host tracer, content captured", trace: json!({"capture_content": true}), host_tracer: true },
        // Port 9 on loopback refuses: every export fails, off the run.
        Setup {
            name: "OTLP exporter, collector down",
            trace: json!({"otlp": {"endpoint": "http://127.0.0.1:9/v1/traces"}}),
            host_tracer: false,
        },
    ];
    let agents: Vec<Agent> =
        setups.iter().map(|setup| agent(&w1["config"], &setup.trace, &workloads["open_schema"])).collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); setups.len()];
    for repeat in 0..=REPEATS {
        for (index, setup) in setups.iter().enumerate() {
            match setup.host_tracer {
                true => ferrule::trace::set_tracer(|_| {}).expect("tracer"),
                false => ferrule::trace::remove_tracer(),
            }
            let time = timed_run(&agents[index], None);
            // The first repetition warms up.
            if repeat > 0 {
                times[index].push(time);
            }
        }
    }
    ferrule::trace::remove_tracer();
    println!("W1 with tracing (Rust tool), {REPEATS} runs each, taking turns");
    let medians: Vec<Duration> = times.iter_mut().map(|t| median(t)).collect();
    for (setup, time) in setups.iter().zip(&medians) {
        println!(
            "  {:30}: run {:7.2} ms  {:7.2} us/round  x{:.2}",
            setup.name,
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / rounds,
            time.as_secs_f64() / medians[0].as_secs_f64()
        );
    }
}

fn agent(config: &Value, trace: &Value, schema: &Value) -> Agent {
    let mut config = config.clone();
    config["trace"] = trace.clone();
    builder_with_noop(&config, schema.clone()).build().expect("build")
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}
