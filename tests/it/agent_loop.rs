//! The run loop's rules (DESIGN section 3), one test per rule, on the scripted model.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use ferrule::agent::RunStatus;
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};
use ferrule::ErrorCode;
use serde_json::{json, Value};

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

fn script_calls(calls: Vec<Value>) -> Value {
    json!([{"tool_calls": calls}, {"text": "done"}])
}

#[test]
fn a_plain_answer_completes_the_run() {
    let agent = agent(json!([{"text": "hello", "usage": {"input_tokens": 3, "output_tokens": 2}}]), json!({}), vec![]);
    let (result, events) = run(&agent, "hi");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.rounds, 1);
    assert_eq!(result.usage.output_tokens, 2);
    assert_eq!(types(&events), ["run_start", "turn_start", "message_delta", "message_end", "turn_end", "run_end"]);
    let transcript = serde_json::to_value(&result.messages).unwrap();
    assert_eq!(transcript[0], json!({"role": "user", "content": "hi"}));
    assert_eq!(transcript[1]["content"], json!([{"type": "text", "text": "hello"}]));
    assert_eq!(serde_json::to_value(&result.final_message).unwrap()["role"], "assistant");
    assert_event_invariants(&events);
}

#[test]
fn validation_failures_become_error_results_and_the_run_goes_on() {
    let lookup = Tool::new(
        "lookup",
        "Look up a customer.",
        json!({"type": "object", "properties": {"customer_id": {"type": "string", "minLength": 1}},
               "required": ["customer_id"], "additionalProperties": false}),
        ToolOptions::default(),
        |_: Invocation| async { ToolOutcome::Completed(ToolResult::text("Gold")) },
    )
    .unwrap();
    let calls = vec![
        call("", "lookup", json!({"customer_id": "C-1"})),
        call("a", "lookup", json!({"customer_id": "C-1"})),
        call("a", "lookup", json!({"customer_id": "C-2"})),
        call("b", " ", json!({})),
        call("c", "lookpu", json!({})),
        call("d", "lookup", json!("{not json")),
        call("e", "lookup", json!("[1, 2]")),
        call("f", "lookup", json!({"customer_id": ""})),
        call("g", "lookup", json!({"customer": "C-1"})),
    ];
    let agent = agent(script_calls(calls), json!({}), vec![lookup, echo("note")]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let results = tool_results(&result);
    let texts: Vec<String> = results.iter().map(text).collect();
    let errors: Vec<bool> = results.iter().map(|r| r["is_error"].as_bool().unwrap()).collect();
    assert_eq!(errors, [true, false, true, true, true, true, true, true, true], "{texts:#?}");
    assert!(texts[0].contains("no id"), "{}", texts[0]);
    assert_eq!(texts[1], "Gold");
    assert!(texts[2].contains("\"a\" was already used"), "{}", texts[2]);
    assert!(texts[3].contains("no tool name"), "{}", texts[3]);
    assert!(texts[4].contains("Unknown tool \"lookpu\"") && texts[4].contains("lookup, note"), "{}", texts[4]);
    assert!(texts[5].contains("not valid JSON"), "{}", texts[5]);
    assert!(texts[6].contains("must be a JSON object, not an array"), "{}", texts[6]);
    assert!(texts[7].contains("/customer_id:"), "{}", texts[7]);
    assert!(texts[8].contains("(root)") && texts[8].contains("customer_id"), "{}", texts[8]);
    assert_eq!(of_type(&events, "tool_execution_start").len(), 9);
    assert_eq!(of_type(&events, "tool_execution_end").len(), 9);
    assert_event_invariants(&events);
}

#[test]
fn parallel_results_keep_call_order_when_calls_finish_in_reverse() {
    let gauge = Arc::new(Gauge::default());
    let calls = (0..4).map(|i| call(&format!("c{i}"), "sleep", json!({"ms": 160 - 40 * i}))).collect();
    let agent = agent(script_calls(calls), json!({}), vec![sleeper("sleep", json!({}), gauge.clone())]);
    let (result, events) = run(&agent, "go");
    let ids: Vec<Value> = tool_results(&result).iter().map(|r| r["tool_call_id"].clone()).collect();
    assert_eq!(ids, [json!("c0"), json!("c1"), json!("c2"), json!("c3")]);
    let end_order: Vec<&Value> = of_type(&events, "tool_execution_end").iter().map(|e| &e["call_id"]).collect();
    assert_eq!(end_order, [&json!("c3"), &json!("c2"), &json!("c1"), &json!("c0")]);
    assert_eq!(gauge.peak(), 4);
    assert_event_invariants(&events);
}

#[test]
fn max_concurrent_tools_bounds_a_parallel_batch() {
    let gauge = Arc::new(Gauge::default());
    let calls = (0..10).map(|i| call(&format!("c{i}"), "sleep", json!({"ms": 30}))).collect();
    let agent = agent(
        script_calls(calls),
        json!({"max_concurrent_tools": 3}),
        vec![sleeper("sleep", json!({}), gauge.clone())],
    );
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(gauge.total(), 10);
    assert_eq!(gauge.peak(), 3);
}

#[test]
fn a_sequential_tool_makes_its_whole_batch_sequential() {
    let gauge = Arc::new(Gauge::default());
    let calls = vec![
        call("a", "fast", json!({"ms": 30})),
        call("b", "careful", json!({"ms": 30})),
        call("c", "fast", json!({"ms": 30})),
    ];
    let tools = vec![
        sleeper("fast", json!({}), gauge.clone()),
        sleeper("careful", json!({"execution": "sequential"}), gauge.clone()),
    ];
    let (result, events) = run(&agent(script_calls(calls), json!({}), tools), "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(gauge.peak(), 1);
    let kinds: Vec<String> = types(&events).into_iter().filter(|k| k.starts_with("tool_execution")).collect();
    assert_eq!(kinds, ["tool_execution_start", "tool_execution_end"].repeat(3));
}

#[test]
fn the_agent_setting_makes_every_batch_sequential() {
    let gauge = Arc::new(Gauge::default());
    let calls = (0..3).map(|i| call(&format!("c{i}"), "sleep", json!({"ms": 20}))).collect();
    let agent = agent(
        script_calls(calls),
        json!({"tool_execution": "sequential"}),
        vec![sleeper("sleep", json!({}), gauge.clone())],
    );
    run(&agent, "go");
    assert_eq!(gauge.peak(), 1);
    assert_eq!(gauge.total(), 3);
}

fn finisher(name: &str, terminate: bool) -> Tool {
    tool(name, json!({}), move |_: Invocation| async move {
        ToolOutcome::Completed(ToolResult { terminate, ..ToolResult::text("finished") })
    })
}

#[test]
fn terminate_needs_every_call_of_the_batch() {
    let unanimous = agent(
        json!([{"tool_calls": [call("a", "stop", json!({})), call("b", "stop", json!({}))]}, {"text": "never"}]),
        json!({}),
        vec![finisher("stop", true)],
    );
    let (result, _) = run(&unanimous, "go");
    assert_eq!(result.status, RunStatus::Terminated);
    assert_eq!(result.rounds, 1);

    let split = agent(
        json!([{"tool_calls": [call("a", "stop", json!({})), call("b", "go_on", json!({}))]}, {"text": "went on"}]),
        json!({}),
        vec![finisher("stop", true), finisher("go_on", false)],
    );
    let (result, _) = run(&split, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.rounds, 2);
}

#[test]
fn an_error_result_blocks_terminate() {
    let failing_stop = tool("failing_stop", json!({}), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult { terminate: true, ..ToolResult::error("broke") })
    });
    let agent = agent(
        json!([{"tool_calls": [call("a", "stop", json!({})), call("b", "failing_stop", json!({}))]}, {"text": "on"}]),
        json!({}),
        vec![finisher("stop", true), failing_stop],
    );
    assert_eq!(run(&agent, "go").0.status, RunStatus::Completed);
}

