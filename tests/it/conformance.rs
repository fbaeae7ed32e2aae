//! The Rust runner of the conformance scenarios (`tests/conformance/`): each
//! scenario's tools and hooks are Rust functions made from their declared
//! behaviours, each run is observed through the Rust API, and the one judge
//! (`ferrule-conformance`) decides, as it does for every other runner. Every
//! scenario runs twice: on the scripted model its configuration names, and on
//! a host model (`"provider": "host"`) that replays the same script.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ferrule::agent::{Agent, AgentBuilder, AgentToolMode, AgentToolOptions, AgentToolSpec, Event, Run, RunInput};
use ferrule::hook::{Hook, HookDecision, HookOptions, HookRequest};
use ferrule::provider::{ScriptTurn, ScriptedGenerator};
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use ferrule_conformance::{Judge, Scenario};

use crate::common::tracer::Received;
use serde_json::{json, Value};

/// What the tools and hooks of one scenario share with its runner.
#[derive(Default)]
struct Shared {
    /// The run being observed, once it started (tools that inject wait for it).
    run: Mutex<Option<Run>>,
    /// Cancel handlers (token watchers) that ran in the current step.
    cancel_handlers: AtomicUsize,
    /// Every hook consultation of the current step: `{"stage", "payload"}`.
    hook_calls: Mutex<Vec<Value>>,
    /// The `traceparent` each call of the current step was given, by call id.
    traceparents: Mutex<serde_json::Map<String, Value>>,
}

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// A tool's result from a behaviour's `result`: a string is a text result.
fn result_of(value: &Value) -> ToolOutcome {
    match ToolResult::from_value(value.clone()) {
        Ok(result) => ToolOutcome::Completed(result),
        Err(problem) => ToolOutcome::Invalid(problem.message),
    }
}

/// Counts one cancel handler when `token` is cancelled (as the C runner's
/// `ferrule_tool_call_on_cancel` handler does): a task of its own, since ferrule
/// drops a cancelled call's future.
fn on_cancel(token: tokio_util::sync::CancellationToken, shared: &Arc<Shared>) {
    let shared = shared.clone();
    tokio::spawn(async move {
        token.cancelled().await;
        shared.cancel_handlers.fetch_add(1, Ordering::SeqCst);
    });
}

