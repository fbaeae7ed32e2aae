//! The matching bound of the edit and apply_patch built-ins, on the inputs that
//! once took seconds: a 45 KB patch against a 30,000-line file whose lines only
//! match once whitespace is ignored, a 6 KB `oldText` against a 600 KB file where
//! it occurs (overlapping) at almost every byte, and the many-searches cases that
//! the work budget refuses (1,000 Update File sections of one 20,000-line file;
//! 4,000 edits of a 280 KB file), and 10,000 one-line Add File sections. Prints the median time of a whole call through a
//! scripted run, file I/O included, and how the call ended. Then the cost of
//! bash's sandbox: a bash call of `true`, unconfined and confined (per call, over
//! runs of 40 calls). Run with `make bench`; nothing here is asserted.

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
    report("apply_patch: 46 KB patch, 600 whitespace-loose chunks, 30,000-line file", || {
        std::fs::write(dir.path().join("big.py"), &file).unwrap();
        call(dir.path(), "apply_patch", json!({"input": patch}))
    });

    let body = "a".repeat(600_000);
    let old_text = "a".repeat(6_000);
    report("edit: 6 KB oldText, 600 KB file, ~594,000 overlapping matches", || {
        std::fs::write(dir.path().join("flat.txt"), &body).unwrap();
        call(dir.path(), "edit", json!({"path": "flat.txt", "edits": [{"oldText": old_text, "newText": "b"}]}))
    });

    let lines: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let sections: String =
        (0..1_000).map(|i| format!("*** Update File: g.txt\n@@\n-line {i}\n+LINE {i}\n", i = i * 20)).collect();
    let patch = format!("*** Begin Patch\n{sections}*** End Patch");
    report("apply_patch: 1,000 Update File sections of one 20,000-line file", || {
        std::fs::write(dir.path().join("g.txt"), &lines).unwrap();
        call(dir.path(), "apply_patch", json!({"input": patch}))
    });

    let adds: String = (0..10_000).map(|i| format!("*** Add File: d/f{i}\n+x\n")).collect();
    let patch = format!("*** Begin Patch\n{adds}*** End Patch");
    report("apply_patch: 10,000 Add File sections of one line", || {
        let _ = std::fs::remove_dir_all(dir.path().join("d"));
        call(dir.path(), "apply_patch", json!({"input": patch}))
    });

    let words: String = (0..40_000).map(|i| format!("w{i:05} ")).collect();
    let edits: Vec<Value> =
        (0..4_000).map(|i| json!({"oldText": format!("w{:05} w{:05} ", i * 5, i * 5 + 1), "newText": "x "})).collect();
    report("edit: 4,000 single-match edits of a 280 KB file", || {
        std::fs::write(dir.path().join("w.txt"), &words).unwrap();
        call(dir.path(), "edit", json!({"path": "w.txt", "edits": edits}))
    });

    for (sandbox, what) in [
        (json!({"mode": "off"}), "bash: `true`, without the sandbox"),
        (json!({"mode": "workspace_write"}), "bash: `true`, in the sandbox"),
        (json!({"mode": "workspace_write", "network": true}), "bash: `true`, in the sandbox with network"),
    ] {
        report(what, || bash_calls(dir.path(), &sandbox, 40));
    }
}

/// Prints the median time of `measure` and how its last call ended.
fn report(what: &str, mut measure: impl FnMut() -> (Duration, String)) {
    let mut ending = String::new();
    let mut times: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let (time, text) = measure();
            ending = text;
            time
        })
        .collect();
    times.sort_unstable();
    let ending: String = ending.chars().take(72).collect();
    println!("{what}: {:9.2} ms/call ({ending})", times[REPEATS / 2].as_secs_f64() * 1e3);
}

/// One run of one call of `tool` in `dir`: its wall time and the result's text.
fn call(dir: &Path, tool: &str, arguments: Value) -> (Duration, String) {
    let script = json!([{"tool_calls": [{"id": "c", "name": tool, "arguments": arguments}]}, {"text": "done"}]);
    let (elapsed, messages) = timed_run(script, json!({"working_directory": dir.to_str().unwrap(), "allowed": [tool]}));
    (elapsed, messages[2]["content"][0]["text"].as_str().unwrap_or_default().to_owned())
}

/// One run of `calls` rounds of one bash call of `true` in `dir`, bash's
/// sandbox as `sandbox` says: the wall time per call and the last result's text.
fn bash_calls(dir: &Path, sandbox: &Value, calls: u32) -> (Duration, String) {
    let round = json!({"tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "true"}}]});
    let script: Vec<Value> = (0..calls).map(|_| round.clone()).chain([json!({"text": "done"})]).collect();
    let builtins = json!({"working_directory": dir.to_str().unwrap(), "allowed": ["bash"], "sandbox": sandbox});
    let (elapsed, messages) = timed_run(json!(script), builtins);
    let last = &messages[messages.as_array().map_or(0, Vec::len).saturating_sub(2)];
    (elapsed / calls, last["content"][0]["text"].as_str().unwrap_or_default().to_owned())
}

/// The wall time of one run of the scripted model `script` with the built-ins
/// `builtins`, and its transcript.
fn timed_run(script: Value, builtins: Value) -> (Duration, Value) {
    let config = json!({"model": {"provider": "scripted", "script": script}, "builtin_tools": builtins});
    let agent = AgentBuilder::from_json(&config.to_string()).expect("config").build().expect("build");
    let started = Instant::now();
    let result = agent.start(RunInput::prompt("go"), None).expect("start").wait_blocking().expect("wait");
    let elapsed = started.elapsed();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    (elapsed, serde_json::to_value(&result.messages).expect("transcript"))
}
