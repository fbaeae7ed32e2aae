//! Hooks, per-run tools and injection (DESIGN section 10) on the scripted model,
//! with hooks written in Rust.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::*;
use ferrule::agent::{Agent, AgentBuilder, RunInput, RunResult, RunStatus};
use ferrule::hook::{Hook, HookDecision, HookHistory, HookOptions, HookRequest, HookStage};
use ferrule::tool::{Invocation, Tool, ToolOutcome, ToolResult};
use ferrule::ErrorCode;
use serde_json::{json, Value};

/// A hook that answers each payload with the decision `decide` gives; every
/// payload it saw is kept in `seen`.
fn hook(
    stages: &[HookStage],
    seen: &Arc<Mutex<Vec<Value>>>,
    decide: impl Fn(&Value) -> Value + Send + Sync + 'static,
) -> Hook {
    let seen = seen.clone();
    Hook::new(stages.to_vec(), move |request: HookRequest| {
        let payload: Value = serde_json::from_str(request.payload()).unwrap();
        let decision = decide(&payload);
        seen.lock().unwrap().push(payload);
        let stage = request.stage();
        async move { HookDecision::from_value(stage, decision) }
    })
    .unwrap()
}

fn recorder() -> Arc<Mutex<Vec<Value>>> {
    Arc::new(Mutex::new(Vec::new()))
}

fn with_hooks(script: Value, extra: Value, tools: Vec<Tool>, hooks: Vec<Hook>) -> Agent {
    let mut config = json!({"model": {"provider": "scripted", "script": script}});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let mut builder = AgentBuilder::from_json(&config.to_string()).unwrap();
    for tool in tools {
        builder.add_tool(tool).unwrap();
    }
    for hook in hooks {
        builder.add_hook(hook);
    }
    builder.build().unwrap()
}

/// A tool that counts its calls and answers with its arguments.
fn counted(name: &str, options: Value) -> (Tool, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let tool = tool(name, options, move |call: Invocation| {
        seen.fetch_add(1, Ordering::SeqCst);
        let arguments = call.arguments().to_string();
        async move { ToolOutcome::Completed(ToolResult::text(arguments)) }
    });
    (tool, count)
}

fn transcript(result: &RunResult) -> Vec<Value> {
    serde_json::to_value(&result.messages).unwrap().as_array().unwrap().clone()
}

fn failed_with(result: &RunResult, code: ErrorCode, says: &str) {
    assert_eq!(result.status, RunStatus::Failed);
    let error = result.error.as_ref().expect("an error");
    assert_eq!(error.code, code, "{}", error.message);
    assert!(error.message.contains(says), "{}", error.message);
    // Whatever ended the run, the transcript replays.
    let replay = json!({"messages": result.messages});
    RunInput::from_json(&replay.to_string()).expect("a legal transcript");
}

#[test]
fn run_start_hooks_see_and_may_replace_the_input() {
    let seen = recorder();
    let replace =
        hook(&[HookStage::RunStart], &seen, |_| json!({"messages": [{"role": "user", "content": "Replaced."}]}));
    let second_seen = recorder();
    let second = hook(&[HookStage::RunStart], &second_seen, |_| json!({}));
    let agent = with_hooks(json!([{"text": "ok"}]), json!({}), vec![], vec![replace, second]);
    let (result, _) = run(&agent, "Original.");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(transcript(&result)[0], json!({"role": "user", "content": "Replaced."}));
    let payload = &seen.lock().unwrap()[0];
    assert!(payload["run_id"].as_str().unwrap().starts_with("run-"));
    assert_eq!(payload["messages"][0]["content"], "Original.");
    assert_eq!(
        second_seen.lock().unwrap()[0]["messages"][0]["content"],
        "Replaced.",
        "the second hook sees the first's effect"
    );

    let illegal = hook(
        &[HookStage::RunStart],
        &recorder(),
        |_| json!({"messages": [{"role": "tool", "tool_call_id": "x", "name": "t", "content": "?"}]}),
    );
    let agent = with_hooks(json!([{"text": "ok"}]), json!({}), vec![], vec![illegal]);
    let (result, _) = run(&agent, "go");
    failed_with(&result, ErrorCode::InvalidArg, "run_start hook's decision \"messages\"");
}