#[test]
fn a_provisional_terminate_is_ignored() {
    let progress = tool("progress", json!({}), |call: Invocation| async move {
        call.updates().send(ToolResult { terminate: true, ..ToolResult::text("halfway") }).await;
        ToolOutcome::Completed(ToolResult::text("done"))
    });
    let agent = agent(script_calls(vec![call("a", "progress", json!({}))]), json!({}), vec![progress]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(of_type(&events, "tool_execution_update").len(), 1);
    assert_event_invariants(&events);
}

#[test]
fn updates_are_events_only_and_ignored_after_completion() {
    let late: Arc<std::sync::Mutex<Option<ferrule::tool::UpdateSink>>> = Default::default();
    let keep = late.clone();
    let progress = tool("progress", json!({}), move |call: Invocation| {
        let keep = keep.clone();
        async move {
            call.updates().send(ToolResult::text("step 1")).await;
            call.updates().send(ToolResult::text("step 2")).await;
            *keep.lock().unwrap() = Some(call.updates().clone());
            ToolOutcome::Completed(ToolResult::text("all done"))
        }
    });
    let agent = agent(script_calls(vec![call("a", "progress", json!({}))]), json!({}), vec![progress]);
    let (run_handle, events) = start(&agent, "go");
    // Wait for the call to be recorded, then send a late update from a host thread.
    while !events.lock().unwrap().iter().any(|e| e["type"] == "tool_execution_end") {
        std::thread::sleep(Duration::from_millis(1));
    }
    late.lock().unwrap().as_ref().unwrap().send_blocking(ToolResult::text("too late")).unwrap();
    let result = run_handle.wait_blocking().unwrap();
    let events = events.lock().unwrap().clone();
    let partials: Vec<&Value> = of_type(&events, "tool_execution_update").iter().map(|e| &e["partial"]).collect();
    assert_eq!(partials.len(), 2);
    assert_eq!(partials[0]["content"][0]["text"], "step 1");
    let transcript = serde_json::to_string(&result.messages).unwrap();
    assert!(!transcript.contains("step 1") && !transcript.contains("too late"));
    assert_eq!(text(&tool_results(&result)[0]), "all done");
    assert_event_invariants(&events);
}

/// A tool that answers "ran" and counts its calls.
fn counting_tool(name: &str) -> (Tool, Arc<AtomicUsize>) {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let tool = tool(name, json!({}), move |_: Invocation| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { ToolOutcome::Completed(ToolResult::text("ran")) }
    });
    (tool, ran)
}

