//! Calls the host runs: run input `"calls": "return"` stops a run where a
//! batch's calls would start and returns them; an `invoke` run runs one; the
//! resume takes each call's outcome as its function's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::agents::{as_tool, with_agents};
use crate::common::*;
use ferrule::agent::{Agent, RunInput, RunResult, RunStatus};
use ferrule::tool::{Invocation, Tool, ToolOutcome, ToolResult};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// A tool that records each call's id and attempt and answers "<name> ran <id>".
fn logged(name: &str, options: Value, log: &Arc<Mutex<Vec<(String, u32)>>>) -> Tool {
    let log = log.clone();
    let answer = name.to_owned();
    tool(name, options, move |call: Invocation| {
        log.lock().unwrap().push((call.id().to_owned(), call.attempt()));
        let text = format!("{answer} ran {}", call.id());
        async move { ToolOutcome::Completed(ToolResult::text(text)) }
    })
}

fn input(value: Value) -> RunInput {
    RunInput::from_json(&value.to_string()).expect("run input")
}

/// The result as the JSON a host reads.
fn json_of(result: &RunResult) -> Value {
    serde_json::to_value(result).unwrap()
}

/// Runs each call `result` returned with an `invoke` run (the `attempt`th
/// time), as a host would: the outcomes by call id, and each run's events.
fn invoke_each(agent: &Agent, result: &RunResult, attempt: u32) -> (Value, Vec<Vec<Value>>) {
    let mut outcomes = serde_json::Map::new();
    let mut events = Vec::new();
    for call in &json_of(result)["calls"].as_array().cloned().unwrap_or_default() {
        let (ran, seen) = run_input(agent, input(json!({"invoke": call, "attempt": attempt})));
        assert_eq!(ran.status, RunStatus::Completed, "{:?}", ran.error);
        let ran = json_of(&ran);
        assert_eq!(ran["messages"], json!([]), "an invoke run keeps no transcript");
        outcomes.insert(call["id"].as_str().unwrap().to_owned(), ran["outcome"].clone());
        events.push(seen);
    }
    (Value::Object(outcomes), events)
}

/// Resumes `result` with the host's `results`, still returning calls.
fn resumed(result: &RunResult, results: Value) -> RunInput {
    input(json!({"resume": json_of(result)["state"], "results": results, "calls": "return"}))
}

