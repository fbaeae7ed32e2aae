//! Agents as tools and handoffs, attacked: approvals inside called agents that
//! are asked again, batches that repeat a call id, results kept across a stop
//! that lose what they mean, a cancel after an agent stopped, forged keys, and
//! a handoff in an execute-only run. Each test asserts what docs/agents.md,
//! docs/approval.md or docs/json.md promise.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::agents::*;
use crate::common::*;
use ferrule::agent::{
    Agent, AgentBuilder, AgentToolMode, AgentToolOptions, AgentToolSpec, HandoffMessages, RunInput, RunResult,
    RunStatus,
};
use ferrule::error::ErrorCode;
use ferrule::tool::{Invocation, ToolOutcome, ToolResult};
use serde_json::{json, Value};

/// The tool `delete`, which needs approval; `calls` counts its runs.
fn delete(calls: Arc<Gauge>) -> ferrule::tool::Tool {
    tool("delete", json!({"needs_approval": true}), move |call: Invocation| {
        let calls = calls.clone();
        async move {
            let _counted = calls.enter();
            ToolOutcome::Completed(ToolResult::text(format!("deleted {}", call.arguments()["what"])))
        }
    })
}

/// A worker whose model asks to `delete` once, then answers "worker done".
fn careful_worker(calls: Arc<Gauge>) -> Agent {
    agent(
        json!([{"tool_calls": [call("d1", "delete", json!({"what": "old"}))]}, {"text": "worker done"}]),
        json!({}),
        vec![delete(calls)],
    )
}

/// The tool `note`; `notes` counts its runs.
fn note(notes: Arc<Gauge>) -> ferrule::tool::Tool {
    tool("note", json!({}), move |_call: Invocation| {
        let notes = notes.clone();
        async move {
            let _counted = notes.enter();
            ToolOutcome::Completed(ToolResult::text("noted"))
        }
    })
}

/// Resumes `state` on `agent`, deciding every key in `keys` with `decision`.
fn resume(agent: &Agent, state: &Value, keys: &[String], decision: Value) -> (Arc<RunResult>, Vec<Value>) {
    let decisions: serde_json::Map<String, Value> = keys.iter().map(|k| (k.clone(), decision.clone())).collect();
    let input = json!({"resume": state, "decisions": decisions}).to_string();
    let input = RunInput::from_json(&input).unwrap_or_else(|e| panic!("the state does not resume: {}", e.message));
    run_input(agent, input)
}

/// A boss whose model makes the calls `calls` (to `worker` and `tools`) in one
/// batch, then answers "boss done".
fn calling_worker(calls: Value, extra: Value, tools: Vec<ferrule::tool::Tool>, worker: &Agent) -> Agent {
    with_agents(json!([{"tool_calls": calls}, {"text": "boss done"}]), extra, tools, vec![as_tool("worker", worker)])
}

fn keys(result: &RunResult) -> Vec<String> {
    result.interruptions.iter().map(|i| i.key.clone()).collect()
}

fn state_of(result: &RunResult) -> Value {
    serde_json::to_value(result.state.as_ref().expect("a state")).unwrap()
}

// ---- approvals asked again -------------------------------------------------------

/// docs/approval.md: "When a resumed batch waits again (...), the decisions
/// already given are kept in the new state and are not asked again"; a worker
/// that gates two calls in turn stops the boss twice, and each state resumes.
#[test]
fn a_called_agent_that_asks_twice_resumes_twice() {
    let deletes = Arc::new(Gauge::default());
    let build = |deletes: Arc<Gauge>| {
        let worker = agent(
            json!([
                {"tool_calls": [call("d1", "delete", json!({"what": "old"}))]},
                {"tool_calls": [call("d2", "delete", json!({"what": "older"}))]},
                {"text": "worker done"}
            ]),
            json!({}),
            vec![delete(deletes)],
        );
        with_agents(
            json!([{"tool_calls": [call("c1", "worker", json!({"input": "clean"}))]}, {"text": "boss done"}]),
            json!({}),
            vec![],
            vec![as_tool("worker", &worker)],
        )
    };
    let (first, _) = run(&build(deletes.clone()), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["c1/d1"]);
    let (second, _) = resume(&build(deletes.clone()), &state_of(&first), &keys(&first), json!({"approve": true}));
    assert_eq!(second.status, RunStatus::Interrupted, "{:?}", second.error);
    assert_eq!(keys(&second), ["c1/d2"]);
    let (third, events) = resume(&build(deletes.clone()), &state_of(&second), &keys(&second), json!({"approve": true}));
    assert_eq!(third.status, RunStatus::Completed, "{:?}", third.error);
    assert_event_invariants(&events);
    assert_eq!(text(&tool_results(&third)[0]), "worker done", "the worker did not go on from its second state");
    assert_eq!(deletes.total(), 2);
}