#[test]
fn turn_start_hooks_choose_tools_inject_and_replace_the_history() {
    let (lookup, lookups) = counted("lookup", json!({}));
    let (delete, deletes) = counted("delete", json!({}));
    let seen = recorder();
    let turn_hook = hook(&[HookStage::TurnStart], &seen, |payload| match payload["turn"].as_u64() {
        Some(1) => json!({"tools": ["lookup"]}),
        Some(2) => json!({"inject": [{"role": "user", "content": "Also: be brief."}]}),
        _ => json!({}),
    });
    let script = json!([
        {"tool_calls": [call("c1", "lookup", json!({})), call("c2", "delete", json!({}))]},
        {"tool_calls": [call("c3", "delete", json!({}))]},
        {"text": "done"}
    ]);
    let agent = with_hooks(script, json!({}), vec![lookup, delete], vec![turn_hook]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!((lookups.load(Ordering::SeqCst), deletes.load(Ordering::SeqCst)), (1, 1));
    let results = tool_results(&result);
    assert!(text(&results[1]).contains("Unknown tool \"delete\". Available tools: lookup."), "{}", text(&results[1]));
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0]["tools"], json!(["lookup", "delete"]));
    assert_eq!(seen.len(), 3);
    let messages = transcript(&result);
    let injected: Vec<&Value> = messages.iter().filter(|m| m["origin"] == "injection").collect();
    assert_eq!(injected, [&json!({"role": "user", "content": "Also: be brief.", "origin": "injection"})]);
    // Injected before turn 2's request: right after turn 1's results.
    assert_eq!(messages[4], *injected[0]);
    let injected_events = of_type(&events, "message_injected");
    assert_eq!(injected_events.len(), 1);
    assert_eq!(injected_events[0]["message"], *injected[0]);
    assert_event_invariants(&events);

    let compacting = hook(&[HookStage::TurnStart], &recorder(), |payload| {
        if payload["turn"] == 2 {
            json!({"messages": [{"role": "user", "content": "Summary: looked up."}]})
        } else {
            json!({})
        }
    });
    let script = json!([{"tool_calls": [call("c1", "lookup", json!({}))]}, {"text": "done"}]);
    let agent = with_hooks(script, json!({}), vec![counted("lookup", json!({})).0], vec![compacting]);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let roles: Vec<Value> = transcript(&result).iter().map(|m| m["role"].clone()).collect();
    assert_eq!(roles, [json!("user"), json!("assistant")]);

    let unknown = hook(&[HookStage::TurnStart], &recorder(), |_| json!({"tools": ["lookup", "nope"]}));
    let agent = with_hooks(json!([{"text": "x"}]), json!({}), vec![counted("lookup", json!({})).0], vec![unknown]);
    failed_with(&run(&agent, "go").0, ErrorCode::InvalidArg, "names \"nope\"");
    let assistant =
        hook(&[HookStage::TurnStart], &recorder(), |_| json!({"inject": [{"role": "assistant", "content": []}]}));
    let agent = with_hooks(json!([{"text": "x"}]), json!({}), vec![], vec![assistant]);
    failed_with(&run(&agent, "go").0, ErrorCode::InvalidArg, "only user and system messages");
}

