//! Shared helpers for the Rust integration tests: agents from JSON, tools from
//! closures, and runs whose events are collected as JSON.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrule::agent::{Agent, AgentBuilder, Event, Run, RunInput, RunResult};
use ferrule::tool::{Invocation, Tool, ToolFunction, ToolOptions, ToolOutcome, ToolResult};
use serde_json::{json, Value};

/// An agent on the scripted model with `script` and extra config fields.
pub fn agent(script: Value, extra: Value, tools: Vec<Tool>) -> Agent {
    build(json!({"model": {"provider": "scripted", "script": script}}), extra, tools)
}

/// An agent whose built-ins (configured by `builtins`) work in `dir`, on a script
/// of one batch of `calls` and then a text answer.
pub fn builtin_agent(dir: &std::path::Path, calls: Vec<Value>, builtins: Value) -> Agent {
    let mut builtins = builtins;
    builtins["working_directory"] = json!(dir.to_str().unwrap());
    let script = json!([{"tool_calls": calls}, {"text": "done"}]);
    agent(script, json!({"builtin_tools": builtins}), vec![])
}

/// A scripted tool call.
pub fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

/// An agent from `config` with the top-level fields of `extra` added.
fn build(mut config: Value, extra: Value, tools: Vec<Tool>) -> Agent {
    if let Value::Object(fields) = extra {
        config.as_object_mut().unwrap().extend(fields);
    }
    let mut builder = AgentBuilder::from_json(&config.to_string()).expect("config");
    for tool in tools {
        builder.add_tool(tool).expect("tool");
    }
    builder.build().expect("build")
}

/// A tool with an open schema and the given options.
pub fn tool(name: &str, options: Value, function: impl ToolFunction) -> Tool {
    let options: ToolOptions = serde_json::from_value(options).unwrap();
    Tool::new(name, format!("test tool {name}"), json!({"type": "object"}), options, function).unwrap()
}

/// A tool that answers with its arguments' `text` (or "ok").
pub fn echo(name: &str) -> Tool {
    tool(name, json!({}), |call: Invocation| async move {
        let text = call.arguments()["text"].as_str().unwrap_or("ok").to_owned();
        ToolOutcome::Completed(ToolResult::text(text))
    })
}

/// A tool that sleeps `ms` milliseconds (from its arguments) and then answers
/// "slept N"; it counts how many of its calls run at once.
pub fn sleeper(name: &str, options: Value, gauge: Arc<Gauge>) -> Tool {
    tool(name, options, move |call: Invocation| {
        let gauge = gauge.clone();
        async move {
            let ms = call.arguments()["ms"].as_u64().unwrap_or(0);
            let _inside = gauge.enter();
            tokio::time::sleep(Duration::from_millis(ms)).await;
            ToolOutcome::Completed(ToolResult::text(format!("slept {ms}")))
        }
    })
}

/// Counts concurrent entries and remembers the peak.
#[derive(Default)]
pub struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
    total: AtomicUsize,
}

pub struct GaugeGuard<'a>(&'a Gauge);

impl Gauge {
    pub fn enter(&self) -> GaugeGuard<'_> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        self.total.fetch_add(1, Ordering::SeqCst);
        GaugeGuard(self)
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }
}

impl Drop for GaugeGuard<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `prompt` to the end; returns the result and every event as JSON.
pub fn run(agent: &Agent, prompt: &str) -> (Arc<RunResult>, Vec<Value>) {
    run_input(agent, RunInput::prompt(prompt))
}

/// Runs `input` to the end; returns the result and every event as JSON.
pub fn run_input(agent: &Agent, input: RunInput) -> (Arc<RunResult>, Vec<Value>) {
    let (run, events) = start_input(agent, input);
    let result = run.wait_blocking().expect("wait");
    let events = events.lock().unwrap().clone();
    (result, events)
}

/// Starts `prompt`; events are collected as they arrive.
pub fn start(agent: &Agent, prompt: &str) -> (Run, Arc<Mutex<Vec<Value>>>) {
    start_input(agent, RunInput::prompt(prompt))
}