/// Two agent calls of one batch run one at a time: the first stops, the batch
/// stops; resumed, the first finishes and the second stops. Its state must
/// resume as the first one did.
#[test]
fn agents_called_one_after_the_other_that_both_ask_resume_in_turn() {
    let deletes = Arc::new(Gauge::default());
    let build = |deletes: Arc<Gauge>| {
        calling_worker(
            json!([call("c1", "worker", json!({"input": "a"})), call("c2", "worker", json!({"input": "b"}))]),
            json!({"tool_execution": "sequential"}),
            vec![],
            &careful_worker(deletes),
        )
    };
    let (first, _) = run(&build(deletes.clone()), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["c1/d1"]);
    let (second, _) = resume(&build(deletes.clone()), &state_of(&first), &keys(&first), json!({"approve": true}));
    assert_eq!(second.status, RunStatus::Interrupted, "{:?}", second.error);
    assert_eq!(keys(&second), ["c2/d1"]);
    // The decision for c1/d1 was spent: it must not be kept for an agent that no longer waits.
    let (third, _) = resume(&build(deletes.clone()), &state_of(&second), &keys(&second), json!({"approve": true}));
    assert_eq!(third.status, RunStatus::Completed, "{:?}", third.error);
    let texts: Vec<String> = tool_results(&third).iter().map(text).collect();
    assert_eq!(texts, ["worker done", "worker done"]);
    assert_eq!(deletes.total(), 2);
}

/// docs/approval.md allows resuming "with a resuming agent that gates more
/// tools" and keeps the decisions given; here the agent call itself needs
/// approval in the resumed run. Whatever the resumed run asks, its state
/// resumes, the note that ran is not run again, and the worker deletes once.
#[test]
fn resuming_with_an_agent_that_gates_the_agent_call_leaves_a_state_that_resumes() {
    let (deletes, notes) = (Arc::new(Gauge::default()), Arc::new(Gauge::default()));
    let build = |gated: bool| {
        let mut spec = as_tool("worker", &careful_worker(deletes.clone()));
        spec.options.needs_approval = gated;
        with_agents(
            json!([
                {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("n1", "note", json!({}))]},
                {"text": "boss done"}
            ]),
            json!({"tool_execution": "parallel"}),
            vec![note(notes.clone())],
            vec![spec],
        )
    };
    let (mut result, _) = run(&build(false), "go");
    assert_eq!(result.status, RunStatus::Interrupted);
    assert_eq!(notes.total(), 1);
    for _ in 0..3 {
        if result.status != RunStatus::Interrupted {
            break;
        }
        result = resume(&build(true), &state_of(&result), &keys(&result), json!({"approve": true})).0;
    }
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(deletes.total(), 1);
    assert_eq!(notes.total(), 1, "the note ran again");
}

// ---- results kept across a stop ----------------------------------------------------