#[test]
fn tool_call_hooks_deny_replace_approve_and_interrupt() {
    let (echo, echoes) = counted("echo", json!({}));
    let (gated, gated_runs) = counted("gated", json!({"needs_approval": true}));
    let schema_tool = Tool::new(
        "typed",
        "typed",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        Default::default(),
        |call: Invocation| {
            let n = call.arguments()["n"].clone();
            async move { ToolOutcome::Completed(ToolResult::text(format!("n={n}"))) }
        },
    )
    .unwrap();
    let seen = recorder();
    let policy = hook(&[HookStage::ToolCall], &seen, |payload| match payload["call"]["id"].as_str().unwrap() {
        "deny" => json!({"deny": "Not allowed here."}),
        "fix" => json!({"arguments": {"n": 7}}),
        "break" => json!({"arguments": {"n": "seven"}}),
        "approve" => json!({"approve": true}),
        _ => json!({}),
    });
    let script = json!([
        {"tool_calls": [
            call("deny", "echo", json!({})), call("fix", "typed", json!({"n": 1})),
            call("break", "typed", json!({"n": 1})), call("approve", "gated", json!({})),
            call("plain", "echo", json!({"x": 1}))]},
        {"text": "done"}
    ]);
    let agent = with_hooks(script, json!({}), vec![echo, gated, schema_tool], vec![policy]);
    let (result, events) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert_eq!(texts[0], "Not allowed here.");
    assert_eq!(texts[1], "n=7");
    assert!(texts[2].contains("Invalid arguments for \"typed\""), "{}", texts[2]);
    assert_eq!(texts[3], "{}");
    assert_eq!(texts[4], "{\"x\":1}");
    assert_eq!((echoes.load(Ordering::SeqCst), gated_runs.load(Ordering::SeqCst)), (1, 1));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 5, "every valid call, before any runs");
    assert_eq!(seen[3]["needs_approval"], true);
    assert_eq!(seen[4]["needs_approval"], false);
    assert_eq!(seen[1]["call"]["arguments"], json!({"n": 1}));
    assert_eq!(seen[0]["turn"], 1);
    assert_event_invariants(&events);

    let interrupting = hook(&[HookStage::ToolCall], &recorder(), |_| json!({"interrupt": true}));
    let (echo, echoes) = counted("echo", json!({}));
    let agent =
        with_hooks(json!([{"tool_calls": [call("c1", "echo", json!({}))]}]), json!({}), vec![echo], vec![interrupting]);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Interrupted);
    assert_eq!(result.interruptions[0].call_id, "c1");
    assert_eq!(echoes.load(Ordering::SeqCst), 0);
}

#[test]
fn tool_result_hooks_replace_results() {
    let seen = recorder();
    let replacing = hook(&[HookStage::ToolResult], &seen, |payload| match payload["call_id"].as_str().unwrap() {
        "c1" => json!({"result": {"content": "[redacted]", "is_error": false}}),
        "c2" => json!({"result": 42}),
        _ => json!({}),
    });
    let script = json!([
        {"tool_calls": [call("c1", "echo", json!({"text": "secret"})), call("c2", "echo", json!({})), call("c3", "echo", json!({"text": "kept"}))]},
        {"text": "done"}
    ]);
    let agent = with_hooks(script, json!({}), vec![echo("echo")], vec![replacing]);
    let (result, events) = run(&agent, "go");
    let results = tool_results(&result);
    assert_eq!(text(&results[0]), "[redacted]");
    assert!(results[1]["is_error"].as_bool().unwrap());
    assert!(text(&results[1]).contains("invalid result"), "{}", text(&results[1]));
    assert_eq!(text(&results[2]), "kept");
    let ends = of_type(&events, "tool_execution_end");
    let end_of_c1 = ends.iter().find(|e| e["call_id"] == "c1").unwrap();
    assert_eq!(end_of_c1["result"]["content"][0]["text"], "[redacted]", "the end event carries the replaced result");
    let seen = seen.lock().unwrap();
    let of_c1 = seen.iter().find(|p| p["call_id"] == "c1").unwrap();
    assert_eq!((of_c1["name"].clone(), of_c1["is_error"].clone()), (json!("echo"), json!(false)));
    assert_eq!(of_c1["result"]["content"][0]["text"], "secret");
}

#[test]
fn final_answer_hooks_send_an_answer_back_with_feedback() {
    let seen = recorder();
    let guard = hook(&[HookStage::FinalAnswer], &seen, |payload| {
        let text = payload["message"]["content"][0]["text"].as_str().unwrap_or("");
        if text.contains("password") {
            json!({"retry": "Do not reveal passwords."})
        } else {
            json!({})
        }
    });
    let agent =
        with_hooks(json!([{"text": "The password is x."}, {"text": "I cannot say."}]), json!({}), vec![], vec![guard]);
    let (result, _) = run(&agent, "password?");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.rounds, 2);
    let messages = transcript(&result);
    assert_eq!(messages[2], json!({"role": "user", "content": "Do not reveal passwords."}));
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!(seen.lock().unwrap()[0]["turn"], 1);

    let always_retry = hook(&[HookStage::FinalAnswer], &recorder(), |_| json!({"retry": "Again."}));
    let agent = with_hooks(json!([{"text": "a", "repeat": 10}]), json!({"max_rounds": 3}), vec![], vec![always_retry]);
    let (result, _) = run(&agent, "go");
    assert_eq!((result.status, result.rounds), (RunStatus::MaxRounds, 3), "retries count toward max_rounds");
}