fn ids(calls: &Value) -> Vec<String> {
    calls.as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn returned_calls_run_nowhere_until_the_host_runs_them_and_resumes() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let script = json!([
        {"tool_calls": [call("c1", "lookup", json!({"id": 1})), call("c2", "nope", json!({})),
                        call("c3", "lookup", json!({"id": 3}))]},
        {"text": "found both"}
    ]);
    let agent = agent(script, json!({}), vec![logged("lookup", json!({}), &log)]);
    let (first, events) = run_input(&agent, input(json!({"prompt": "find", "calls": "return"})));
    assert_eq!(first.status, RunStatus::Interrupted, "{:?}", first.error);
    assert!(log.lock().unwrap().is_empty(), "nothing ran");
    let json = json_of(&first);
    assert_eq!(ids(&json["calls"]), ["c1", "c3"]);
    assert_eq!(json["calls"][0]["arguments"], r#"{"id":1}"#);
    assert_eq!(json["interruptions"], json!([]));
    assert_eq!(json["state"]["returned"], json!(["c1", "c3"]));
    assert_eq!(json["state"]["awaiting"], json!([]));
    // The invalid call was answered then, with its events; the others have none.
    let started: Vec<&Value> = of_type(&events, "tool_execution_start");
    assert_eq!(started.iter().map(|e| e["call"]["id"].as_str().unwrap()).collect::<Vec<_>>(), ["c2"]);

    let (outcomes, invoked) = invoke_each(&agent, &first, 1);
    assert_eq!(*log.lock().unwrap(), [("c1".to_owned(), 1), ("c3".to_owned(), 1)]);
    assert_eq!(
        outcomes["c1"],
        json!({"result": {"content": [{"type": "text", "text": "lookup ran c1"}],
                                                  "is_error": false, "terminate": false}})
    );
    for events in &invoked {
        let kinds: Vec<String> = types(events);
        assert_eq!(kinds, ["run_start", "tool_execution_start", "tool_execution_end", "run_end"]);
    }

    let (done, events) = run_input(&agent, resumed(&first, outcomes));
    assert_eq!(done.status, RunStatus::Completed, "{:?}", done.error);
    assert_eq!(log.lock().unwrap().len(), 2, "the resume ran nothing again");
    let results = tool_results(&done);
    let texts: Vec<String> = results.iter().map(text).collect();
    assert_eq!(texts[0], "lookup ran c1");
    assert!(texts[1].contains("Unknown tool \"nope\""), "{}", texts[1]);
    assert_eq!(texts[2], "lookup ran c3");
    // The host's results end their calls in the resumed run, with events.
    let ended: Vec<&str> =
        of_type(&events, "tool_execution_end").iter().map(|e| e["call_id"].as_str().unwrap()).collect();
    assert_eq!(ended, ["c1", "c3"]);
    assert_event_invariants(&events);
}

#[test]
fn a_sequential_batch_returns_one_call_at_a_time_and_a_parallel_one_at_most_the_bound() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let calls: Vec<Value> = (1..=3).map(|i| call(&format!("c{i}"), "step", json!({}))).collect();
    let script = json!([{"tool_calls": calls}, {"text": "done"}]);
    let agent = agent(script.clone(), json!({}), vec![logged("step", json!({"execution": "sequential"}), &log)]);
    let mut result = run_input(&agent, input(json!({"prompt": "go", "calls": "return"}))).0;
    let mut returned = Vec::new();
    while result.status == RunStatus::Interrupted {
        returned.push(ids(&json_of(&result)["calls"]));
        let (outcomes, _) = invoke_each(&agent, &result, 1);
        result = run_input(&agent, resumed(&result, outcomes)).0;
    }
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(returned, [["c1"], ["c2"], ["c3"]]);

    let parallel = agent_with_bound(script, &log);
    let first = run_input(&parallel, input(json!({"prompt": "go", "calls": "return"}))).0;
    assert_eq!(ids(&json_of(&first)["calls"]), ["c1", "c2"], "max_concurrent_tools is 2");
}

fn agent_with_bound(script: Value, log: &Arc<Mutex<Vec<(String, u32)>>>) -> Agent {
    agent(script, json!({"max_concurrent_tools": 2}), vec![logged("step", json!({}), log)])
}

#[test]
fn approval_comes_before_any_call_is_returned() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let script = json!([
        {"tool_calls": [call("c1", "send", json!({})), call("c2", "lookup", json!({})),
                        call("c3", "send", json!({}))]},
        {"text": "sent"}
    ]);
    let tools = vec![logged("send", json!({"needs_approval": true}), &log), logged("lookup", json!({}), &log)];
    let agent = agent(script, json!({}), tools);
    let first = run_input(&agent, input(json!({"prompt": "go", "calls": "return"}))).0;
    let json = json_of(&first);
    assert_eq!(json["calls"], Value::Null, "no call is returned while one waits for a decision");
    assert_eq!(json["state"]["awaiting"], json!(["c1", "c3"]));

    let decisions = json!({"c1": {"approve": true}, "c3": {"approve": false}});
    let decided = input(json!({"resume": json["state"], "decisions": decisions, "calls": "return"}));
    let second = run_input(&agent, decided).0;
    assert_eq!(second.status, RunStatus::Interrupted, "{:?}", second.error);
    assert_eq!(ids(&json_of(&second)["calls"]), ["c1", "c2"], "the rejected call is answered, not returned");
    assert_eq!(json_of(&second)["state"]["decided"]["c1"], json!({"approve": true}), "decisions stay");

    let (outcomes, _) = invoke_each(&agent, &second, 1);
    let done = run_input(&agent, resumed(&second, outcomes)).0;
    assert_eq!(done.status, RunStatus::Completed, "{:?}", done.error);
    let errors: Vec<bool> = tool_results(&done).iter().map(|r| r["is_error"].as_bool().unwrap()).collect();
    assert_eq!(errors, [false, false, true]);
    assert_eq!(log.lock().unwrap().len(), 2);
}