#[test]
fn a_length_stopped_response_runs_no_function() {
    let (counted, ran) = counting_tool("counted");
    let agent = agent(
        json!([{"tool_calls": [call("a", "counted", json!({})), call("b", "counted", json!({}))], "stop_reason": "length"},
               {"text": "shorter now"}]),
        json!({}),
        vec![counted],
    );
    let (result, events) = run(&agent, "go");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(result.status, RunStatus::Completed);
    let results = tool_results(&result);
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["is_error"] == true && text(r).contains("cut off")));
    assert_event_invariants(&events);
}

#[test]
fn max_rounds_ends_the_run() {
    let agent = agent(
        json!([{"tool_calls": [call("a", "echo", json!({}))], "repeat": 10}]),
        json!({"max_rounds": 3}),
        vec![echo("echo")],
    );
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::MaxRounds);
    assert_eq!(result.rounds, 3);
    assert_eq!(tool_results(&result).len(), 3);
    assert_eq!(serde_json::to_value(&*result).unwrap()["status"], "max_rounds");
    assert_event_invariants(&events);
}

fn never_completes(name: &str, options: Value, saw_cancel: Arc<AtomicUsize>) -> Tool {
    tool(name, options, move |call: Invocation| {
        let saw_cancel = saw_cancel.clone();
        async move {
            call.cancellation().cancelled().await;
            saw_cancel.fetch_add(1, Ordering::SeqCst);
            ToolOutcome::Completed(ToolResult::text("late"))
        }
    })
}