#[test]
fn an_abort_at_any_stage_fails_the_run_with_a_legal_transcript() {
    for stage in
        [HookStage::RunStart, HookStage::TurnStart, HookStage::ToolCall, HookStage::ToolResult, HookStage::FinalAnswer]
    {
        let aborting = hook(&[stage], &recorder(), |_| json!({"abort": "policy says no"}));
        let script =
            json!([{"tool_calls": [call("c1", "echo", json!({})), call("c2", "echo", json!({}))]}, {"text": "done"}]);
        let agent = with_hooks(script, json!({}), vec![echo("echo")], vec![aborting]);
        let (result, events) = run(&agent, "go");
        failed_with(
            &result,
            ErrorCode::HookAborted,
            &format!("a {} hook aborted the run: policy says no", stage.name()),
        );
        assert_event_invariants(&events);
    }
}

#[test]
fn invalid_decisions_fail_the_run_naming_the_problem() {
    for (stage, decision, says) in [
        (HookStage::ToolCall, json!({"deny": "x", "approve": true}), "two decisions at once"),
        (HookStage::ToolCall, json!({"retry": "x"}), "\"retry\" is not a decision of this stage"),
        (HookStage::ToolCall, json!({"approve": false}), "takes true"),
        (HookStage::TurnStart, json!({"colour": 1}), "is not a decision"),
        (HookStage::TurnStart, json!([]), "must be a JSON object"),
        (HookStage::FinalAnswer, json!({"retry": 5}), "must be a string"),
    ] {
        let bad = hook(&[stage], &recorder(), move |_| decision.clone());
        let script = json!([{"tool_calls": [call("c1", "echo", json!({}))]}, {"text": "done"}]);
        let agent = with_hooks(script, json!({}), vec![echo("echo")], vec![bad]);
        failed_with(&run(&agent, "go").0, ErrorCode::InvalidArg, says);
    }
}

#[test]
fn an_empty_object_goes_on_however_it_is_spaced_and_near_misses_are_parsed() {
    for text in ["{}", " {}", "{ }", "\t{\r\n}\n", "{\n\n}"] {
        assert!(matches!(HookDecision::from_json(HookStage::ToolCall, text), Ok(HookDecision::Continue)), "{text:?}");
    }
    for (text, says) in [
        ("{", "hook decision"),
        ("}", "hook decision"),
        ("{}}", "hook decision"),
        ("{\u{a0}}", "hook decision"),
        ("{} {}", "hook decision"),
        ("[]", "must be a JSON object"),
        ("", "hook decision"),
    ] {
        let error = HookDecision::from_json(HookStage::ToolCall, text).unwrap_err();
        assert!(error.message.contains(says), "{text:?}: {}", error.message);
    }
}

#[test]
fn a_hook_that_never_decides_times_out_and_cancellation_reaches_it() {
    let silent = Hook::new(vec![HookStage::TurnStart], |_: HookRequest| {
        std::future::pending::<ferrule::error::Result<HookDecision>>()
    })
    .unwrap();
    let agent = with_hooks(json!([{"text": "x"}]), json!({"hook_timeout_ms": 30}), vec![], vec![silent.clone()]);
    let (result, events) = run(&agent, "go");
    failed_with(&result, ErrorCode::Timeout, "a turn_start hook did not decide within 30 ms");
    assert_event_invariants(&events);

    let agent = with_hooks(json!([{"text": "x"}]), json!({"hook_timeout_ms": 0}), vec![], vec![silent]);
    let (handle, _) = start(&agent, "go");
    std::thread::sleep(std::time::Duration::from_millis(20));
    handle.cancel();
    assert_eq!(handle.wait_blocking().unwrap().status, RunStatus::Cancelled);
}

