//! Agents as tools and handoffs, reviewed after the hardening commit: what a
//! resumed batch carries over when its calls do not all take it, the checks
//! of a state's nested states, and what the conformance judge lets pass.

use std::sync::{Arc, Mutex};

use crate::common::agents::*;
use crate::common::*;
use ferrule::agent::{Agent, RunInput, RunResult, RunStatus};
use ferrule::error::ErrorCode;
use ferrule::hook::{Hook, HookDecision, HookRequest, HookStage};
use ferrule::tool::{Invocation, ToolOutcome, ToolResult};
use ferrule_conformance::{Judge, Scenario};
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

/// A worker whose model asks to `delete` twice in turn, then answers.
fn twice_careful_worker(calls: Arc<Gauge>) -> Agent {
    agent(
        json!([
            {"tool_calls": [call("d1", "delete", json!({"what": "old"}))]},
            {"tool_calls": [call("d2", "delete", json!({"what": "older"}))]},
            {"text": "worker done"}
        ]),
        json!({}),
        vec![delete(calls)],
    )
}

/// The tool `note` with `options`; `notes` counts its runs.
fn note(options: Value, notes: Arc<Gauge>) -> ferrule::tool::Tool {
    tool("note", options, move |_call: Invocation| {
        let notes = notes.clone();
        async move {
            let _counted = notes.enter();
            ToolOutcome::Completed(ToolResult::text("noted"))
        }
    })
}

fn keys(result: &RunResult) -> Vec<String> {
    result.interruptions.iter().map(|i| i.key.clone()).collect()
}

fn state_of(result: &RunResult) -> Value {
    serde_json::to_value(result.state.as_ref().expect("a state")).unwrap()
}

/// Starts a resume of `state` on `agent` with every key in `keys` approved.
fn start_resume(agent: &Agent, state: &Value, keys: &[String]) -> ferrule::Result<Arc<RunResult>> {
    let decisions: serde_json::Map<String, Value> =
        keys.iter().map(|k| (k.clone(), json!({"approve": true}))).collect();
    let input = RunInput::from_json(&json!({"resume": state, "decisions": decisions}).to_string())?;
    let run = agent.start(input, None)?;
    Ok(run.wait_blocking().unwrap())
}

fn resume(agent: &Agent, state: &Value, keys: &[String]) -> Arc<RunResult> {
    start_resume(agent, state, keys).unwrap_or_else(|e| panic!("the state does not resume: {}", e.message))
}

// ---- a resumed batch whose agent call does not take what was kept for it --------

/// docs/approval.md: "When a resumed batch waits again (a resuming agent that
/// gates more tools), the decisions already given are kept in the new state";
/// a state resumes. Here the boss runs its calls one at a time: the worker's
/// call stops, the note never starts. Resumed on a boss whose note needs
/// approval, the batch asks about the note before the worker's call goes on;
/// the state it writes must resume.
#[test]
fn a_resume_that_gates_a_call_not_yet_started_leaves_a_state_that_resumes() {
    let (deletes, notes) = (Arc::new(Gauge::default()), Arc::new(Gauge::default()));
    let build = |note_options: Value| {
        with_agents(
            json!([
                {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("n1", "note", json!({}))]},
                {"text": "boss done"}
            ]),
            json!({"tool_execution": "sequential"}),
            vec![note(note_options, notes.clone())],
            vec![as_tool("worker", &careful_worker(deletes.clone()))],
        )
    };
    let (first, _) = run(&build(json!({})), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["c1/d1"]);
    assert_eq!(notes.total(), 0, "the note started after the worker stopped");

    let gated = build(json!({"needs_approval": true}));
    let second = resume(&gated, &state_of(&first), &keys(&first));
    assert_eq!(second.status, RunStatus::Interrupted, "{:?}", second.error);
    assert_eq!(keys(&second), ["n1"]);

    let third = start_resume(&gated, &state_of(&second), &keys(&second));
    let third = third.unwrap_or_else(|e| panic!("the state the resumed run wrote is refused: {}", e.message));
    assert_eq!(third.status, RunStatus::Completed, "{:?}", third.error);
    assert_eq!(deletes.total(), 1);
    assert_eq!(notes.total(), 1);
}