#[test]
fn a_tool_timeout_gives_the_model_an_error_and_the_run_goes_on() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let agent = agent(
        script_calls(vec![call("a", "stuck", json!({})), call("b", "echo", json!({"text": "fine"}))]),
        json!({}),
        vec![never_completes("stuck", json!({"timeout_ms": 50}), saw_cancel.clone()), echo("echo")],
    );
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let results = tool_results(&result);
    assert!(text(&results[0]).contains("timed out after 50 ms"), "{}", text(&results[0]));
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(text(&results[1]), "fine");
    assert_event_invariants(&events);
}

#[test]
fn the_agent_tool_timeout_applies_to_tools_without_their_own() {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let agent = agent(
        script_calls(vec![call("a", "stuck", json!({}))]),
        json!({"tool_timeout_ms": 40}),
        vec![never_completes("stuck", json!({}), saw_cancel)],
    );
    let (result, _) = run(&agent, "go");
    assert!(text(&tool_results(&result)[0]).contains("timed out after 40 ms"));
}

#[test]
fn a_late_completion_after_timeout_is_discarded() {
    let slow = tool("slow", json!({"timeout_ms": 30}), |_: Invocation| async {
        tokio::time::sleep(Duration::from_millis(120)).await;
        ToolOutcome::Completed(ToolResult::text("too late"))
    });
    let agent = agent(
        json!([{"tool_calls": [call("a", "slow", json!({}))]}, {"text": "waiting", "delay_ms": 200}]),
        json!({}),
        vec![slow],
    );
    let (result, events) = run(&agent, "go");
    assert!(!serde_json::to_string(&result.messages).unwrap().contains("too late"));
    assert!(!serde_json::to_string(&events).unwrap().contains("too late"));
}

#[test]
fn cancelling_mid_batch_reaches_running_tools_and_ends_the_run_once() {
    let tokens: Arc<std::sync::Mutex<Vec<tokio_util::sync::CancellationToken>>> = Default::default();
    let seen = tokens.clone();
    let blocking = tool("block", json!({}), move |call: Invocation| {
        seen.lock().unwrap().push(call.cancellation().clone());
        std::future::pending()
    });
    // Bound 3: "a" finishes at once, "b", "c" and "d" block, "e" never starts.
    let calls = vec![
        call("a", "echo", json!({"text": "quick"})),
        call("b", "block", json!({})),
        call("c", "block", json!({})),
        call("d", "block", json!({})),
        call("e", "block", json!({})),
    ];
    let agent = agent(script_calls(calls), json!({"max_concurrent_tools": 3}), vec![echo("echo"), blocking]);
    let (run_handle, events) = start(&agent, "go");
    while tokens.lock().unwrap().len() < 3 {
        std::thread::sleep(Duration::from_millis(1));
    }
    run_handle.cancel();
    let result = run_handle.wait_blocking().unwrap();
    let events = events.lock().unwrap().clone();
    assert_eq!(result.status, RunStatus::Cancelled);
    assert_event_invariants(&events);
    // The three running calls see cancellation; the fifth never started.
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), 3);
    assert!(tokens.iter().all(|t| t.is_cancelled()));
    // The transcript stays replayable: only answered calls remain.
    let transcript = serde_json::to_value(&result.messages).unwrap();
    let answered: Vec<&Value> = transcript[1]["tool_calls"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
    assert_eq!(answered, [&json!("a"), &json!("b"), &json!("c"), &json!("d")]);
    assert_eq!(of_type(&events, "tool_execution_start").len(), 4);
    let results = tool_results(&result);
    assert_eq!(text(&results[0]), "quick");
    assert!(text(&results[1]).contains("cancelled"));
    assert_eq!(of_type(&events, "run_end")[0]["status"], "cancelled");
}

