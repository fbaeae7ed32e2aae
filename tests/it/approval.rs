//! Approval, interrupt and resume (DESIGN section 9) on the scripted model.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::*;
use ferrule::agent::{Agent, RunInput, RunResult, RunStatus};
use ferrule::tool::{Invocation, Tool, ToolOutcome, ToolResult};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// A tool that counts its calls and answers "<name> ran".
fn counted(name: &str, options: Value) -> (Tool, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let answer = format!("{name} ran");
    let tool = tool(name, options, move |_: Invocation| {
        seen.fetch_add(1, Ordering::SeqCst);
        let answer = answer.clone();
        async move { ToolOutcome::Completed(ToolResult::text(answer)) }
    });
    (tool, count)
}

fn gated(name: &str) -> (Tool, Arc<AtomicUsize>) {
    counted(name, json!({"needs_approval": true}))
}

fn turn(calls: Vec<Value>, output_tokens: u64) -> Value {
    json!({"tool_calls": calls, "usage": {"input_tokens": 10, "output_tokens": output_tokens}})
}

fn answer(text: &str) -> Value {
    json!({"text": text, "usage": {"input_tokens": 10, "output_tokens": 1}})
}

/// The input that resumes `result` with `decisions`, through JSON text as a host
/// would store it.
fn resume(result: &RunResult, decisions: Value) -> RunInput {
    let state = serde_json::to_string(result.state.as_ref().expect("an interrupted result has a state")).unwrap();
    let text = format!(r#"{{"resume": {state}, "decisions": {decisions}}}"#);
    RunInput::from_json(&text).expect("resume input")
}

fn refused(agent: &Agent, input: Result<RunInput, ferrule::Error>) -> String {
    let error = match input {
        Ok(input) => agent.start(input, None).err().expect("the resume is refused"),
        Err(error) => error,
    };
    assert_eq!(error.code, ErrorCode::InvalidArg, "{}", error.message);
    error.message
}

fn roles(result: &RunResult) -> Vec<String> {
    let messages = serde_json::to_value(&result.messages).unwrap();
    messages.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn a_call_that_needs_approval_stops_its_whole_batch() {
    let (lookup, lookups) = counted("lookup", json!({}));
    let (delete, deletes) = gated("delete");
    let script = json!([turn(
        vec![
            call("c1", "lookup", json!({"id": 1})),
            call("c2", "delete", json!({"id": 2})),
            call("c3", "nope", json!({}))
        ],
        5
    )]);
    let agent = agent(script, json!({}), vec![lookup, delete]);
    let (result, events) = run(&agent, "clean up");
    assert_eq!(result.status, RunStatus::Interrupted, "{:?}", result.error);
    assert_eq!((lookups.load(Ordering::SeqCst), deletes.load(Ordering::SeqCst)), (0, 0));
    assert_eq!(of_type(&events, "tool_execution_start").len(), 0);
    let kinds: Vec<String> = types(&events).into_iter().filter(|k| !k.ends_with("_delta")).collect();
    assert_eq!(kinds, ["run_start", "turn_start", "message_end", "turn_end", "run_end"]);
    assert_eq!(roles(&result), ["user", "assistant"]);

    let json = serde_json::to_value(&*result).unwrap();
    assert_eq!(
        json["interruptions"],
        json!([{"call_id": "c2", "name": "delete", "arguments": {"id": 2}, "key": "c2"}])
    );
    assert_eq!(json["error"], Value::Null);
    assert_eq!(json["rounds"], 1);
    let state = &json["state"];
    assert_eq!(state["version"], 1);
    assert_eq!(state["messages"], json["messages"]);
    assert_eq!(state["awaiting"], json!(["c2"]));
    assert_eq!(state["rounds"], 1);
    let run_end = of_type(&events, "run_end")[0];
    assert_eq!(run_end["status"], "interrupted");
    assert_eq!(run_end["result"]["state"], json["state"]);
}

#[test]
fn resuming_runs_approved_calls_and_answers_rejected_ones_in_call_order() {
    let (lookup, lookups) = counted("lookup", json!({}));
    let (delete, deletes) = gated("delete");
    let script = json!([
        turn(
            vec![
                call("c1", "delete", json!({"id": 1})),
                call("c2", "lookup", json!({})),
                call("c3", "delete", json!({"id": 3})),
                call("c4", "delete", json!({"id": 4})),
                call("c5", "delete", json!("{broken")),
            ],
            5
        ),
        answer("cleaned")
    ]);
    let agent = agent(script, json!({}), vec![lookup, delete]);
    let (first, _) = run(&agent, "clean up");
    assert_eq!(first.status, RunStatus::Interrupted);
    let waiting: Vec<&str> = first.interruptions.iter().map(|i| i.call_id.as_str()).collect();
    assert_eq!(waiting, ["c1", "c3", "c4"], "an invalid call is answered, not asked about");

    let decisions = json!({"c1": {"approve": true}, "c3": {"approve": false},
                           "c4": {"approve": false, "message": "Not that one."}});
    let (result, events) = run_input(&agent, resume(&first, decisions));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!((lookups.load(Ordering::SeqCst), deletes.load(Ordering::SeqCst)), (1, 1));
    let results = tool_results(&result);
    let ids: Vec<&str> = results.iter().map(|r| r["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4", "c5"]);
    let errors: Vec<bool> = results.iter().map(|r| r["is_error"].as_bool().unwrap()).collect();
    assert_eq!(errors, [false, false, true, true, true]);
    assert_eq!(text(&results[2]), "The call to \"delete\" was rejected by the user, so it was not run.");
    assert_eq!(text(&results[3]), "Not that one.");
    assert!(text(&results[4]).contains("not valid JSON"));
    assert_eq!(roles(&result), ["user", "assistant", "tool", "tool", "tool", "tool", "tool", "assistant"]);

    // The pending batch runs outside any turn; turns continue the count.
    let kinds = types(&events);
    assert_eq!(kinds[..2], ["run_start", "tool_execution_start"]);
    assert_eq!(of_type(&events, "turn_start").iter().map(|e| e["turn"].as_u64().unwrap()).collect::<Vec<_>>(), [2]);
    assert_event_invariants(&events);
    assert_eq!(result.rounds, 2);
    assert_eq!((result.usage.input_tokens, result.usage.output_tokens), (20, 6));
    assert!(result.state.is_none() && result.interruptions.is_empty());
    let final_text = serde_json::to_value(&result.final_message).unwrap()["content"][0]["text"].clone();
    assert_eq!(final_text, "cleaned");
}

#[test]
fn always_makes_a_decision_stand_for_the_tool_for_the_rest_of_the_run() {
    let (delete, deletes) = gated("delete");
    let (archive, archives) = gated("archive");
    let script = json!([
        turn(vec![call("c1", "delete", json!({}))], 1),
        turn(vec![call("c2", "delete", json!({})), call("c3", "archive", json!({}))], 1),
        turn(vec![call("c4", "delete", json!({})), call("c5", "archive", json!({}))], 1),
        answer("done")
    ]);
    let agent = agent(script, json!({}), vec![delete, archive]);
    let (first, _) = run(&agent, "go");
    let rejected = json!({"c1": {"approve": false, "message": "Deleting is off.", "always": true}});
    let (second, _) = run_input(&agent, resume(&first, rejected));
    assert_eq!(second.status, RunStatus::Interrupted);
    let waiting: Vec<&str> = second.interruptions.iter().map(|i| i.call_id.as_str()).collect();
    assert_eq!(waiting, ["c3"], "the standing rejection covers c2");
    let state = serde_json::to_value(second.state.as_ref().unwrap()).unwrap();
    assert_eq!(state["standing"], json!({"delete": {"approve": false, "message": "Deleting is off.", "always": true}}));

    let (last, _) = run_input(&agent, resume(&second, json!({"c3": {"approve": true, "always": true}})));
    assert_eq!(last.status, RunStatus::Completed, "{:?}", last.error);
    assert_eq!((deletes.load(Ordering::SeqCst), archives.load(Ordering::SeqCst)), (0, 2));
    let texts: Vec<(String, String)> =
        tool_results(&last).iter().map(|r| (r["tool_call_id"].as_str().unwrap().to_owned(), text(r))).collect();
    let expected = [
        ("c1", "Deleting is off."),
        ("c2", "Deleting is off."),
        ("c3", "archive ran"),
        ("c4", "Deleting is off."),
        ("c5", "archive ran"),
    ];
    assert_eq!(texts, expected.map(|(id, text)| (id.to_owned(), text.to_owned())));
    assert_eq!(last.rounds, 4);
}

#[test]
fn a_state_resumes_on_a_new_agent_from_the_same_configuration() {
    let script = json!([
        turn(vec![call("c1", "login", json!({}))], 1),
        turn(vec![call("c2", "read_account", json!({}))], 1),
        answer("balance 7")
    ]);
    let login = tool("login", json!({}), |_: Invocation| async {
        let mut result = ToolResult::text("signed in");
        result.added_tools = vec!["read_account".to_owned()];
        ToolOutcome::Completed(result)
    });
    let first_agent = agent(
        script.clone(),
        json!({}),
        vec![login, counted("read_account", json!({"deferred": true, "needs_approval": true})).0],
    );
    let (first, _) = run(&first_agent, "balance?");
    assert_eq!(first.status, RunStatus::Interrupted);
    let stored = serde_json::to_string(first.state.as_ref().unwrap()).unwrap();
    drop(first_agent);

    let login_again = tool("login", json!({}), |_: Invocation| async { ToolOutcome::Failed("unused".into()) });
    let (reader, reads) = counted("read_account", json!({"deferred": true, "needs_approval": true}));
    let second_agent = agent(script, json!({}), vec![login_again, reader]);
    let input = RunInput::from_json(&format!(r#"{{"resume": {stored}, "decisions": {{"c2": {{"approve": true}}}}}}"#));
    let (result, _) = run_input(&second_agent, input.unwrap());
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(reads.load(Ordering::SeqCst), 1, "the disclosure of read_account survived the resume");
    assert_eq!(result.rounds, 3);
    assert_eq!(roles(&result), ["user", "assistant", "tool", "assistant", "tool", "assistant"]);
}

#[test]
fn max_rounds_counts_across_resumes() {
    let (delete, _) = gated("delete");
    let script =
        json!([turn(vec![call("c1", "delete", json!({}))], 1), turn(vec![call("c2", "delete", json!({}))], 1)]);
    let agent = agent(script, json!({"max_rounds": 2}), vec![delete]);
    let (first, _) = run(&agent, "go");
    let (second, _) = run_input(&agent, resume(&first, json!({"c1": {"approve": true}})));
    assert_eq!(second.status, RunStatus::Interrupted);
    let (last, events) = run_input(&agent, resume(&second, json!({"c2": {"approve": true}})));
    assert_eq!(last.status, RunStatus::MaxRounds);
    assert_eq!(last.rounds, 2);
    assert_eq!(of_type(&events, "turn_start").len(), 0);
}

#[test]
fn an_execute_only_run_waits_for_approval_and_resumes_without_the_model() {
    let (delete, deletes) = gated("delete");
    let agent = agent(json!([]), json!({}), vec![delete]);
    let input = RunInput::from_json(
        &json!({"messages": [{"role": "user", "content": "Delete 1."}],
                "execute": {"tool_calls": [{"id": "c1", "name": "delete", "arguments": "{}"}]}})
        .to_string(),
    )
    .unwrap();
    let (first, _) = run_input(&agent, input);
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    // Its results are its messages: neither it nor its resume may leave them out.
    let execute = r#"{"messages": [], "execute": {"tool_calls": []}, "result_messages": "none"}"#;
    let mut without = resume(&first, json!({"c1": {"approve": true}}));
    without.result_messages = ferrule::agent::ResultMessages::None;
    for input in [RunInput::from_json(execute), Ok(without)] {
        assert!(refused(&agent, input).contains("an execute-only run's results are in its \"messages\""));
    }
    let (result, events) = run_input(&agent, resume(&first, json!({"c1": {"approve": true}})));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!((result.rounds, deletes.load(Ordering::SeqCst)), (0, 1));
    assert_eq!(types(&events), ["run_start", "tool_execution_start", "tool_execution_end", "run_end"]);
}

#[test]
fn a_cut_off_response_runs_nothing_and_asks_nothing() {
    let (delete, deletes) = gated("delete");
    let script = json!([{"tool_calls": [call("c1", "delete", json!({}))], "stop_reason": "length"}, answer("ok")]);
    let agent = agent(script, json!({}), vec![delete]);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    assert!(text(&tool_results(&result)[0]).contains("cut off"));
}

#[test]
fn built_ins_can_need_approval() {
    let dir = tempfile::tempdir().unwrap();
    let builtins = json!({"allowed": ["write"], "needs_approval": ["write"]});
    let agent = builtin_agent(dir.path(), vec![call("w", "write", json!({"path": "a.txt", "content": "x"}))], builtins);
    let (first, _) = run(&agent, "write");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert!(!dir.path().join("a.txt").exists());
    let (result, _) = run_input(&agent, resume(&first, json!({"w": {"approve": true}})));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "x");

    let config = json!({"model": {"provider": "scripted", "script": []},
                        "builtin_tools": {"needs_approval": ["lookup"]}});
    let error = ferrule::agent::AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build()).err().unwrap();
    assert!(error.message.contains("\"lookup\""), "{}", error.message);
}

#[test]
fn every_unfit_resume_is_refused_with_what_is_wrong() {
    let (lookup, _) = counted("lookup", json!({}));
    let (delete, deletes) = gated("delete");
    let script = json!([turn(vec![call("c1", "delete", json!({})), call("c2", "delete", json!({}))], 1), answer("ok")]);
    let agent = agent(script.clone(), json!({}), vec![lookup, delete]);
    let (first, _) = run(&agent, "go");
    let state = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();
    let input = |state: &Value, decisions: Value| {
        RunInput::from_json(&json!({"resume": state, "decisions": decisions}).to_string())
    };
    let both = json!({"c1": {"approve": true}, "c2": {"approve": true}});

    let message = refused(&agent, input(&state, json!({"c1": {"approve": true}})));
    assert!(message.contains("no decision for call \"c2\""), "{message}");
    let message = refused(
        &agent,
        input(&state, json!({"c1": {"approve": true}, "c2": {"approve": true}, "c9": {"approve": true}})),
    );
    assert!(message.contains("no interrupted call \"c9\""), "{message}");
    let mut later = state.clone();
    later["version"] = json!(2);
    let message = refused(&agent, input(&later, both.clone()));
    assert!(message.contains("state version 2 is not supported"), "{message}");
    let mut unversioned = state.clone();
    unversioned.as_object_mut().unwrap().remove("version");
    assert!(refused(&agent, input(&unversioned, both.clone())).contains("no \"version\""));
    let mut forged = state.clone();
    forged["awaiting"] = json!(["c1", "c7"]);
    assert!(refused(&agent, input(&forged, both.clone())).contains("\"c7\" is not in the last assistant message"));
    let mut extended = state.clone();
    extended["colour"] = json!("red");
    assert!(refused(&agent, input(&extended, both.clone())).contains("colour"));
    assert!(refused(&agent, input(&json!("text"), both.clone())).contains("must be the object"));

    let other = crate::common::agent(script, json!({}), vec![counted("lookup", json!({})).0]);
    let message = refused(&other, input(&state, both.clone()));
    assert!(message.contains("no tool \"delete\"") && message.contains("\"c1\""), "{message}");

    let text = format!(
        r#"{{"resume": {state}, "decisions": {{"c1": {{"approve": true}}, "c1": {{"approve": false}}, "c2": {{"approve": true}}}}}}"#
    );
    assert!(refused(&agent, RunInput::from_json(&text)).contains("\"c1\" appears twice"));
    assert!(refused(&agent, input(&state, json!({"c1": {"approve": true, "ok": 1}, "c2": {"approve": true}})))
        .contains("ok"));
    assert!(refused(&agent, input(&state, json!({"c1": {}, "c2": {"approve": true}}))).contains("approve"));
    let with_prompt = RunInput::from_json(&json!({"resume": state, "decisions": both, "prompt": "x"}).to_string());
    assert!(refused(&agent, with_prompt).contains("takes \"decisions\" only"));
    let stray = RunInput::from_json(r#"{"prompt": "x", "decisions": {}}"#);
    assert!(refused(&agent, stray).contains("go with \"resume\""));

    // None of it ran anything, and the state still resumes.
    assert_eq!(deletes.load(Ordering::SeqCst), 0);
    let (result, _) = run_input(&agent, input(&state, both).unwrap());
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(deletes.load(Ordering::SeqCst), 2);
}

#[test]
fn a_state_with_extreme_counts_or_a_blank_message_resumes_safely() {
    let (delete, _) = gated("delete");
    let script = json!([turn(vec![call("c1", "delete", json!({}))], 1), answer("ok")]);
    let agent = agent(script, json!({}), vec![delete]);
    let (first, _) = run(&agent, "go");
    let mut state = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();
    state["rounds"] = json!(u32::MAX);
    state["usage"] = json!({"input_tokens": u64::MAX, "output_tokens": u64::MAX});
    let input = json!({"resume": state, "decisions": {"c1": {"approve": false, "message": "  "}}});
    let (result, _) = run_input(&agent, RunInput::from_json(&input.to_string()).unwrap());
    assert_eq!(result.status, RunStatus::MaxRounds, "{:?}", result.error);
    assert_eq!((result.rounds, result.usage.input_tokens), (u32::MAX, u64::MAX));
    assert_eq!(text(&tool_results(&result)[0]), "The call to \"delete\" was rejected by the user, so it was not run.");
}

#[test]
fn two_different_standing_decisions_for_one_tool_are_refused() {
    let (delete, deletes) = gated("delete");
    let script = json!([turn(vec![call("c1", "delete", json!({})), call("c2", "delete", json!({}))], 1), answer("ok")]);
    let agent = agent(script, json!({}), vec![delete]);
    let (first, _) = run(&agent, "go");
    let conflicting = json!({"c1": {"approve": true, "always": true}, "c2": {"approve": false, "always": true}});
    let message = refused(&agent, Ok(resume(&first, conflicting)));
    assert!(message.contains("\"c1\" and \"c2\"") && message.contains("\"delete\""), "{message}");
    let agreeing = json!({"c1": {"approve": true, "always": true}, "c2": {"approve": true, "always": true}});
    let (result, _) = run_input(&agent, resume(&first, agreeing));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(deletes.load(Ordering::SeqCst), 2);
}

#[test]
fn decisions_given_for_a_batch_that_waits_again_are_kept() {
    // The state comes from an agent on which only delete needs approval; the
    // resuming agent gates lookup too, so the batch waits again, for c2.
    let script = json!([turn(vec![call("c1", "delete", json!({})), call("c2", "lookup", json!({}))], 1), answer("ok")]);
    let first_agent = agent(script.clone(), json!({}), vec![gated("delete").0, counted("lookup", json!({})).0]);
    let (first, _) = run(&first_agent, "go");
    let (delete, deletes) = gated("delete");
    let (lookup, lookups) = gated("lookup");
    let agent = agent(script, json!({}), vec![delete, lookup]);
    let (second, _) = run_input(&agent, resume(&first, json!({"c1": {"approve": true}})));
    assert_eq!(second.status, RunStatus::Interrupted);
    let waiting: Vec<&str> = second.interruptions.iter().map(|i| i.call_id.as_str()).collect();
    assert_eq!(waiting, ["c2"]);
    let state = serde_json::to_value(second.state.as_ref().unwrap()).unwrap();
    assert_eq!(state["decided"], json!({"c1": {"approve": true}}));
    let message = refused(&agent, Ok(resume(&second, json!({"c1": {"approve": true}, "c2": {"approve": true}}))));
    assert!(message.contains("\"c1\", it was decided already"), "{message}");
    let (result, _) = run_input(&agent, resume(&second, json!({"c2": {"approve": true}})));
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!((deletes.load(Ordering::SeqCst), lookups.load(Ordering::SeqCst)), (1, 1));
}

#[test]
fn a_state_with_repeated_keys_or_forged_fields_is_refused() {
    let (delete, _) = gated("delete");
    let script = json!([turn(vec![call("c1", "delete", json!({}))], 1), answer("ok")]);
    let agent = agent(script, json!({"max_rounds": u32::MAX}), vec![delete]);
    let (first, _) = run(&agent, "go");
    let state = serde_json::to_string(first.state.as_ref().unwrap()).unwrap();
    let decisions = r#"{"c1": {"approve": true}}"#;
    let repeated = state.replacen(r#""awaiting":["c1"]"#, r#""awaiting":["c9"],"awaiting":["c1"]"#, 1);
    assert_ne!(repeated, state);
    let message =
        refused(&agent, RunInput::from_json(&format!(r#"{{"resume": {repeated}, "decisions": {decisions}}}"#)));
    assert!(message.contains("\"awaiting\" appears twice"), "{message}");
    for (from, to, says) in [
        (r#""version":1"#, r#""version":1.0"#, "whole number"),
        (r#""stop_reason":"tool_use""#, r#""stop_reason":"length""#, "did not end normally"),
    ] {
        let forged = state.replacen(from, to, 1);
        assert_ne!(forged, state, "{from}");
        let message =
            refused(&agent, RunInput::from_json(&format!(r#"{{"resume": {forged}, "decisions": {decisions}}}"#)));
        assert!(message.contains(says), "{message}");
    }
    for extra in [r#""prompt": null"#, r#""messages": null"#, r#""execute": null"#] {
        let text = format!(r#"{{"resume": {state}, "decisions": {decisions}, {extra}}}"#);
        assert!(RunInput::from_json(&text).is_err(), "{extra}");
    }
    // At the very last round there is no request left to make.
    let last = state.replacen(r#""rounds":1"#, &format!(r#""rounds":{}"#, u32::MAX), 1);
    let input = RunInput::from_json(&format!(r#"{{"resume": {last}, "decisions": {decisions}}}"#)).unwrap();
    let (result, events) = run_input(&agent, input);
    assert_eq!(result.status, RunStatus::MaxRounds, "{:?}", result.error);
    assert!(of_type(&events, "turn_start").is_empty());
}