#[test]
fn a_run_may_be_limited_to_some_tools() {
    let (lookup, lookups) = counted("lookup", json!({}));
    let (delete, deletes) = counted("delete", json!({}));
    let seen = recorder();
    let watcher = hook(&[HookStage::TurnStart], &seen, |_| json!({}));
    let script =
        json!([{"tool_calls": [call("c1", "lookup", json!({})), call("c2", "delete", json!({}))]}, {"text": "done"}]);
    let agent = with_hooks(script, json!({}), vec![lookup, delete], vec![watcher]);
    let input = RunInput::from_json(r#"{"prompt": "go", "tools": ["lookup"]}"#).unwrap();
    let (result, _) = run_input(&agent, input);
    assert_eq!((lookups.load(Ordering::SeqCst), deletes.load(Ordering::SeqCst)), (1, 0));
    assert!(text(&tool_results(&result)[1]).contains("Unknown tool \"delete\""));
    assert_eq!(seen.lock().unwrap()[0]["tools"], json!(["lookup"]));
    let error =
        agent.start(RunInput::from_json(r#"{"prompt": "go", "tools": ["nope"]}"#).unwrap(), None).err().unwrap();
    assert_eq!(error.code, ErrorCode::InvalidArg);
    assert!(error.message.contains("\"nope\""), "{}", error.message);
}

/// A hook future that keeps the waker of its first poll only and is woken,
/// through it, from another thread 20 ms later.
struct WakesTheFirstPoller {
    woken: Arc<std::sync::atomic::AtomicBool>,
    started: bool,
}

impl std::future::Future for WakesTheFirstPoller {
    type Output = ferrule::error::Result<HookDecision>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        if self.woken.load(Ordering::SeqCst) {
            return std::task::Poll::Ready(Ok(HookDecision::Continue));
        }
        if !self.started {
            self.started = true;
            let (woken, waker) = (self.woken.clone(), cx.waker().clone());
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                woken.store(true, Ordering::SeqCst);
                waker.wake();
            });
        }
        std::task::Poll::Pending
    }
}

#[test]
fn a_hook_that_is_woken_through_its_first_poll_is_heard() {
    let late = Hook::new(vec![HookStage::TurnStart], |_: HookRequest| WakesTheFirstPoller {
        woken: Arc::default(),
        started: false,
    })
    .unwrap();
    // Were the first poll's waker not the run's, nothing would wake the run
    // before the hook's timeout, whose timer polls the hook once more (and
    // finds it decided): the run would end then, 10 s on, not 20 ms on.
    let agent = with_hooks(json!([{"text": "x"}]), json!({"hook_timeout_ms": 10000}), vec![], vec![late]);
    let started = std::time::Instant::now();
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "woken by the timeout: {:?}", started.elapsed());
}