#[test]
fn a_completion_the_cancellation_caused_is_discarded() {
    // The tool cancels its own run and answers at once because of it: the answer
    // comes within the wait in which the run sees the cancellation, and must be
    // discarded as any answer after a cancellation is.
    let slot: Arc<std::sync::Mutex<Option<ferrule::agent::Run>>> = Default::default();
    let seen = slot.clone();
    let stopping = tool("stop", json!({}), move |call: Invocation| {
        let seen = seen.clone();
        async move {
            let run = loop {
                if let Some(run) = seen.lock().unwrap().take() {
                    break run;
                }
                tokio::task::yield_now().await;
            };
            run.cancel();
            call.cancellation().cancelled().await;
            ToolOutcome::Completed(ToolResult::text("completed because cancelled"))
        }
    });
    let agent = agent(script_calls(vec![call("a", "stop", json!({}))]), json!({}), vec![stopping]);
    for _ in 0..50 {
        let (run_handle, events) = start(&agent, "go");
        *slot.lock().unwrap() = Some(run_handle.clone());
        let result = run_handle.wait_blocking().unwrap();
        assert_eq!(result.status, RunStatus::Cancelled);
        let results = tool_results(&result);
        assert_eq!(text(&results[0]), "The call to \"stop\" was cancelled because the run was cancelled.");
        assert_event_invariants(&events.lock().unwrap());
    }
}

#[test]
fn cancelling_during_the_model_request_ends_the_run_cancelled() {
    let agent = agent(json!([{"text": "slow answer", "delay_ms": 10_000}]), json!({}), vec![]);
    let (run_handle, events) = start(&agent, "go");
    std::thread::sleep(Duration::from_millis(20));
    run_handle.cancel();
    let result = run_handle.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    assert_event_invariants(&events.lock().unwrap());
}

#[test]
fn dropping_every_handle_cancels_the_run() {
    let agent = agent(json!([{"text": "slow", "delay_ms": 10_000}]), json!({}), vec![]);
    let (run_handle, events) = start(&agent, "go");
    drop(run_handle);
    for _ in 0..500 {
        if events.lock().unwrap().iter().any(|e| e["type"] == "run_end") {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let events = events.lock().unwrap().clone();
    assert_eq!(of_type(&events, "run_end")[0]["status"], "cancelled");
}

fn failing(name: &str, on_error: &str) -> Tool {
    tool(name, json!({"on_error": on_error}), |_: Invocation| async {
        ToolOutcome::Failed("the store is unreachable".to_owned())
    })
}

#[test]
fn on_error_feed_gives_the_failure_to_the_model() {
    let agent = agent(script_calls(vec![call("a", "store", json!({}))]), json!({}), vec![failing("store", "feed")]);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let results = tool_results(&result);
    assert_eq!(text(&results[0]), "the store is unreachable");
    assert_eq!(results[0]["is_error"], true);
}

#[test]
fn on_error_fatal_ends_the_run_after_the_batch() {
    let agent = agent(
        script_calls(vec![call("a", "store", json!({})), call("b", "echo", json!({"text": "sibling"}))]),
        json!({}),
        vec![failing("store", "fatal"), echo("echo")],
    );
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::ToolFailed);
    assert!(error.message.contains("store") && error.message.contains("unreachable"));
    assert_eq!(tool_results(&result).len(), 2, "the batch finishes and stays replayable");
    assert_eq!(of_type(&events, "run_end")[0]["error"]["code"], "TOOL_FAILED");
}

#[test]
fn an_invalid_result_becomes_an_error_result() {
    let bad = tool("bad", json!({}), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult {
            content: vec![ferrule::message::Part::Image { media_type: None, data: Some("AA==".into()), url: None }],
            ..ToolResult::default()
        })
    });
    let agent = agent(script_calls(vec![call("a", "bad", json!({}))]), json!({}), vec![bad]);
    let (result, _) = run(&agent, "go");
    let results = tool_results(&result);
    assert_eq!(results[0]["is_error"], true);
    assert!(text(&results[0]).contains("invalid result") && text(&results[0]).contains("media_type"));
}