/// A response that repeats a call id: the first call is valid, the second an
/// error result (docs: "a repeated call id"). When an agent of the batch
/// stops, the kept results must still be the first call's and the second's.
#[test]
fn a_repeated_call_id_does_not_overwrite_the_kept_result_of_the_call_that_ran() {
    let notes = Arc::new(Gauge::default());
    let build = |notes: Arc<Gauge>| {
        with_agents(
            json!([
                {"tool_calls": [
                    call("c1", "worker", json!({"input": "clean up"})),
                    call("n1", "note", json!({})),
                    call("n1", "note", json!({}))
                ]},
                {"text": "boss done"}
            ]),
            json!({"tool_execution": "parallel"}),
            vec![note(notes)],
            vec![as_tool("worker", &careful_worker(Arc::default()))],
        )
    };
    let (first, _) = run(&build(notes.clone()), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(notes.total(), 1);
    let (resumed, _) = resume(&build(notes.clone()), &state_of(&first), &keys(&first), json!({"approve": true}));
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    let results = tool_results(&resumed);
    assert_eq!(text(&results[0]), "worker done");
    assert_eq!(text(&results[1]), "noted", "the result of the call that ran was replaced");
    assert_eq!(results[1]["is_error"], false);
    assert!(text(&results[2]).contains("already used"), "{}", text(&results[2]));
}

/// The same with the repeated id on the agent call: the run stops for the
/// first call's agent, and its state must resume.
#[test]
fn a_repeated_agent_call_id_leaves_a_state_that_resumes() {
    let deletes = Arc::new(Gauge::default());
    let build = |deletes: Arc<Gauge>| {
        calling_worker(
            json!([call("c1", "worker", json!({"input": "a"})), call("c1", "worker", json!({"input": "b"}))]),
            json!({}),
            vec![],
            &careful_worker(deletes),
        )
    };
    let (first, _) = run(&build(deletes.clone()), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["c1/d1"]);
    let (resumed, _) = resume(&build(deletes.clone()), &state_of(&first), &keys(&first), json!({"approve": true}));
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    assert_eq!(deletes.total(), 1);
    let texts: Vec<String> = tool_results(&resumed).iter().map(text).collect();
    assert_eq!(texts[0], "worker done");
    assert!(texts[1].contains("already used"), "{texts:?}");
}

/// docs/json.md: `on_error: fatal` "ends the run failed with TOOL_FAILED once
/// the batch has finished". A fatal failure in a batch whose agent stopped for
/// approval must end the run failed, now or when the batch finishes on resume;
/// it may not be forgotten.
#[test]
fn a_fatal_failure_beside_an_agent_that_stopped_is_not_forgotten() {
    let build = || {
        let boom = tool("boom", json!({"on_error": "fatal"}), |_: Invocation| async {
            ToolOutcome::Failed("the disk is on fire".into())
        });
        calling_worker(
            json!([call("c1", "worker", json!({"input": "clean up"})), call("b1", "boom", json!({}))]),
            json!({"tool_execution": "parallel"}),
            vec![boom],
            &careful_worker(Arc::default()),
        )
    };
    let (first, _) = run(&build(), "go");
    let last = match first.status {
        RunStatus::Interrupted => resume(&build(), &state_of(&first), &keys(&first), json!({"approve": true})).0,
        _ => first,
    };
    assert_eq!(last.status, RunStatus::Failed, "the fatal failure was forgotten: {:?}", last.final_message);
    assert_eq!(last.error.as_ref().unwrap().code, ErrorCode::ToolFailed);
}

/// docs/json.md: a deferred tool is disclosed by another tool's result naming
/// it in `added_tools`, "disclosure lasts for the rest of the run". A result
/// kept across an agent's stop must still disclose.
#[test]
fn a_tool_disclosed_beside_an_agent_that_stopped_stays_disclosed() {
    let build = || {
        let unlock = tool("authenticate", json!({}), |_: Invocation| async {
            ToolOutcome::Completed(ToolResult {
                added_tools: vec!["read_account".into()],
                ..ToolResult::text("signed in")
            })
        });
        let hidden = tool("read_account", json!({"deferred": true}), |_: Invocation| async {
            ToolOutcome::Completed(ToolResult::text("balance 10"))
        });
        with_agents(
            json!([
                {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("a1", "authenticate", json!({}))]},
                {"tool_calls": [call("r1", "read_account", json!({}))]},
                {"text": "boss done"}
            ]),
            json!({"tool_execution": "parallel"}),
            vec![unlock, hidden],
            vec![as_tool("worker", &careful_worker(Arc::default()))],
        )
    };
    let (first, _) = run(&build(), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    let (resumed, _) = resume(&build(), &state_of(&first), &keys(&first), json!({"approve": true}));
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    let texts: Vec<String> = tool_results(&resumed).iter().map(text).collect();
    assert_eq!(texts, ["worker done", "signed in", "balance 10"]);
}

// ---- a cancel after an agent stopped ---------------------------------------------

/// docs/json.md: "Every tool_execution_start gets exactly one
/// tool_execution_end ... except the call of an agent that stopped for
/// approval, which ends in the resumed run". A run cancelled after its agent
/// stopped is never resumed, so that call must end in it.
#[test]
fn a_run_cancelled_after_its_agent_stopped_ends_the_agent_s_call() {
    let tokens = Tokens::default();
    let parent = with_agents(
        json!([
            {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("w1", "wait", json!({}))]},
            {"text": "never"}
        ]),
        json!({"tool_execution": "parallel"}),
        vec![waiter(tokens.clone())],
        vec![as_tool("worker", &careful_worker(Arc::default()))],
    );
    let (handle, events) = start(&parent, "go");
    // Until the worker's run ended (it stopped for approval) and `wait` runs.
    let stopped = || {
        events.lock().unwrap().iter().any(|e| e["type"] == "agent_event" && e["event"]["type"] == "run_end")
            && !tokens.lock().unwrap().is_empty()
    };
    let waited = std::time::Instant::now();
    while !stopped() {
        assert!(waited.elapsed() < Duration::from_secs(10), "the worker never stopped");
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(50));
    handle.cancel();
    let result = handle.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    let events = events.lock().unwrap().clone();
    assert_event_invariants(&events);
}

