//! The matching bound of the edit and apply_patch built-ins, on the inputs that
//! once took seconds: a 45 KB patch against a 30,000-line file whose lines only
//! match once whitespace is ignored, and a 6 KB `oldText` against a 600 KB file
//! where it occurs (overlapping) at almost every byte. Prints the median time of a
//! whole call through a scripted run, file I/O included. Run with `make bench`;
//! nothing here is asserted.

use std::path::Path;
use std::time::{Duration, Instant};

use ferrule::agent::{AgentBuilder, RunInput, RunStatus};
use serde_json::{json, Value};

const REPEATS: usize = 5;

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file: String = (0..30_000).map(|i| format!("    value_{i} = compute({i})  \n")).collect();
    let chunks: String = (0..600)
        .map(|k| {
            let i = k * 50;
            format!("@@\n value_{i} = compute({i})\n-value_{} = compute({})\n+value_{} = 0\n", i + 1, i + 1, i + 1)
        })
        .collect();
    let patch = format!("*** Begin Patch\n*** Update File: big.py\n{chunks}*** End Patch");
    let time = median(|| {
        std::fs::write(dir.path().join("big.py"), &file).unwrap();
        call(dir.path(), "apply_patch", json!({"input": patch}))
    });
    println!(
        "apply_patch: {} KB patch (600 chunks, whitespace-loose) on a {}-line file: {:8.2} ms/call",
        patch.len() / 1000,
        30_000,
        time.as_secs_f64() * 1e3
    );

    let body = "a".repeat(600_000);
    let old_text = "a".repeat(6_000);
    let time = median(|| {
        std::fs::write(dir.path().join("flat.txt"), &body).unwrap();
        call(dir.path(), "edit", json!({"path": "flat.txt", "edits": [{"oldText": old_text, "newText": "b"}]}))
    });
    println!(
        "edit: 6 KB oldText on a 600 KB file, ~594,000 overlapping matches: {:8.2} ms/call",
        time.as_secs_f64() * 1e3
    );
}

/// One run of one call of `tool` in `dir`; its wall time.
fn call(dir: &Path, tool: &str, arguments: Value) -> Duration {
    let script = json!([{"tool_calls": [{"id": "c", "name": tool, "arguments": arguments}]}, {"text": "done"}]);
    let config = json!({"model": {"provider": "scripted", "script": script},
                        "builtin_tools": {"working_directory": dir.to_str().unwrap(), "allowed": [tool]}});
    let agent = AgentBuilder::from_json(&config.to_string()).expect("config").build().expect("build");
    let started = Instant::now();
    let result = agent.start(RunInput::Prompt("go".into()), None).expect("start").wait_blocking().expect("wait");
    let elapsed = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    elapsed
}

fn median(mut measure: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..REPEATS).map(|_| measure()).collect();
    times.sort_unstable();
    times[REPEATS / 2]
}