#[test]
fn an_invoke_run_checks_the_arguments_tells_the_attempt_and_asks_no_approval() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let schema_tool = Tool::new(
        "add",
        "adds",
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        serde_json::from_value(json!({"needs_approval": true})).unwrap(),
        {
            let log = log.clone();
            move |call: Invocation| {
                log.lock().unwrap().push((call.id().to_owned(), call.attempt()));
                async move { ToolOutcome::Completed(ToolResult::text("added")) }
            }
        },
    )
    .unwrap();
    let agent = agent(json!([]), json!({}), vec![schema_tool]);
    let call = json!({"id": "c9", "name": "add", "arguments": r#"{"a": 1}"#});
    let (ran, _) = run_input(&agent, input(json!({"invoke": call, "attempt": 3})));
    assert_eq!(ran.status, RunStatus::Completed, "approval was the returning run's to ask");
    assert_eq!(*log.lock().unwrap(), [("c9".to_owned(), 3)]);
    assert_eq!(json_of(&ran)["outcome"]["result"]["content"][0]["text"], "added");

    let bad = json!({"id": "c9", "name": "add", "arguments": r#"{"a": "one"}"#});
    let (ran, _) = run_input(&agent, input(json!({"invoke": bad})));
    let outcome = &json_of(&ran)["outcome"]["result"];
    assert_eq!(outcome["is_error"], true);
    assert!(outcome["content"][0]["text"].as_str().unwrap().contains("Invalid arguments"), "{outcome}");
    assert_eq!(log.lock().unwrap().len(), 1, "invalid arguments never reach the tool");

    for (json, says) in [
        (json!({"invoke": {"id": "c1", "name": "nope", "arguments": "{}"}}), "has no tool \"nope\""),
        (json!({"invoke": call, "attempt": 0}), "attempt counts from 1"),
        (json!({"prompt": "a", "attempt": 2}), "\"attempt\" and \"handed_to\" go with \"invoke\""),
        (json!({"invoke": call, "prompt": "a"}), "\"invoke\" takes \"attempt\" and \"handed_to\" only"),
        (json!({"invoke": call, "tools": ["add"]}), "takes no \"tools\""),
        (json!({"invoke": call, "calls": "return"}), "goes with \"prompt\""),
        (json!({"execute": {"tool_calls": []}, "calls": "return"}), "goes with \"prompt\""),
        (json!({"prompt": "a", "results": {}}), "\"results\" go with \"resume\""),
        (json!({"prompt": "a", "calls": "later"}), "unknown variant `later`"),
    ] {
        let error = match RunInput::from_json(&json.to_string()) {
            Ok(input) => agent.start(input, None).err().expect("refused"),
            Err(error) => error,
        };
        assert_eq!(error.code, ErrorCode::InvalidArg, "{json}: {}", error.message);
        assert!(error.message.contains(says), "{json}: {}", error.message);
    }
}

#[test]
fn a_failed_outcome_is_the_tools_failure_and_its_on_error_decides() {
    let failing = tool("charge", json!({"on_error": "fatal"}), |_: Invocation| async move {
        ToolOutcome::Failed("the card was declined".to_owned())
    });
    let script = json!([{"tool_calls": [call("c1", "charge", json!({}))]}, {"text": "charged"}]);
    let agent = agent(script, json!({}), vec![failing]);
    let first = run_input(&agent, input(json!({"prompt": "pay", "calls": "return"}))).0;
    let (outcomes, _) = invoke_each(&agent, &first, 1);
    assert_eq!(outcomes["c1"], json!({"failed": "the card was declined"}));
    let done = run_input(&agent, resumed(&first, outcomes)).0;
    assert_eq!(done.status, RunStatus::Failed);
    let error = done.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::ToolFailed, "{}", error.message);
    assert!(error.message.contains("the card was declined"), "{}", error.message);
}

#[test]
fn a_resume_needs_a_result_for_every_returned_call_and_no_other() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let script = json!([{"tool_calls": [call("c1", "lookup", json!({})), call("c2", "lookup", json!({}))]}]);
    let agent = agent(script, json!({}), vec![logged("lookup", json!({}), &log)]);
    let first = run_input(&agent, input(json!({"prompt": "go", "calls": "return"}))).0;
    let state = json_of(&first)["state"].clone();
    let ok = json!({"result": {"content": "fine"}});
    for (json, says) in [
        (json!({"resume": state, "results": {"c1": ok}}), "no result for call \"c2\""),
        (json!({"resume": state, "results": {"c1": ok, "c2": ok, "c3": ok}}), "did not return to run"),
        (json!({"resume": state, "results": {"c1": ok, "c2": {"done": true}}}), "unknown variant `done`"),
        (
            json!({"resume": state, "decisions": {"c1": {"approve": true}}, "results": {"c1": ok, "c2": ok}}),
            "there is no interrupted call \"c1\" (waiting: none)",
        ),
    ] {
        let error = match RunInput::from_json(&json.to_string()) {
            Ok(input) => agent.start(input, None).err().expect("refused"),
            Err(error) => error,
        };
        assert_eq!(error.code, ErrorCode::InvalidArg, "{json}: {}", error.message);
        assert!(error.message.contains(says), "{json}: {}", error.message);
    }
    let mut altered = state.clone();
    altered["returned"] = json!(["c1", "c1"]);
    let text = json!({"resume": altered, "results": {"c1": ok}}).to_string();
    let error = RunInput::from_json(&text).expect_err("refused");
    assert!(error.message.contains("does not wait as the state says"), "{}", error.message);
    assert!(log.lock().unwrap().is_empty());
}

#[test]
fn cancelling_an_invoke_run_reaches_the_tool_and_leaves_no_outcome() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let seen = saw_cancel.clone();
    let waiter = tool("wait", json!({}), move |call: Invocation| {
        // The run drops the call's future when it ends; the token is what a
        // tool working elsewhere (a host's thread) watches.
        let (seen, token) = (seen.clone(), call.cancellation().clone());
        tokio::spawn(async move {
            token.cancelled().await;
            seen.fetch_add(1, Ordering::SeqCst);
        });
        async move {
            std::future::pending::<()>().await;
            ToolOutcome::Completed(ToolResult::text("never"))
        }
    });
    let agent = agent(json!([]), json!({}), vec![waiter]);
    let call = json!({"id": "c1", "name": "wait", "arguments": "{}"});
    let (run, events) = start_input(&agent, input(json!({"invoke": call})));
    while of_type(&events.lock().unwrap(), "tool_execution_start").is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    run.cancel();
    let result = run.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    assert_eq!(json_of(&result)["outcome"], Value::Null);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while saw_cancel.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 1, "the tool saw its cancellation");
    let events = events.lock().unwrap();
    let end = of_type(&events, "tool_execution_end")[0];
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().contains("cancelled"), "{end}");
}