// ---- forged keys --------------------------------------------------------------------

/// docs/approval.md: "a state that was altered out of shape, a repeated call
/// id ... makes ferrule_agent_start fail with INVALID_ARG". Two keys that
/// unescape to one call id make the call wait twice, and which decision wins
/// would be left to a hash map's order.
#[test]
fn two_keys_for_one_call_id_are_refused() {
    let careful = agent(
        json!([{"tool_calls": [call("a%b", "delete", json!({"what": "old"}))]}, {"text": "done"}]),
        json!({}),
        vec![delete(Arc::default())],
    );
    let (first, _) = run(&careful, "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["a%25b"]);
    let mut forged = state_of(&first);
    forged["awaiting"] = json!(["a%25b", "a%b"]);
    let input = json!({"resume": forged, "decisions": {
        "a%25b": {"approve": true}, "a%b": {"approve": false}
    }})
    .to_string();
    match RunInput::from_json(&input).and_then(|input| careful.start(input, None)) {
        Ok(run) => panic!("a call waiting under two keys was resumed: {:?}", run.wait_blocking().unwrap().status),
        Err(error) => assert_eq!(error.code, ErrorCode::InvalidArg, "{}", error.message),
    }
}

// ---- handoffs --------------------------------------------------------------------------

/// docs/json.md: an execute-only run "ends completed ... with messages = the
/// context, the assistant message and the tool results". A handoff made by the
/// executed message may not take the executed calls and results out of it.
#[test]
fn an_execute_only_run_keeps_the_calls_it_executed_through_a_handoff() {
    let next = agent(json!([{"text": "never asked"}]), json!({}), vec![]);
    let spec = AgentToolSpec {
        mode: AgentToolMode::Handoff,
        options: AgentToolOptions {
            handoff_messages: Some(HandoffMessages::WithoutToolCalls),
            ..AgentToolOptions::default()
        },
        ..as_tool("next", &next)
    };
    let front = with_agents(json!([]), json!({}), vec![echo("echo")], vec![spec]);
    let input = json!({
        "messages": [{"role": "user", "content": "pass me on"}],
        "execute": {"role": "assistant", "content": "on it", "stop_reason": "tool_use", "tool_calls": [
            {"id": "e1", "name": "echo", "arguments": "{\"text\": \"echoed\"}"},
            {"id": "h1", "name": "transfer_to_next", "arguments": "{}"}
        ]}
    })
    .to_string();
    let (result, _) = run_input(&front, RunInput::from_json(&input).unwrap());
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.rounds, 0);
    let messages = serde_json::to_value(&result.messages).unwrap();
    let roles: Vec<&str> = messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"], "{messages}");
    assert_eq!(messages[1]["tool_calls"].as_array().map(Vec::len), Some(2), "{messages}");
}