#[test]
fn a_panicking_tool_becomes_an_error_result() {
    let panicky = tool("panicky", json!({}), |_: Invocation| async {
        panic!("secret panic text");
    });
    let agent = agent(script_calls(vec![call("a", "panicky", json!({}))]), json!({}), vec![panicky]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let results = tool_results(&result);
    assert_eq!(results[0]["is_error"], true);
    assert!(!text(&results[0]).contains("secret panic text"));
    assert_event_invariants(&events);
}

#[test]
fn model_failures_end_the_run_with_their_code() {
    let cases = [
        (json!([{"error": {"status": 429, "message": "slow down"}}]), ErrorCode::ProviderRateLimited),
        (json!([{"error": {"status": 401, "message": "bad key"}}]), ErrorCode::ProviderAuth),
        (json!([{"error": {"status": 529, "message": "busy"}}]), ErrorCode::ProviderOverloaded),
        (json!([{"tool_calls": [call("a", "echo", json!({}))]}]), ErrorCode::ScriptExhausted),
        (json!([{"panic": "model exploded"}]), ErrorCode::Panic),
    ];
    for (script, code) in cases {
        let agent = agent(script.clone(), json!({}), vec![echo("echo")]);
        let (result, events) = run(&agent, "go");
        assert_eq!(result.status, RunStatus::Failed, "{script}");
        assert_eq!(result.error.as_ref().unwrap().code, code, "{script}");
        assert_eq!(of_type(&events, "run_end")[0]["status"], "failed");
        assert_event_invariants(&events);
    }
}

#[test]
fn calls_of_a_failed_response_are_never_executed() {
    let (counted, ran) = counting_tool("counted");
    let agent = agent(
        json!([{"text": "partial", "tool_calls": [call("a", "counted", json!({}))], "stop_reason": "error"}]),
        json!({}),
        vec![counted],
    );
    let (result, _) = run(&agent, "go");
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(result.status, RunStatus::Failed);
    let transcript = serde_json::to_value(&result.messages).unwrap();
    assert!(transcript[1].get("tool_calls").is_none(), "{transcript}");
}

#[test]
fn deferred_tools_stay_hidden_until_a_result_discloses_them() {
    let unlock = tool("authenticate", json!({}), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult {
            added_tools: vec!["read_account".into(), "no_such_tool".into()],
            ..ToolResult::text("signed in")
        })
    });
    let hidden = tool("read_account", json!({"deferred": true}), |_: Invocation| async {
        ToolOutcome::Completed(ToolResult::text("balance 10"))
    });
    let agent = agent(
        json!([
            {"tool_calls": [call("a", "read_account", json!({}))]},
            {"tool_calls": [call("b", "authenticate", json!({}))]},
            {"tool_calls": [call("c", "read_account", json!({}))]},
            {"text": "done"}
        ]),
        json!({}),
        vec![unlock, hidden],
    );
    let (result, _) = run(&agent, "go");
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert!(texts[0].contains("Unknown tool \"read_account\"") && !texts[0].contains("read_account."), "{}", texts[0]);
    assert_eq!(texts[1], "signed in");
    assert_eq!(texts[2], "balance 10");
}

#[test]
fn max_tool_result_bytes_cuts_long_results() {
    let agent = agent(
        script_calls(vec![call("a", "echo", json!({"text": "x".repeat(100)}))]),
        json!({"max_tool_result_bytes": 10}),
        vec![echo("echo")],
    );
    let (result, _) = run(&agent, "go");
    let text = text(&tool_results(&result)[0]);
    assert!(text.starts_with("xxxxxxxxxx\n[result truncated: 10 of 100 bytes shown]"), "{text}");
}

#[test]
fn many_concurrent_runs_share_one_agent() {
    let gauge = Arc::new(Gauge::default());
    let agent = agent(
        script_calls(vec![call("a", "sleep", json!({"ms": 20})), call("b", "sleep", json!({"ms": 10}))]),
        json!({}),
        vec![sleeper("sleep", json!({}), gauge.clone())],
    );
    let runs: Vec<_> = (0..200).map(|i| start(&agent, &format!("run {i}"))).collect();
    for (run_handle, events) in runs {
        let result = run_handle.wait_blocking().unwrap();
        assert_eq!(result.status, RunStatus::Completed);
        assert_eq!(tool_results(&result).len(), 2);
        assert_event_invariants(&events.lock().unwrap());
    }
    assert_eq!(gauge.total(), 400);
    assert!(gauge.peak() > 2, "runs did not overlap (peak {})", gauge.peak());
}