#[test]
fn after_a_handoff_a_returned_call_is_invoked_on_the_agent_it_was_handed_to() {
    use ferrule::agent::{AgentToolMode, AgentToolOptions, AgentToolSpec, HandoffMessages};
    let log = Arc::new(Mutex::new(Vec::new()));
    let billing = agent(
        json!([{}, {"tool_calls": [call("b1", "invoice", json!({}))]}, {"text": "invoiced"}]),
        json!({}),
        vec![logged("invoice", json!({}), &log)],
    );
    let options = AgentToolOptions { handoff_messages: Some(HandoffMessages::All), ..AgentToolOptions::default() };
    let handoff = AgentToolSpec { mode: AgentToolMode::Handoff, options, ..as_tool("billing", &billing) };
    let front = with_agents(
        json!([{"tool_calls": [call("h1", "transfer_to_billing", json!({}))]}]),
        json!({}),
        vec![],
        vec![handoff],
    );
    let first = run_input(&front, input(json!({"prompt": "my bill", "calls": "return"}))).0;
    let json = json_of(&first);
    assert_eq!(ids(&json["calls"]), ["b1"], "the handoff itself ran inside the run");
    assert_eq!(json["state"]["handed_to"], json!(["billing"]));
    let call = &json["calls"][0];
    let error = front.start(input(json!({"invoke": call})), None).err().expect("refused");
    assert!(error.message.contains("has no tool \"invoice\""), "{}", error.message);
    let invoked = run_input(&front, input(json!({"invoke": call, "handed_to": ["billing"]}))).0;
    assert_eq!(invoked.agent.as_deref(), Some("billing"));
    let outcome = json_of(&invoked)["outcome"].clone();
    let done = run_input(&front, resumed(&first, json!({"b1": outcome}))).0;
    assert_eq!(done.status, RunStatus::Completed, "{:?}", done.error);
    assert_eq!(json_of(&done)["final"]["content"][0]["text"], "invoiced");
    assert_eq!(log.lock().unwrap().len(), 1);
    let nowhere = input(json!({"invoke": call, "handed_to": ["nowhere"]}));
    let error = front.start(nowhere, None).err().expect("refused");
    assert!(error.message.contains("handed to \"nowhere\""), "{}", error.message);
}