// ---- order and shape of nested interruptions ----------------------------------------

/// The state's `awaiting` (schema: "The keys of the calls that wait for a
/// decision (an interruption's `key`), in call order") and so the
/// interruptions: call order, not the order the agents happened to stop in.
#[test]
fn interruptions_of_agents_that_stop_out_of_order_come_in_call_order() {
    let gauge = Arc::new(Gauge::default());
    let slow = agent(
        json!([
            {"tool_calls": [call("s1", "nap", json!({"ms": 300}))]},
            {"tool_calls": [call("d1", "delete", json!({"what": "slow"}))]},
            {"text": "slow done"}
        ]),
        json!({}),
        vec![sleeper("nap", json!({}), gauge), delete(Arc::default())],
    );
    let parent = with_agents(
        json!([
            {"tool_calls": [call("c1", "slow", json!({"input": "a"})), call("c2", "quick", json!({"input": "b"}))]},
            {"text": "boss done"}
        ]),
        json!({"tool_execution": "parallel"}),
        vec![],
        vec![as_tool("slow", &slow), as_tool("quick", &careful_worker(Arc::default()))],
    );
    let (first, _) = run(&parent, "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["c1/d1", "c2/d1"]);
    assert_eq!(state_of(&first)["awaiting"], json!(["c1/d1", "c2/d1"]));
}

/// A state whose `nested` puts an agent's state under a call of a host tool
/// was "altered out of shape": the decision for the key under it would reach
/// nothing while the host tool ran. It must be refused with INVALID_ARG.
#[test]
fn a_nested_state_under_a_call_of_a_host_tool_is_refused() {
    let notes = Arc::new(Gauge::default());
    let build = |notes: Arc<Gauge>| {
        calling_worker(
            json!([call("c1", "worker", json!({"input": "clean up"})), call("n1", "note", json!({}))]),
            json!({"tool_execution": "parallel"}),
            vec![note(notes)],
            &careful_worker(Arc::default()),
        )
    };
    let (first, _) = run(&build(notes.clone()), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    let mut forged = state_of(&first);
    let waiting = forged["messages"].as_array().unwrap().len() - 1;
    forged["messages"][waiting]["tool_calls"][0]["name"] = json!("note");
    forged["messages"][waiting]["tool_calls"][0]["arguments"] = json!("{}");
    let input = json!({"resume": forged, "decisions": {"c1/d1": {"approve": true}}}).to_string();
    let later = Arc::new(Gauge::default());
    match RunInput::from_json(&input).and_then(|input| build(later.clone()).start(input, None)) {
        Ok(run) => {
            let result = run.wait_blocking().unwrap();
            panic!(
                "resumed ({:?}); the decision for c1/d1 reached nothing and c1 ran {} time(s) as a note",
                result.status,
                later.total()
            )
        }
        Err(error) => assert_eq!(error.code, ErrorCode::InvalidArg, "{}", error.message),
    }
}

// ---- a handoff lets go of the agent handing off -----------------------------------

/// Records, when dropped, the thread it was dropped on and whether the run's
/// `run_end` had been delivered by then.
struct Probe {
    events: Arc<Mutex<Vec<Value>>>,
    seen: Arc<Mutex<Option<(String, bool)>>>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        let ended = self.events.lock().map(|e| e.iter().any(|e| e["type"] == "run_end")).unwrap_or(false);
        *self.seen.lock().unwrap() = Some((thread, ended));
    }
}

/// run_task.rs (and docs/c.md for `free_user_data`): a run lets go of its
/// agent after its `run_end`, and when that was the last hold the tools' user
/// data is released on a tool callback thread, inside the run's scope. A run
/// that handed off holds the agent it started with until then too.
#[test]
fn a_handoff_does_not_release_the_first_agent_s_tools_in_the_middle_of_the_run() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::new(Mutex::new(None));
    let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = Probe { events: events.clone(), seen: seen.clone() };
    let gate_open = open.clone();
    let gate = tool("gate", json!({}), move |_call: Invocation| {
        let _held = &probe;
        let open = gate_open.clone();
        async move {
            while !open.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            ToolOutcome::Completed(ToolResult::text("open"))
        }
    });
    let next = agent(json!([{}, {"text": "next answers"}]), json!({}), vec![]);
    let spec = AgentToolSpec { mode: AgentToolMode::Handoff, ..as_tool("next", &next) };
    let front = with_agents(
        json!([{"tool_calls": [call("g1", "gate", json!({})), call("h1", "transfer_to_next", json!({}))]}]),
        json!({}),
        vec![gate],
        vec![spec],
    );
    drop(next);
    let sink = events.clone();
    let handle = front
        .start(
            RunInput::prompt("go"),
            Some(Box::new(move |event: &ferrule::agent::Event| {
                sink.lock().unwrap().push(serde_json::to_value(event).unwrap())
            })),
        )
        .unwrap();
    // The run holds the last handle of the agent it started with.
    drop(front);
    open.store(true, std::sync::atomic::Ordering::SeqCst);
    let result = handle.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.agent.as_deref(), Some("next"));
    let (thread, ended) = seen.lock().unwrap().clone().expect("the first agent's tools were never released");
    assert!(ended, "released before run_end, on {thread}");
    assert!(thread.starts_with("ferrule-cb-"), "released on {thread}");
}