/// Starts `input`; events are collected as they arrive.
pub fn start_input(agent: &Agent, input: RunInput) -> (Run, Arc<Mutex<Vec<Value>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let run = agent
        .start(
            input,
            Some(Box::new(move |event: &Event| sink.lock().unwrap().push(serde_json::to_value(event).unwrap()))),
        )
        .expect("start");
    (run, events)
}

/// The `type` of each event, in order.
pub fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect()
}

/// The events of one type.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The tool result messages of a transcript, as JSON.
pub fn tool_results(result: &RunResult) -> Vec<Value> {
    let messages = serde_json::to_value(&result.messages).unwrap();
    messages.as_array().unwrap().iter().filter(|m| m["role"] == "tool").cloned().collect()
}

/// The text of a tool result message.
pub fn text(message: &Value) -> String {
    message["content"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect()
}

/// Checks the invariants every run must keep: run_start first, one run_end and it
/// last, every tool_execution_start matched by exactly one end (updates only in
/// between), turns balanced.
pub fn assert_event_invariants(events: &[Value]) {
    let kinds = types(events);
    assert_eq!(kinds.first().map(String::as_str), Some("run_start"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "run_end").count(), 1, "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("run_end"), "{kinds:?}");
    let mut open = std::collections::BTreeMap::<String, i32>::new();
    for event in events {
        match event["type"].as_str().unwrap() {
            "tool_execution_start" => *open.entry(event["call"]["id"].as_str().unwrap().to_owned()).or_default() += 1,
            "tool_execution_end" => {
                let id = event["call_id"].as_str().unwrap().to_owned();
                let count = open.entry(id.clone()).or_default();
                assert!(*count >= 1, "end without a start for {id}: {kinds:?}");
                *count -= 1;
            }
            "tool_execution_update" => {
                let id = event["call_id"].as_str().unwrap();
                assert!(open.get(id).is_some_and(|&c| c >= 1), "update outside its call {id}");
            }
            _ => {}
        }
    }
    assert!(open.values().all(|&c| c == 0), "unended calls: {open:?}");
    assert_eq!(
        kinds.iter().filter(|k| *k == "turn_start").count(),
        kinds.iter().filter(|k| *k == "turn_end").count(),
        "{kinds:?}"
    );
}

pub mod agents;
pub mod fixtures;
pub mod gemini_spec;
pub mod mcp;
pub mod openai_spec;
pub mod server;
pub mod tracer;

/// The API key every provider test uses, set in the environment variable
/// `TEST_KEY_ENV`; tests grep what ferrule emits for it.
pub const TEST_KEY: &str = "sk-ferrule-test-7Hq2LmX9pQ4vR8sT1uW6yZ3a";
pub const TEST_KEY_ENV: &str = "FERRULE_TEST_API_KEY";

/// An agent on `provider` talking to `base_url`, with the test key.
pub fn provider_agent(provider: &str, base_url: &str, model: Value, extra: Value, tools: Vec<Tool>) -> Agent {
    std::env::set_var(TEST_KEY_ENV, TEST_KEY);
    let mut config = json!({"model": {"provider": provider, "name": "test-model", "base_url": base_url,
                                      "api_key_env": TEST_KEY_ENV, "retry_backoff_ms": 5}});
    if let Value::Object(fields) = model {
        config["model"].as_object_mut().unwrap().extend(fields);
    }
    build(config, extra, tools)
}
pub mod wire;

/// The code and message of an error from the C ABI (freed); `None` for success.
pub fn taken(error: *mut ferrule::ffi::ferrule_error) -> Option<(u32, String)> {
    use ferrule::ffi::{ferrule_error_code, ferrule_error_free, ferrule_error_message};
    if error.is_null() {
        return None;
    }
    // SAFETY: a non-null error from the C ABI is live until freed here.
    unsafe {
        let message = ferrule_error_message(error);
        let text = String::from_utf8_lossy(std::slice::from_raw_parts(message.ptr.cast::<u8>(), message.len));
        let taken = (ferrule_error_code(error), text.into_owned());
        ferrule_error_free(error);
        Some(taken)
    }
}