#[test]
fn no_hook_is_consulted_once_the_run_is_cancelled() {
    let run_slot: Arc<Mutex<Option<ferrule::agent::Run>>> = Arc::new(Mutex::new(None));
    let slot = run_slot.clone();
    // The tool cancels its own run and returns: its result is not shown to the
    // tool_result hook, and no turn starts.
    let cancelling = tool("cancelling", json!({}), move |_: Invocation| {
        let slot = slot.clone();
        async move {
            loop {
                if let Some(run) = slot.lock().unwrap().as_ref() {
                    run.cancel();
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            ToolOutcome::Completed(ToolResult::text("done"))
        }
    });
    let seen = recorder();
    let watcher = hook(&[HookStage::ToolResult, HookStage::TurnStart, HookStage::FinalAnswer], &seen, |_| json!({}));
    let script = json!([{"tool_calls": [call("c1", "cancelling", json!({}))]}, {"text": "x"}]);
    let agent = with_hooks(script, json!({}), vec![cancelling], vec![watcher]);
    let (handle, _) = start(&agent, "go");
    *run_slot.lock().unwrap() = Some(handle.clone());
    let result = handle.wait_blocking().unwrap();
    run_slot.lock().unwrap().take();
    assert_eq!(result.status, RunStatus::Cancelled);
    // Only turn 1's turn_start, before the cancel.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].get("tools").is_some(), "{seen:?}");
}

#[test]
fn a_cancel_while_a_result_hook_decides_still_ends_every_started_call() {
    let run_slot: Arc<Mutex<Option<ferrule::agent::Run>>> = Arc::new(Mutex::new(None));
    let slot = run_slot.clone();
    let cancelling = Hook::new(vec![HookStage::ToolResult], move |request: HookRequest| {
        let payload: Value = serde_json::from_str(request.payload()).unwrap();
        if payload["call_id"] == "fast" {
            if let Some(run) = slot.lock().unwrap().as_ref() {
                run.cancel();
            }
        }
        async { Ok(HookDecision::Continue) }
    })
    .unwrap();
    let slow = tool("slow", json!({}), |_: Invocation| async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        ToolOutcome::Completed(ToolResult::text("late"))
    });
    let fast = tool("fast", json!({}), |_: Invocation| async {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        ToolOutcome::Completed(ToolResult::text("SECRET"))
    });
    let script =
        json!([{"tool_calls": [call("slow", "slow", json!({})), call("fast", "fast", json!({}))]}, {"text": "x"}]);
    let agent = with_hooks(script, json!({}), vec![slow, fast], vec![cancelling]);
    let (handle, events) = start(&agent, "go");
    *run_slot.lock().unwrap() = Some(handle.clone());
    let result = handle.wait_blocking().unwrap();
    run_slot.lock().unwrap().take();
    assert_eq!(result.status, RunStatus::Cancelled);
    let events = events.lock().unwrap().clone();
    assert_event_invariants(&events);
    assert_eq!(of_type(&events, "tool_execution_end").len(), 2);
    let texts: Vec<String> = tool_results(&result).iter().map(text).collect();
    assert!(texts.iter().all(|t| t.contains("cancelled")), "{texts:?}");
}

#[test]
fn a_guardrail_that_stops_the_run_keeps_what_it_judged_out() {
    let redact = hook(&[HookStage::ToolResult], &recorder(), |payload| {
        if payload["result"]["content"][0]["text"].as_str().unwrap_or("").contains("SECRET") {
            json!({"abort": "the result leaks a secret"})
        } else {
            json!({})
        }
    });
    let script = json!([{"tool_calls": [call("c1", "echo", json!({"text": "SECRET-123"}))]}, {"text": "x"}]);
    let agent = with_hooks(script, json!({}), vec![echo("echo")], vec![redact]);
    let (result, events) = run(&agent, "go");
    failed_with(&result, ErrorCode::HookAborted, "leaks a secret");
    // The call's arguments carry the text too; its result must not.
    let results = serde_json::to_string(&(tool_results(&result), of_type(&events, "tool_execution_end"))).unwrap();
    assert!(!results.contains("SECRET-123"), "the judged result got out: {results}");
    assert_event_invariants(&events);

    let guard = hook(&[HookStage::FinalAnswer], &recorder(), |_| json!({"abort": "unsafe answer"}));
    let agent = with_hooks(json!([{"text": "Here is how to pick the lock."}]), json!({}), vec![], vec![guard]);
    let (result, _) = run(&agent, "go");
    failed_with(&result, ErrorCode::HookAborted, "unsafe answer");
    assert!(result.final_message.is_none());
    assert_eq!(result.messages.len(), 1, "the rejected answer left the transcript");
}

#[test]
fn injections_are_all_or_nothing_and_always_reported() {
    let inject_then_abort = vec![
        hook(&[HookStage::TurnStart], &recorder(), |_| json!({"inject": [{"role": "user", "content": "hi"}]})),
        hook(&[HookStage::TurnStart], &recorder(), |_| json!({"abort": "no"})),
    ];
    let agent = with_hooks(json!([{"text": "x"}]), json!({}), vec![], inject_then_abort);
    let (result, events) = run(&agent, "go");
    failed_with(&result, ErrorCode::HookAborted, "no");
    assert_eq!(result.messages.len(), 2);
    assert_eq!(of_type(&events, "message_injected").len(), 1, "an injection that stays is reported");

    let half_valid = hook(
        &[HookStage::TurnStart],
        &recorder(),
        |_| json!({"inject": [{"role": "user", "content": "ok"}, {"role": "assistant", "content": []}]}),
    );
    let agent = with_hooks(json!([{"text": "x"}]), json!({}), vec![], vec![half_valid]);
    let (result, events) = run(&agent, "go");
    failed_with(&result, ErrorCode::InvalidArg, "only user and system messages");
    assert_eq!(result.messages.len(), 1, "nothing of an invalid decision is applied");
    assert!(of_type(&events, "message_injected").is_empty());
}

#[test]
fn a_resumed_batch_keeps_its_turns_tool_set() {
    let (gated, _) = counted("gated", json!({"needs_approval": true}));
    let (other, others) = counted("other", json!({}));
    let chooser = hook(&[HookStage::TurnStart], &recorder(), |_| json!({"tools": ["gated", "gated"]}));
    let seen = recorder();
    let watcher = hook(&[HookStage::ToolCall], &seen, |_| json!({}));
    let script =
        json!([{"tool_calls": [call("c1", "gated", json!({})), call("c2", "other", json!({}))]}, {"text": "done"}]);
    let agent = with_hooks(script, json!({}), vec![gated, other], vec![chooser, watcher]);
    let (first, _) = run(&agent, "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    let state = serde_json::to_string(first.state.as_ref().unwrap()).unwrap();
    let input = RunInput::from_json(&format!(r#"{{"resume": {state}, "decisions": {{"c1": {{"approve": true}}}}}}"#));
    let (result, _) = run_input(&agent, input.unwrap());
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(others.load(Ordering::SeqCst), 0, "a tool the turn left out ran after the resume");
    assert!(text(&tool_results(&result)[1]).contains("Unknown tool \"other\""));
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|p| p["turn"] == 1), "the resumed batch belongs to turn 1");
    let of_c1: Vec<&Value> = seen.iter().filter(|p| p["call"]["id"] == "c1").map(|p| &p["needs_approval"]).collect();
    assert_eq!(of_c1, [&json!(true), &json!(false)], "once decided, the call needs no approval");
}

#[test]
fn blank_texts_empty_histories_and_unforceable_choices_are_refused() {
    for (stage, decision) in [
        (HookStage::ToolCall, json!({"deny": " "})),
        (HookStage::FinalAnswer, json!({"retry": ""})),
        (HookStage::RunStart, json!({"messages": []})),
        (HookStage::TurnStart, json!({"messages": []})),
    ] {
        let bad = hook(&[stage], &recorder(), move |_| decision.clone());
        let script = json!([{"tool_calls": [call("c1", "echo", json!({}))]}, {"text": "done"}]);
        let agent = with_hooks(script, json!({}), vec![echo("echo")], vec![bad]);
        failed_with(&run(&agent, "go").0, ErrorCode::InvalidArg, "must not be");
    }
    let forced =
        with_hooks(json!([{"text": "x"}]), json!({"tool_choice": {"name": "a"}}), vec![echo("a"), echo("b")], vec![]);
    let error = forced.start(RunInput::from_json(r#"{"prompt": "go", "tools": ["b"]}"#).unwrap(), None).err().unwrap();
    assert!(error.message.contains("tool_choice"), "{}", error.message);
    // A turn that leaves the named tool out is not forced to call it.
    let narrowing = hook(&[HookStage::TurnStart], &recorder(), |_| json!({"tools": ["b"]}));
    let forced = with_hooks(
        json!([{"text": "x"}]),
        json!({"tool_choice": {"name": "a"}}),
        vec![echo("a"), echo("b")],
        vec![narrowing],
    );
    assert_eq!(run(&forced, "go").0.status, RunStatus::Completed);
}

#[test]
fn an_empty_injection_is_nothing_and_a_run_a_final_answer_hook_stopped_has_no_final() {
    let nothing = hook(&[HookStage::TurnStart], &recorder(), |_| json!({"inject": []}));
    let agent = with_hooks(json!([{"text": "x"}]), json!({}), vec![], vec![nothing]);
    assert_eq!(run(&agent, "go").0.status, RunStatus::Completed);

    let seen = recorder();
    let retry_then_abort = hook(&[HookStage::FinalAnswer], &seen, |payload| match payload["turn"].as_u64() {
        Some(1) => json!({"retry": "Not that."}),
        _ => json!({"abort": "still not"}),
    });
    let agent = with_hooks(json!([{"text": "FIRST"}, {"text": "SECOND"}]), json!({}), vec![], vec![retry_then_abort]);
    let (result, _) = run(&agent, "go");
    failed_with(&result, ErrorCode::HookAborted, "still not");
    assert!(result.final_message.is_none(), "a rejected answer became final: {:?}", result.final_message);

    let (first, _) = run(
        &with_hooks(
            json!([{"tool_calls": [call("c1", "g", json!({}))]}]),
            json!({}),
            vec![counted("g", json!({"needs_approval": true})).0],
            vec![],
        ),
        "go",
    );
    let state = serde_json::to_string(first.state.as_ref().unwrap()).unwrap();
    let input = RunInput::from_json(&format!(
        r#"{{"resume": {state}, "decisions": {{"c1": {{"approve": true}}}}, "tools": ["g"]}}"#
    ))
    .unwrap();
    let agent = with_hooks(
        json!([{"tool_calls": [call("c1", "g", json!({}))]}]),
        json!({}),
        vec![counted("g", json!({"needs_approval": true})).0],
        vec![],
    );
    let error = agent.start(input, None).err().expect("tools with resume are refused");
    assert!(error.message.contains("takes no \"tools\""), "{}", error.message);
}

#[test]
fn a_hook_without_history_sees_the_count_and_no_messages() {
    let stages = [HookStage::RunStart, HookStage::TurnStart];
    let (without, with) = (recorder(), recorder());
    let hooks = vec![
        hook(&stages, &without, |_| json!({})).with_history(HookHistory::None),
        hook(&stages, &with, |_| json!({})),
    ];
    let (lookup, _) = counted("lookup", json!({}));
    let agent = with_hooks(
        json!([{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {}}]}, {"text": "done"}]),
        json!({}),
        vec![lookup],
        hooks,
    );
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let counts = |seen: &Arc<Mutex<Vec<Value>>>| -> Vec<(u64, usize)> {
        let seen = seen.lock().unwrap();
        seen.iter().map(|p| (p["message_count"].as_u64().unwrap(), p["messages"].as_array().unwrap().len())).collect()
    };
    // run_start (the prompt), turn 1 (the prompt), turn 2 (with the call and its result).
    assert_eq!(counts(&without), [(1, 0), (1, 0), (3, 0)]);
    assert_eq!(counts(&with), [(1, 1), (1, 1), (3, 3)]);

    let options = HookOptions::from_json(r#"{"stages": ["turn_start"], "history": "none"}"#).unwrap();
    assert_eq!(options.history, HookHistory::None);
    assert_eq!(HookOptions::from_json(r#"["turn_start"]"#).unwrap().history, HookHistory::Full);
    let error = HookOptions::from_json(r#"{"stages": ["turn_start"], "history": "some"}"#).unwrap_err();
    assert_eq!(error.code, ErrorCode::InvalidArg);
    assert!(error.message.contains("full"), "{}", error.message);
}

#[test]
fn hooks_see_the_history_other_hooks_changed_whether_or_not_they_take_it() {
    // A hook without the history injects at turns 1 and 3 and replaces the
    // history at turn 2; one with it, consulted after, sees each change.
    let changing = || {
        hook(&[HookStage::TurnStart], &recorder(), |payload| match payload["turn"].as_u64() {
            Some(1) => json!({"inject": [{"role": "user", "content": "Note."}]}),
            Some(2) => json!({"messages": [{"role": "user", "content": "Summary."}]}),
            Some(3) => json!({"inject": [{"role": "user", "content": "Later."}]}),
            _ => json!({}),
        })
        .with_history(HookHistory::None)
    };
    let calls =
        |ids: &[&str]| ids.iter().map(|id| json!({"tool_calls": [call(id, "lookup", json!({}))]})).collect::<Vec<_>>();
    let mut script = calls(&["c1", "c2", "c3"]);
    script.push(json!({"text": "done"}));
    let script = Value::Array(script);
    let seen = recorder();
    let hooks = vec![changing(), hook(&[HookStage::TurnStart], &seen, |_| json!({}))];
    let agent = with_hooks(script.clone(), json!({}), vec![counted("lookup", json!({})).0], hooks);
    let (result, _) = run(&agent, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let seen = seen.lock().unwrap();
    let contents = |messages: &Value| -> Vec<Value> {
        messages.as_array().unwrap().iter().map(|m| m["content"].clone()).collect()
    };
    for payload in seen.iter() {
        assert_eq!(payload["message_count"], payload["messages"].as_array().unwrap().len());
    }
    assert_eq!(contents(&seen[0]["messages"]), [json!("go"), json!("Note.")]);
    assert_eq!(contents(&seen[1]["messages"]), [json!("Summary.")]);
    assert_eq!(contents(&seen[2]["messages"]).len(), 4);
    assert_eq!(contents(&seen[2]["messages"])[3], json!("Later."));

    // Alone, and with a history budget so small that the last request leaves
    // the oldest call out (measured by the messages' JSON, which the hooks did
    // not keep), the changes reach the transcript the same way.
    let transcript_of = |result: &RunResult| contents(&Value::Array(transcript(result)));
    let whole = transcript_of(&result);
    for (extra, compacted) in [(json!({}), 0), (json!({"history": {"max_input_tokens": 1}}), 1)] {
        let agent = with_hooks(script.clone(), extra, vec![counted("lookup", json!({})).0], vec![changing()]);
        let (result, events) = run(&agent, "go");
        assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
        assert_eq!(transcript_of(&result), whole);
        assert_eq!(of_type(&events, "history_compacted").len().min(1), compacted);
    }
}