// ---- adding agents -------------------------------------------------------------------

/// docs/agents.md: `name` is "checked as a tool's name" (ferrule.h: 1 to 64
/// characters). An empty handoff name would make the tool `transfer_to_` and
/// a run result naming the agent "".
#[test]
fn a_handoff_with_an_empty_name_is_refused() {
    let next = agent(json!([{"text": "x"}]), json!({}), vec![]);
    let mut builder = AgentBuilder::from_json(r#"{"model": {"provider": "scripted"}}"#).unwrap();
    let spec = AgentToolSpec { mode: AgentToolMode::Handoff, ..as_tool("", &next) };
    let error = builder.add_agent(spec).expect_err("a handoff named \"\" was added");
    assert_eq!(error.code, ErrorCode::InvalidArg, "{}", error.message);
}

/// docs/agents.md: "Unknown fields and an option of the other mode are
/// INVALID_ARG" — also when the option given has its default value.
#[test]
fn an_option_of_the_other_mode_is_refused_even_at_its_default() {
    use ferrule::ffi::*;
    const CONFIG: &str = r#"{"model": {"provider": "scripted"}}"#;
    let new_builder = || {
        let mut builder = std::ptr::null_mut();
        assert!(
            taken(unsafe { ferrule_agent_builder_new(CONFIG.as_ptr().cast(), CONFIG.len(), &mut builder) }).is_none()
        );
        builder
    };
    let mut child = std::ptr::null_mut();
    assert!(taken(unsafe { ferrule_agent_build(new_builder(), &mut child) }).is_none());
    for (mode, options) in [("tool", r#"{"handoff_messages": "all"}"#), ("handoff", r#"{"timeout_ms": 0}"#)] {
        let builder = new_builder();
        let spec = ferrule_agent_tool_spec {
            struct_size: std::mem::size_of::<ferrule_agent_tool_spec>() as u32,
            name: c"helper".as_ptr(),
            name_len: 6,
            description: c"helps".as_ptr(),
            description_len: 5,
            agent: child,
            input_schema: std::ptr::null(),
            input_schema_len: 0,
            mode: mode.as_ptr().cast(),
            mode_len: mode.len(),
            options: options.as_ptr().cast(),
            options_len: options.len(),
        };
        let error = taken(unsafe { ferrule_agent_builder_add_agent(builder, &spec) });
        unsafe { ferrule_agent_builder_free(builder) };
        let (code, message) = error.unwrap_or_else(|| panic!("{mode} took {options}"));
        assert_eq!(code, ErrorCode::InvalidArg as u32, "{message}");
    }
    unsafe { ferrule_agent_free(child) };
}