#[test]
fn the_run_result_serialises_in_the_design_shape() {
    let agent = agent(json!([{"text": "hi"}]), json!({}), vec![]);
    let (result, events) = run(&agent, "go");
    let value = serde_json::to_value(&*result).unwrap();
    let mut keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["agent", "error", "final", "interruptions", "messages", "output", "rounds", "state", "status", "usage"]
    );
    assert_eq!((&value["interruptions"], &value["state"]), (&json!([]), &Value::Null));
    let run_end = of_type(&events, "run_end")[0];
    assert_eq!(run_end["result"], value);
    assert!(run_end["run_id"].as_str().unwrap().starts_with("run-"));
}

#[test]
fn a_transcript_is_replayable_as_the_next_runs_input() {
    let first = agent(script_calls(vec![call("a", "echo", json!({"text": "noted"}))]), json!({}), vec![echo("echo")]);
    let (result, _) = run(&first, "remember this");
    let mut messages = serde_json::to_value(&result.messages).unwrap();
    messages.as_array_mut().unwrap().push(json!({"role": "user", "content": "and now?"}));
    let input = ferrule::agent::RunInput::from_json(&json!({"messages": messages}).to_string())
        .expect("a run's transcript parses as input");

    let second = agent(json!([{"text": "still here"}]), json!({}), vec![echo("echo")]);
    let run_handle = second.start(input, None).unwrap();
    let next = run_handle.wait_blocking().unwrap();
    assert_eq!(next.status, RunStatus::Completed);
    assert_eq!(next.messages.len(), result.messages.len() + 2);
    assert_eq!(next.messages[..result.messages.len()], result.messages[..]);
    // `final` is the last assistant message of this run, not of the input.
    let last = serde_json::to_value(&next.final_message).unwrap();
    assert_eq!(last["content"][0]["text"], "still here");
}

#[test]
fn run_timeout_abandons_a_model_request_in_flight() {
    let agent = agent(json!([{"text": "late", "delay_ms": 60_000}]), json!({"run_timeout_ms": 100}), vec![]);
    let (result, events) = run(&agent, "hi");
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::Timeout);
    assert!(error.message.contains("100 ms"), "{}", error.message);
    assert_eq!(result.messages.len(), 1, "only the prompt: the answer never came");
    assert_event_invariants(&events);
}

#[test]
fn run_timeout_leaves_runs_that_end_in_time_and_host_cancels_alone() {
    let quick = agent(json!([{"text": "in time"}]), json!({"run_timeout_ms": 60_000}), vec![]);
    assert_eq!(run(&quick, "hi").0.status, RunStatus::Completed);
    let slow = agent(json!([{"text": "late", "delay_ms": 60_000}]), json!({"run_timeout_ms": 60_000}), vec![]);
    let (handle, _) = start(&slow, "hi");
    handle.cancel();
    let result = handle.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled, "{:?}", result.error);
}

/// An agent whose answers must be `{"plan": "gold" | "silver"}`.
fn structured(script: Value, retries: Option<u32>) -> ferrule::agent::Agent {
    let mut extra = json!({"output_schema": {"type": "object", "properties": {"plan": {"enum": ["gold", "silver"]}},
        "required": ["plan"], "additionalProperties": false}});
    if let Some(retries) = retries {
        extra["output_retries"] = json!(retries);
    }
    agent(script, extra, vec![])
}

#[test]
fn a_final_answer_that_satisfies_the_output_schema_is_the_output() {
    let agent = structured(json!([{"text": "```json\n{\"plan\": \"gold\"}\n```"}]), None);
    let (result, _) = run(&agent, "plan?");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.output, Some(json!({"plan": "gold"})));
    assert_eq!(serde_json::to_value(&*result).unwrap()["output"], json!({"plan": "gold"}));
    // Without a schema the output is null.
    let plain = agent_without_schema();
    assert_eq!(serde_json::to_value(&*run(&plain, "hi").0).unwrap()["output"], Value::Null);
}