#[test]
fn a_batch_returned_call_by_call_still_terminates_when_every_result_asks() {
    let ending = tool("finish", json!({"execution": "sequential"}), |_: Invocation| async move {
        ToolOutcome::Completed(ToolResult { terminate: true, ..ToolResult::text("finished") })
    });
    let script = json!([{"tool_calls": [call("c1", "finish", json!({})), call("c2", "finish", json!({}))]},
                        {"text": "never asked"}]);
    let agent = agent(script, json!({}), vec![ending]);
    let mut result = run_input(&agent, input(json!({"prompt": "end", "calls": "return"}))).0;
    let mut states = Vec::new();
    while result.status == RunStatus::Interrupted {
        states.push(json_of(&result)["state"].clone());
        let (outcomes, _) = invoke_each(&agent, &result, 1);
        result = run_input(&agent, resumed(&result, outcomes)).0;
    }
    assert_eq!(result.status, RunStatus::Terminated, "{:?}", result.error);
    assert_eq!(result.rounds, 1, "no model request after the batch");
    assert_eq!(states[1]["ran_terminating"], json!(["c1"]), "the state keeps what c1 asked");
}

#[test]
fn an_outcome_is_cut_as_the_transcript_will_be_and_once() {
    let long =
        tool(
            "long",
            json!({}),
            |_: Invocation| async move { ToolOutcome::Completed(ToolResult::text("x".repeat(5000))) },
        );
    let script = json!([{"tool_calls": [call("c1", "long", json!({}))]}, {"text": "read it"}]);
    let agent = agent(script, json!({"max_tool_result_bytes": 100}), vec![long]);
    let first = run_input(&agent, input(json!({"prompt": "read", "calls": "return"}))).0;
    let (outcomes, _) = invoke_each(&agent, &first, 1);
    let cut = format!("{}\n[result truncated: 100 of 5000 bytes shown]", "x".repeat(100));
    assert_eq!(text(&outcomes["c1"]["result"]), cut);
    let done = run_input(&agent, resumed(&first, outcomes)).0;
    assert_eq!(text(&tool_results(&done)[0]), cut, "the transcript holds the result cut once");
}