/// A `tool_call` hook that denies the call `id` when it has seen it before
/// (an idempotency guard): docs/hooks.md says a resumed batch is consulted at
/// `tool_call` again. `seen` is shared by the agents built with it.
fn deny_repeated(id: &'static str, seen: Arc<Mutex<Vec<String>>>) -> Hook {
    Hook::new(vec![HookStage::ToolCall], move |request: HookRequest| {
        let payload: Value = serde_json::from_str(request.payload()).unwrap();
        let call_id = payload["call"]["id"].as_str().unwrap().to_owned();
        let mut seen = seen.lock().unwrap();
        let decision = match call_id == id && seen.contains(&call_id) {
            true => json!({"deny": "this call id was used already"}),
            false => json!({}),
        };
        seen.push(call_id);
        let stage = request.stage();
        async move { HookDecision::from_value(stage, decision) }
    })
    .unwrap()
}

/// Two agents of one batch stop; on resume a `tool_call` hook denies the
/// second's call while the first goes on and stops once more. The state the
/// resumed run writes must resume (agents.md: "a resumed agent that stops
/// once more stops the calling run once more"; a state resumes).
#[test]
fn a_hook_denying_an_agent_call_that_goes_on_leaves_a_state_that_resumes() {
    let deletes = Arc::new(Gauge::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let build = || {
        let mut builder = ferrule::agent::AgentBuilder::from_json(
            &json!({"tool_execution": "parallel", "model": {"provider": "scripted", "script": [
                {"tool_calls": [call("c1", "slow", json!({"input": "a"})), call("c2", "quick", json!({"input": "b"}))]},
                {"text": "boss done"}
            ]}})
            .to_string(),
        )
        .unwrap();
        builder.add_agent(as_tool("slow", &twice_careful_worker(deletes.clone()))).unwrap();
        builder.add_agent(as_tool("quick", &careful_worker(deletes.clone()))).unwrap();
        builder.add_hook(deny_repeated("c2", seen.clone()));
        builder.build().unwrap()
    };
    let (first, _) = run(&build(), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(keys(&first), ["c1/d1", "c2/d1"]);
    let second = resume(&build(), &state_of(&first), &keys(&first));
    assert_eq!(second.status, RunStatus::Interrupted, "{:?}", second.error);
    assert_eq!(keys(&second), ["c1/d2"]);
    if let Err(error) = start_resume(&build(), &state_of(&second), &keys(&second)) {
        panic!("the state the resumed run wrote is refused: {}", error.message);
    }
}

// ---- nested states checked only when the agent starts -------------------------

/// docs/approval.md: "a tool the agent lacks makes ferrule_agent_start fail
/// with INVALID_ARG ...; nothing runs, and the state can still be resumed."
/// Resumed on a boss whose worker no longer has `delete` (the tool the
/// waiting call `c1/d1` runs), the start must be refused; instead the boss's
/// batch runs and the run goes on.
#[test]
fn a_resume_on_an_agent_whose_called_agent_lacks_the_waiting_tool_is_refused() {
    let notes = Arc::new(Gauge::default());
    let build = |worker: Agent| {
        with_agents(
            json!([
                {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("n1", "note", json!({}))]},
                {"text": "boss done"}
            ]),
            json!({"tool_execution": "sequential"}),
            vec![note(json!({}), notes.clone())],
            vec![as_tool("worker", &worker)],
        )
    };
    let (first, _) = run(&build(careful_worker(Arc::default())), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    let toolless = agent(json!([{"text": "worker done"}]), json!({}), vec![]);
    match start_resume(&build(toolless), &state_of(&first), &keys(&first)) {
        Err(error) => assert_eq!(error.code, ErrorCode::InvalidArg, "{}", error.message),
        Ok(result) => panic!(
            "resumed ({:?}, the note ran {} time(s)); results: {:?}",
            result.status,
            notes.total(),
            tool_results(&result).iter().map(text).collect::<Vec<_>>()
        ),
    }
}

// ---- a cancel before the resumed batch runs ---------------------------------------

/// docs/agents.md: "calls that had finished keep their results (they do not
/// run again)". A resumed run cancelled before its batch runs loses them: the
/// note ran (its events were delivered, its effect happened) in the run that
/// stopped, yet the cancelled run's transcript does not show it, so a host that
/// goes on from that transcript has the model take the note again.
#[test]
fn a_resumed_run_cancelled_before_its_batch_keeps_the_results_of_calls_that_ran() {
    let notes = Arc::new(Gauge::default());
    let boss = with_agents(
        json!([
            {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("n1", "note", json!({}))]},
            {"text": "boss done"}
        ]),
        json!({"tool_execution": "parallel"}),
        vec![note(json!({}), notes.clone())],
        vec![as_tool("worker", &careful_worker(Arc::default()))],
    );
    let (first, _) = run(&boss, "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(notes.total(), 1);
    let input = json!({"resume": state_of(&first), "decisions": {"c1/d1": {"approve": true}}}).to_string();
    for _ in 0..20 {
        let handle = boss.start(RunInput::from_json(&input).unwrap(), None).unwrap();
        handle.cancel();
        let result = handle.wait_blocking().unwrap();
        // The cancel may come after the run ended: n1's result stays either way.
        assert!(matches!(result.status, RunStatus::Cancelled | RunStatus::Completed), "{:?}", result.status);
        let ids: Vec<Value> = tool_results(&result).iter().map(|r| r["tool_call_id"].clone()).collect();
        assert!(ids.contains(&json!("n1")), "the result of n1, which ran, is gone: {ids:?}");
    }
}

// ---- a handoff that will not be made is asked about -----------------------------

/// docs/agents.md: "only the first handoff of a batch is made (later ones
/// get an error result)". A later handoff that needs approval still stops
/// the run for the host's decision, and once approved it is not made: the
/// host was asked about a call that could never run.
#[test]
fn a_second_handoff_that_will_not_be_made_does_not_stop_the_run_for_approval() {
    let (a, b) = (
        agent(json!([{}, {"text": "a here"}]), json!({}), vec![]),
        agent(json!([{}, {"text": "b"}]), json!({}), vec![]),
    );
    let gated = ferrule::agent::AgentToolSpec {
        mode: ferrule::agent::AgentToolMode::Handoff,
        options: ferrule::agent::AgentToolOptions { needs_approval: true, ..Default::default() },
        ..as_tool("b", &b)
    };
    let front = with_agents(
        json!([{"tool_calls": [call("h1", "transfer_to_a", json!({})), call("h2", "transfer_to_b", json!({}))]}]),
        json!({}),
        vec![],
        vec![ferrule::agent::AgentToolSpec { mode: ferrule::agent::AgentToolMode::Handoff, ..as_tool("a", &a) }, gated],
    );
    let (result, _) = run(&front, "go");
    assert_ne!(
        result.status,
        RunStatus::Interrupted,
        "the run stopped for {:?}, a handoff that only the first handoff's error can answer",
        keys(&result)
    );
}

// ---- the conformance judge ----------------------------------------------------------

/// A scenario tool with the behaviours 042 and 043 use.
fn scenario_tool(spec: &Value) -> ferrule::tool::Tool {
    let behaviour = spec["behaviour"].clone();
    let options: ferrule::tool::ToolOptions = serde_json::from_value(spec["options"].clone()).unwrap();
    ferrule::tool::Tool::new(
        spec["name"].as_str().unwrap(),
        "scenario tool",
        json!({"type": "object"}),
        options,
        move |call: Invocation| {
            let behaviour = behaviour.clone();
            async move {
                if behaviour["complete_on_cancel"] == true {
                    call.cancellation().cancelled().await;
                    std::future::pending::<()>().await;
                }
                ToolOutcome::Completed(ToolResult::text(call.arguments_json()))
            }
        },
    )
    .unwrap()
}

/// The agent of a scenario document (or of one of its `agents`).
fn scenario_agent(document: &Value) -> Agent {
    let mut builder = ferrule::agent::AgentBuilder::from_json(&document["config"].to_string()).unwrap();
    for spec in document["tools"].as_array().into_iter().flatten() {
        builder.add_tool(scenario_tool(spec)).unwrap();
    }
    for spec in document["agents"].as_array().into_iter().flatten() {
        builder.add_agent(as_tool(spec["name"].as_str().unwrap(), &scenario_agent(spec))).unwrap();
    }
    builder.build().unwrap()
}

/// A scenario of tests/conformance, and a faithful observation of its one
/// run by the Rust API (`cancel_handlers` as the scenario expects).
fn observed(name: &str) -> (Scenario, Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/conformance/{name}.json"));
    let scenario = Scenario::read(&path).unwrap();
    let document = scenario.document().clone();
    let (result, events) =
        run_input(&scenario_agent(&document), RunInput::from_json(&document["input"].to_string()).unwrap());
    let step = json!({
        "events": events,
        "result": serde_json::to_value(&*result).unwrap(),
        "hook_calls": [],
        "cancel_handlers": document["expect"]["cancel_handlers"].as_u64().unwrap_or(0),
    });
    (scenario, json!({"runner": "review", "scenario": name, "steps": [step]}))
}

fn judged(scenario: &Scenario, observation: &Value) -> Vec<String> {
    Judge::with_schema(&ferrule::schema::document()).judge(scenario, observation)
}

fn events_mut(observation: &mut Value) -> &mut Vec<Value> {
    observation["steps"][0]["events"].as_array_mut().unwrap()
}

/// docs/agents.md: a called agent's events arrive "between the call's
/// tool_execution_start and tool_execution_end"; "Events of a nested run that
/// come after its call ended are not delivered". An observation whose nested
/// events of c1 all come after c1's end must fail 042.
#[test]
fn the_judge_fails_nested_events_delivered_after_their_call_ended() {
    let (scenario, mut observation) = observed("042_agent_as_tool");
    assert_eq!(judged(&scenario, &observation), Vec::<String>::new(), "the faithful observation fails");
    let events = events_mut(&mut observation);
    let of_c1 = |e: &Value| e["type"] == "agent_event" && e["call_id"] == "c1";
    let moved: Vec<Value> = events.iter().filter(|e| of_c1(e)).cloned().collect();
    events.retain(|e| !of_c1(e));
    let end = events.iter().position(|e| e["type"] == "tool_execution_end" && e["call_id"] == "c1").unwrap();
    events.splice(end + 1..end + 1, moved);
    let problems = judged(&scenario, &observation);
    assert!(!problems.is_empty(), "nested events after their call's end passed the judge");
}

/// The same for 043, the scenario of a cancelled tree: the nested run goes on
/// after its call ended (a tool end, a turn end and a run_end of the worker
/// after the calling run's `tool_execution_end` of c1). The judge infers from
/// the observation whether the nested run was whole, so the late events pass.
#[test]
fn the_judge_fails_a_cancelled_agent_s_events_after_its_call_ended() {
    let (scenario, mut observation) = observed("043_agent_tree_cancelled");
    assert_eq!(judged(&scenario, &observation), Vec::<String>::new(), "the faithful observation fails");
    let events = events_mut(&mut observation);
    let end = events.iter().position(|e| e["type"] == "tool_execution_end" && e["call_id"] == "c1").unwrap();
    let wrapped = |event: Value| {
        json!({"type": "agent_event", "run_id": events[0]["run_id"], "call_id": "c1",
                                         "agent": "worker", "depth": 1, "event": event})
    };
    let nested_run = events.iter().find(|e| e["type"] == "agent_event").unwrap()["event"]["run_id"].clone();
    let late = vec![
        wrapped(json!({"type": "tool_execution_end", "run_id": nested_run, "call_id": "w1", "name": "wait",
                       "result": {"content": [{"type": "text", "text": "late"}]}, "is_error": false})),
        wrapped(json!({"type": "turn_end", "run_id": nested_run, "turn": 1})),
        wrapped(
            json!({"type": "run_end", "run_id": nested_run, "status": "cancelled", "result": {"status": "cancelled"}}),
        ),
    ];
    events.splice(end + 1..end + 1, late);
    let problems = judged(&scenario, &observation);
    assert!(!problems.is_empty(), "a nested run that went on after its call ended passed the judge");
}

/// A nested run without `run_end` is taken as one cut short, and then its
/// turns and calls are not checked at all: a `turn_end` of a turn that never
/// started and the end of a call that never started pass 043.
#[test]
fn the_judge_checks_the_order_of_a_nested_run_cut_short() {
    let (scenario, mut observation) = observed("043_agent_tree_cancelled");
    let events = events_mut(&mut observation);
    let first = events.iter().position(|e| e["type"] == "agent_event").unwrap();
    let mut bogus = events[first].clone();
    bogus["event"] = json!({"type": "turn_end", "run_id": bogus["event"]["run_id"], "turn": 9});
    let mut orphan = bogus.clone();
    orphan["event"] = json!({"type": "tool_execution_end", "run_id": bogus["event"]["run_id"], "call_id": "zz",
                             "name": "wait", "result": {"content": []}, "is_error": false});
    events.splice(first + 1..first + 1, [bogus, orphan]);
    let problems = judged(&scenario, &observation);
    assert!(!problems.is_empty(), "turn_end 9 and the end of a call that never started passed the judge");
}

/// `depth` and `agent` of an `agent_event` (docs/agents.md: depth 1 for a run
/// nested in the run the host started; agent: the name the caller knows it
/// by) are checked nowhere: an observation with every nested event of c1 at
/// depth 5 from the agent "nobody" passes 042.
#[test]
fn the_judge_fails_agent_events_with_the_wrong_depth_and_agent() {
    let (scenario, mut observation) = observed("042_agent_as_tool");
    for event in events_mut(&mut observation).iter_mut().filter(|e| e["type"] == "agent_event") {
        event["depth"] = json!(5);
        event["agent"] = json!("nobody");
    }
    let problems = judged(&scenario, &observation);
    assert!(!problems.is_empty(), "agent events at depth 5 from \"nobody\" passed the judge");
}