fn agent_without_schema() -> ferrule::agent::Agent {
    agent(json!([{"text": "{\"plan\": \"gold\"}"}]), json!({}), vec![])
}

#[test]
fn an_answer_that_fails_the_schema_goes_back_with_what_is_wrong() {
    let agent = structured(
        json!([{"text": "Gold, I think."}, {"text": "{\"plan\": \"bronze\"}"}, {"text": "{\"plan\": \"silver\"}"}]),
        None,
    );
    let (result, _) = run(&agent, "plan?");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.output, Some(json!({"plan": "silver"})));
    assert_eq!(result.rounds, 3);
    let transcript = serde_json::to_value(&result.messages).unwrap();
    let corrections: Vec<&Value> =
        transcript.as_array().unwrap().iter().filter(|m| m["role"] == "user").skip(1).collect();
    assert_eq!(corrections.len(), 2);
    let said = |message: &Value| message["content"].as_str().unwrap().to_owned();
    assert!(said(corrections[0]).contains("it is not JSON"), "{}", said(corrections[0]));
    assert!(said(corrections[1]).contains("/plan"), "{}", said(corrections[1]));
}

#[test]
fn an_answer_still_wrong_after_the_retries_fails_the_run() {
    let agent = structured(json!([{"text": "no"}, {"text": "{\"plan\": 1}"}]), Some(1));
    let (result, _) = run(&agent, "plan?");
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_ref().unwrap();
    assert_eq!(error.code, ErrorCode::InvalidOutput);
    assert!(error.message.contains("1 correction"), "{}", error.message);
    assert_eq!(result.output, None);
}

#[test]
fn an_output_schema_that_does_not_compile_fails_the_build() {
    let config = json!({"model": {"provider": "scripted", "script": []},
        "output_schema": {"type": "object", "$ref": "https://example.com/schema"}});
    let error = ferrule::agent::AgentBuilder::from_json(&config.to_string()).and_then(|b| b.build()).err().unwrap();
    assert_eq!(error.code, ErrorCode::InvalidSchema);
    assert!(error.message.contains("output_schema"), "{}", error.message);
}

#[test]
fn an_execute_only_run_runs_the_hosts_calls_once_without_the_model() {
    // An empty script: any model request would fail the run.
    let agent = agent(json!([]), json!({}), vec![echo("lookup")]);
    let input = ferrule::agent::RunInput::from_json(
        &json!({"messages": [{"role": "user", "content": "Look up A."}],
                "execute": {"role": "assistant", "content": [], "tool_calls": [
                    {"id": "c1", "name": "lookup", "arguments": "{\"text\": \"A\"}"}]}})
        .to_string(),
    )
    .unwrap();
    let result = agent.start(input, None).unwrap().wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.rounds, 0);
    let transcript = serde_json::to_value(&result.messages).unwrap();
    let roles: Vec<&str> = transcript.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert_eq!(text(&transcript[2]), "A");
    for bad in [
        json!({"execute": {"role": "user", "content": "x"}}),
        json!({"execute": {"tool_calls": []}, "prompt": "x"}),
        json!({"execute": {"tool_calls": [], "colour": 1}}),
    ] {
        let error = ferrule::agent::RunInput::from_json(&bad.to_string()).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArg, "{bad}");
    }
}

#[test]
fn a_transcript_whose_calls_and_results_do_not_pair_up_is_refused() {
    let waiting = json!([{"role": "user", "content": "go"},
        {"role": "assistant", "content": [], "tool_calls": [{"id": "c1", "name": "t", "arguments": "{}"}]}]);
    let stray = json!([{"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "c9", "name": "t", "content": "ok"}]);
    for (messages, says) in [(waiting, "\"c1\" of messages[1] has no result"), (stray, "call \"c9\"")] {
        let error = ferrule::agent::RunInput::from_json(&json!({"messages": messages}).to_string()).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidArg);
        assert!(error.message.contains(says), "{}", error.message);
    }
}