/// Does what `behaviour` says with one call.
async fn behave(behaviour: Value, call: Invocation, shared: Arc<Shared>) -> ToolOutcome {
    if behaviour["traceparent"] == true {
        let traceparent = call.trace().map(|trace| trace.traceparent()).unwrap_or_default();
        shared.traceparents.lock().unwrap().insert(call.id().to_owned(), traceparent.into());
    }
    if let Some(message) = behaviour.get("inject") {
        let run = loop {
            if let Some(run) = shared.run.lock().unwrap().clone() {
                break run;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        let message = serde_json::from_value(message.clone()).expect("an injectable message");
        if let Err(e) = run.inject(message) {
            eprintln!("inject failed: {e}");
        }
    }
    if behaviour["complete_on_cancel"] == true {
        on_cancel(call.cancellation().clone(), &shared);
        std::future::pending::<()>().await;
    }
    if behaviour["never_complete"] == true {
        call.cancellation().cancelled().await;
        return ToolOutcome::Completed(ToolResult::text("completed after cancellation"));
    }
    if let Some(ms) = behaviour["sleep_ms"].as_u64() {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    for update in behaviour["updates"].as_array().into_iter().flatten() {
        match ToolResult::from_value(update.clone()) {
            Ok(partial) => call.updates().send(partial).await,
            Err(problem) => return ToolOutcome::Invalid(problem.message),
        }
    }
    if let Some(message) = behaviour["fail"].as_str() {
        return ToolOutcome::Failed(message.to_owned());
    }
    if let Some(raw) = behaviour["result_json"].as_str() {
        return match ToolResult::from_json(raw) {
            Ok(result) => ToolOutcome::Completed(result),
            Err(problem) => ToolOutcome::Invalid(problem.message),
        };
    }
    if behaviour["echo"] == true {
        return ToolOutcome::Completed(ToolResult::text(call.arguments_json()));
    }
    if behaviour["attempt"] == true {
        return ToolOutcome::Completed(ToolResult::text(format!("attempt {}", call.attempt())));
    }
    result_of(&behaviour["result"])
}

/// A scenario tool as a Rust function.
fn tool(spec: &Value, shared: &Arc<Shared>) -> ferrule::Result<Tool> {
    let options = match spec.get("options") {
        Some(options) => ToolOptions::from_json(&options.to_string())?,
        None => ToolOptions::default(),
    };
    let behaviour = spec["behaviour"].clone();
    let shared = shared.clone();
    Tool::new(
        spec["name"].as_str().unwrap_or_default(),
        spec["description"].as_str().unwrap_or_default(),
        spec.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"})),
        options,
        move |call: Invocation| behave(behaviour.clone(), call, shared.clone()),
    )
}

/// A scenario hook: its decisions in turn, recorded consultations.
fn hook(spec: &Value, shared: &Arc<Shared>) -> ferrule::Result<Hook> {
    let stages = HookOptions::from_json(&spec["stages"].to_string())?.stages;
    let (spec, shared, next) = (spec.clone(), shared.clone(), Arc::new(AtomicUsize::new(0)));
    Hook::new(stages, move |request: HookRequest| {
        let (spec, shared) = (spec.clone(), shared.clone());
        let decision = spec["decisions"].get(next.fetch_add(1, Ordering::SeqCst)).cloned().unwrap_or(json!({}));
        async move {
            let payload: Value = serde_json::from_str(request.payload()).expect("a JSON payload");
            shared.hook_calls.lock().unwrap().push(json!({"stage": request.stage().name(), "payload": payload}));
            if spec["never_respond"] == true {
                on_cancel(request.cancellation().clone(), &shared);
                std::future::pending::<()>().await;
            }
            if spec["async"] == true {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            HookDecision::from_value(request.stage(), decision)
        }
    })
}

/// The name by which scenarios start the conformance MCP test server, which
/// the other runners find on their `PATH`.
const MCP_TEST_SERVER: &str = "ferrule-mcp-test-server";

/// `config` with the MCP test server named by its path in the target
/// directory of this test (built beside it, as part of the workspace).
fn with_mcp_test_server(mut config: Value) -> Value {
    let built = std::env::current_exe().ok().and_then(|exe| Some(exe.parent()?.parent()?.join(MCP_TEST_SERVER)));
    let servers = config.get_mut("mcp_servers").and_then(Value::as_object_mut);
    for server in servers.into_iter().flat_map(|servers| servers.values_mut()) {
        if let (Some(built), true) = (&built, server["command"] == MCP_TEST_SERVER) {
            assert!(built.exists(), "{} is missing: build it with the same profile as this test (cargo build -p ferrule-conformance, or make judge)", built.display());
            server["command"] = json!(built.display().to_string());
        }
    }
    config
}

/// `config` with a relative cassette path (`model.record.path`) made the
/// scenario directory's, as every runner reads it.
fn with_cassette_in_scenarios_dir(mut config: Value) -> Value {
    if let Some(path) = config.pointer_mut("/model/record/path") {
        let relative = path.as_str().filter(|path| Path::new(path).is_relative()).map(str::to_owned);
        if let Some(relative) = relative {
            *path = json!(scenarios_dir().join(relative).display().to_string());
        }
    }
    config
}

/// Which model the scenarios' agents run on.
#[derive(Clone, Copy, PartialEq)]
enum ModelMode {
    /// The scripted model, as the configuration names it.
    Scripted,
    /// The host's model, replaying the configuration's script: in Rust, a
    /// host model is a `Generator`, and the scripted one is that replay.
    Host,
}

/// The name the host model goes by in the configurations it replaces.
const HOST_MODEL: &str = "script";

/// `config` with its scripted model replaced by the host's (`"provider":
/// "host"`), and the script that model is to replay; `None` when the
/// configuration names no scripted model.
fn with_host_model(mut config: Value) -> (Value, Option<Vec<ScriptTurn>>) {
    if config["model"]["provider"] != "scripted" {
        return (config, None);
    }
    let model = config["model"].as_object_mut().expect("a model object");
    let script = serde_json::from_value(model.remove("script").unwrap_or(json!([]))).expect("a script");
    model.insert("provider".into(), json!("host"));
    model.insert("name".into(), json!(HOST_MODEL));
    (config, Some(script))
}

/// The scenario's agent (or one of its `agents`, whose document has the same
/// fields) with `tools`, and its own agents built first.
fn agent(document: &Value, tools: &Value, shared: &Arc<Shared>, mode: ModelMode) -> ferrule::Result<Agent> {
    let mut config = with_cassette_in_scenarios_dir(with_mcp_test_server(document["config"].clone()));
    let mut script = None;
    if mode == ModelMode::Host {
        (config, script) = with_host_model(config);
    }
    let mut builder = AgentBuilder::from_json(&config.to_string())?;
    if let Some(script) = script {
        builder.host_model(HOST_MODEL, Box::new(ScriptedGenerator::new(script)?))?;
    }
    for spec in tools.as_array().into_iter().flatten() {
        builder.add_tool(tool(spec, shared)?)?;
    }
    for spec in document["hooks"].as_array().into_iter().flatten() {
        builder.add_hook(hook(spec, shared)?);
    }
    for spec in document["agents"].as_array().into_iter().flatten() {
        let options = spec
            .get("options")
            .map_or(Ok(AgentToolOptions::default()), |options| AgentToolOptions::from_json(&options.to_string()))?;
        builder.add_agent(AgentToolSpec {
            name: spec["name"].as_str().unwrap_or_default().to_owned(),
            description: spec["description"].as_str().unwrap_or_default().to_owned(),
            agent: agent(spec, &spec["tools"], shared, mode)?,
            input_schema: None,
            mode: serde_json::from_value(spec["mode"].clone()).unwrap_or(AgentToolMode::Tool),
            options,
        })?;
    }
    builder.build()
}

/// Starts `input` and observes the run, or its refusal.
fn observe(agent: &Agent, input: &Value, expect: &Value, shared: &Arc<Shared>, tracer: Option<&Received>) -> Value {
    shared.cancel_handlers.store(0, Ordering::SeqCst);
    shared.hook_calls.lock().unwrap().clear();
    shared.traceparents.lock().unwrap().clear();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let on_event = move |event: &Event| sink.lock().unwrap().push(serde_json::to_value(event).unwrap());
    let started =
        RunInput::from_json(&input.to_string()).and_then(|input| agent.start(input, Some(Box::new(on_event))));
    let run = match started {
        Ok(run) => run,
        Err(error) => return json!({"start_error": error}),
    };
    *shared.run.lock().unwrap() = Some(run.clone());
    let result = run.wait_blocking().expect("the run ends");
    *shared.run.lock().unwrap() = None;
    // Handlers may run a moment after the run ends: wait for what is expected.
    if let Some(want) = expect["cancel_handlers"].as_u64() {
        let deadline = Instant::now() + Duration::from_secs(10);
        while (shared.cancel_handlers.load(Ordering::SeqCst) as u64) < want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let events = events.lock().unwrap().clone();
    let mut step = json!({
        "events": events,
        "result": serde_json::to_value(&*result).unwrap(),
        "hook_calls": shared.hook_calls.lock().unwrap().clone(),
        "cancel_handlers": shared.cancel_handlers.load(Ordering::SeqCst),
    });
    if expect.get("unused_recordings").is_some() {
        step["unused_recordings"] = serde_json::to_value(agent.unused_recordings()).unwrap();
    }
    if let Some(tracer) = tracer {
        let spans = tracer.trace_of(run.id());
        step["spans"] = spans.iter().map(|span| serde_json::to_value(&**span).unwrap()).collect();
        step["traceparents"] = Value::Object(shared.traceparents.lock().unwrap().clone());
    }
    step
}

/// Runs each of `calls` (a result's returned calls) as an `invoke` run on
/// `agent`, the `attempt`th time: their outcomes by call id.
fn run_returned(agent: &Agent, calls: &Value, attempt: u64) -> Value {
    let mut outcomes = serde_json::Map::new();
    for call in calls.as_array().into_iter().flatten() {
        let input =
            RunInput::from_json(&json!({"invoke": call, "attempt": attempt}).to_string()).expect("invoke input");
        let result = agent.start(input, None).expect("invoke").wait_blocking().expect("the invoke run ends");
        let outcome = serde_json::to_value(&result.outcome).unwrap();
        outcomes.insert(call["id"].as_str().unwrap_or_default().to_owned(), outcome);
    }
    Value::Object(outcomes)
}

/// Runs one scenario: its first run, then each resume from the last state.
fn run_scenario(scenario: &Scenario, mode: ModelMode) -> Value {
    let document = scenario.document();
    let shared = Arc::new(Shared::default());
    let mut steps = Vec::new();
    let agent = match agent(document, &document["tools"], &shared, mode) {
        Ok(agent) => agent,
        Err(error) => return json!({"runner": "rust", "scenario": scenario.name(), "steps": [{"runner_error": error}]}),
    };
    // A traced scenario holds the process's tracer while it runs.
    let tracer = (document["trace"] == true).then(Received::set);
    let tracer = tracer.as_ref();
    let first = observe(&agent, &document["input"], &document["expect"], &shared, tracer);
    let mut state = first.pointer("/result/state").cloned();
    let mut calls = first.pointer("/result/calls").cloned().unwrap_or(Value::Null);
    steps.push(first);
    for resume in document["resumes"].as_array().into_iter().flatten() {
        let Some(mut from) = state.clone().filter(Value::is_object) else { break };
        for (key, value) in resume["state_patch"].as_object().into_iter().flatten() {
            from[key] = value.clone();
        }
        let other = match resume["new_agent"] == true {
            true => match self::agent(document, resume.get("tools").unwrap_or(&document["tools"]), &shared, mode) {
                Ok(other) => Some(other),
                Err(error) => {
                    steps.push(json!({"runner_error": error}));
                    break;
                }
            },
            false => None,
        };
        let on = other.as_ref().unwrap_or(&agent);
        let input = match resume.get("run_returned") {
            Some(how) => {
                let results = run_returned(on, &calls, how["attempt"].as_u64().unwrap_or(1));
                json!({"resume": from, "results": results, "calls": "return"})
            }
            None => json!({"resume": from, "decisions": resume.get("decisions").cloned().unwrap_or(json!({}))}),
        };
        let step = observe(on, &input, &resume["expect"], &shared, tracer);
        if let Some(next) = step.pointer("/result/state") {
            state = Some(next.clone());
        }
        calls = step.pointer("/result/calls").cloned().unwrap_or(Value::Null);
        steps.push(step);
    }
    json!({"runner": "rust", "scenario": scenario.name(), "steps": steps})
}

/// Runs every scenario on the model `mode` says, and has the judge decide.
fn every_scenario_passes_the_judge(mode: ModelMode) {
    let judge = Judge::with_schema(&ferrule::schema::document());
    let scenarios = Scenario::read_all(&scenarios_dir()).expect("the scenarios read");
    assert!(scenarios.len() >= 38, "the scenarios are there: {}", scenarios.len());
    let failures: Vec<String> = scenarios
        .iter()
        .flat_map(|scenario| {
            let observation = run_scenario(scenario, mode);
            judge.judge(scenario, &observation).into_iter().map(|problem| format!("{}: {problem}", scenario.name()))
        })
        .collect();
    assert!(failures.is_empty(), "{} problems:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_conformance_scenario_passes_the_judge() {
    every_scenario_passes_the_judge(ModelMode::Scripted);
}

#[test]
fn every_conformance_scenario_passes_the_judge_on_a_host_model() {
    every_scenario_passes_the_judge(ModelMode::Host);
}
