//! Agents called as tools: nested runs whose events reach the calling run's,
//! whose tokens are counted once, and which end with the run that called them.

use std::sync::Arc;

use crate::common::agents::*;
use crate::common::*;
use ferrule::agent::{Agent, AgentBuilder, AgentToolMode, AgentToolOptions, AgentToolSpec, HandoffMessages, RunStatus};
use ferrule::error::ErrorCode;
use ferrule::hook::{Hook, HookDecision, HookRequest, HookStage};
use ferrule::tool::{Invocation, ToolOutcome, ToolResult};
use serde_json::{json, Value};

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output})
}

/// The events of the nested runs, unwrapped, with the wrapper's call id,
/// agent and depth.
fn nested(events: &[Value]) -> Vec<(String, String, u64, Value)> {
    of_type(events, "agent_event")
        .into_iter()
        .map(|e| {
            let call = e["call_id"].as_str().unwrap().to_owned();
            (call, e["agent"].as_str().unwrap().to_owned(), e["depth"].as_u64().unwrap(), e["event"].clone())
        })
        .collect()
}

#[test]
fn a_nested_run_s_events_come_wrapped_in_order_inside_its_call_and_stay_out_of_the_transcript() {
    let researcher = agent(
        json!([
            {"tool_calls": [call("r1", "lookup", json!({"text": "facts"}))], "usage": usage(10, 2)},
            {"text": "the facts", "usage": usage(20, 3)}
        ]),
        json!({}),
        vec![echo("lookup")],
    );
    let boss = parent_of(
        json!([
            {"tool_calls": [call("c1", "researcher", json!({"input": "find facts"}))], "usage": usage(100, 5)},
            {"text": "done", "usage": usage(200, 7)}
        ]),
        json!({}),
        vec![as_tool("researcher", &researcher)],
    );
    let (result, events) = run(&boss, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_event_invariants(&events);

    // The parent's own events, with the nested ones inside the call.
    let kinds = types(&events);
    let start = kinds.iter().position(|k| k == "tool_execution_start").unwrap();
    let end = kinds.iter().position(|k| k == "tool_execution_end").unwrap();
    let wrapped: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == "agent_event").collect();
    assert!(!wrapped.is_empty());
    assert!(wrapped.iter().all(|&i| start < i && i < end), "{kinds:?}");

    // The nested run's events, whole and in their order.
    let inner = nested(&events);
    assert!(inner.iter().all(|(call, agent, depth, _)| call == "c1" && agent == "researcher" && *depth == 1));
    let inner_events: Vec<Value> = inner.iter().map(|(_, _, _, e)| e.clone()).collect();
    assert_event_invariants(&inner_events);
    let inner_run = inner_events[0]["run_id"].as_str().unwrap();
    assert_ne!(inner_run, events[0]["run_id"].as_str().unwrap());
    assert!(inner_events.iter().all(|e| e["run_id"] == inner_run));
    assert_eq!(
        types(&inner_events),
        [
            "run_start",
            "turn_start",
            "tool_call_delta",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "turn_end",
            "turn_start",
            "message_delta",
            "message_end",
            "turn_end",
            "run_end"
        ]
    );

    // The answer is the call's result; the nested transcript is not the parent's.
    let results = tool_results(&result);
    assert_eq!(results.len(), 1);
    assert_eq!(text(&results[0]), "the facts");
    assert_eq!(result.messages.len(), 4, "{:?}", result.messages);

    // Tokens: the call's are the nested run's; the run's count them once.
    let end_event = of_type(&events, "tool_execution_end")[0];
    assert_eq!(end_event["result"]["usage"], usage(30, 5));
    assert_eq!(serde_json::to_value(result.usage).unwrap(), usage(330, 17));
}

#[test]
fn tokens_of_agents_nested_two_deep_are_counted_once_at_every_level() {
    let leaf = agent(json!([{"text": "leaf answer", "usage": usage(1, 1)}]), json!({}), vec![]);
    let middle = parent_of(
        json!([
            {"tool_calls": [call("m1", "leaf", json!({"input": "a"})), call("m2", "leaf", json!({"input": "b"}))],
             "usage": usage(10, 10)},
            {"text": "middle answer", "usage": usage(10, 10)}
        ]),
        json!({}),
        vec![as_tool("leaf", &leaf)],
    );
    let top = parent_of(
        json!([
            {"tool_calls": [call("t1", "middle", json!({"input": "x"}))], "usage": usage(100, 100)},
            {"text": "top answer", "usage": usage(100, 100)}
        ]),
        json!({}),
        vec![as_tool("middle", &middle)],
    );
    let (result, events) = run(&top, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(serde_json::to_value(result.usage).unwrap(), usage(222, 222));
    let middle_end = of_type(&events, "tool_execution_end")[0];
    assert_eq!(middle_end["result"]["usage"], usage(22, 22));

    // The leaf runs' events arrive wrapped twice, at depth 2.
    let twice: Vec<Value> =
        nested(&events).into_iter().map(|(_, _, _, e)| e).filter(|e| e["type"] == "agent_event").collect();
    assert!(!twice.is_empty());
    assert!(twice.iter().all(|e| e["agent"] == "leaf" && e["depth"] == 2));
    let leaf_runs: std::collections::BTreeSet<&str> =
        twice.iter().map(|e| e["event"]["run_id"].as_str().unwrap()).collect();
    assert_eq!(leaf_runs.len(), 2);
}

#[test]
fn calls_of_agents_in_one_batch_run_in_parallel() {
    let gauge = Arc::new(Gauge::default());
    let worker = agent(
        json!([{"tool_calls": [call("w", "nap", json!({"ms": 200}))]}, {"text": "rested"}]),
        json!({}),
        vec![sleeper("nap", json!({}), gauge.clone())],
    );
    let calls: Vec<Value> = (0..4).map(|i| call(&format!("c{i}"), "worker", json!({"input": "go"}))).collect();
    let boss =
        parent_of(json!([{"tool_calls": calls}, {"text": "all rested"}]), json!({}), vec![as_tool("worker", &worker)]);
    let (result, _) = run(&boss, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(gauge.total(), 4);
    assert_eq!(gauge.peak(), 4, "the nested runs did not overlap");
}

#[test]
fn a_failed_nested_run_is_an_error_result_the_calling_model_reads() {
    let broken = agent(json!([{"error": {"status": 400, "message": "bad request"}}]), json!({}), vec![]);
    let boss = parent_of(
        json!([{"tool_calls": [call("c1", "broken", json!({"input": "x"}))]}, {"text": "coped"}]),
        json!({}),
        vec![as_tool("broken", &broken)],
    );
    let (result, _) = run(&boss, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let results = tool_results(&result);
    assert_eq!(results[0]["is_error"], true);
    assert!(text(&results[0]).starts_with("The agent \"broken\" failed: "), "{}", text(&results[0]));
}

#[test]
fn cancelling_the_calling_run_cancels_the_nested_one_and_ends_after_it() {
    let tokens = Tokens::default();
    let counter = Arc::new(Gauge::default());
    let worker = agent(
        json!([
            {"tool_calls": [call("w1", "wait", json!({}))], "usage": usage(5, 5)},
            {"tool_calls": [call("w2", "count", json!({}))]},
            {"text": "never"}
        ]),
        json!({}),
        vec![waiter(tokens.clone()), sleeper("count", json!({}), counter.clone())],
    );
    let boss = parent_of(
        json!([{"tool_calls": [call("c1", "worker", json!({"input": "go"}))], "usage": usage(50, 50)}, {"text": "never"}]),
        json!({}),
        vec![as_tool("worker", &worker)],
    );
    let (handle, events) = start(&boss, "go");
    first_call(&tokens);
    handle.cancel();
    let result = handle.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    // The nested run saw the cancellation before the calling run ended, and
    // asked its model nothing more.
    assert!(all_cancelled(&tokens));
    assert_eq!(counter.total(), 0);
    // Its tokens count, though its answer never came.
    assert_eq!(serde_json::to_value(result.usage).unwrap(), usage(55, 55));
    let events = events.lock().unwrap().clone();
    assert_event_invariants(&events);
    let end = of_type(&events, "tool_execution_end")[0].clone();
    assert!(end["result"]["content"][0]["text"].as_str().unwrap().contains("cancelled"), "{end}");
}

#[test]
fn a_call_s_timeout_cancels_the_nested_run() {
    let tokens = Tokens::default();
    let worker = agent(
        json!([{"tool_calls": [call("w1", "wait", json!({}))]}, {"text": "never"}]),
        json!({}),
        vec![waiter(tokens.clone())],
    );
    let mut spec = as_tool("worker", &worker);
    spec.options.timeout_ms = Some(100);
    let boss = parent_of(
        json!([{"tool_calls": [call("c1", "worker", json!({"input": "go"}))]}, {"text": "moved on"}]),
        json!({}),
        vec![spec],
    );
    let (result, events) = run(&boss, "go");
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(tokens.lock().unwrap().len(), 1);
    assert!(all_cancelled(&tokens), "the nested run went on after the call's timeout");
    assert!(text(&tool_results(&result)[0]).contains("timed out"));
    assert_event_invariants(&events);
}

#[test]
fn agents_nest_at_most_eight_deep() {
    let mut agent = agent(json!([{"text": "leaf"}]), json!({}), vec![]);
    for level in 2..=8 {
        agent = parent_of(json!([{"text": "x"}]), json!({}), vec![as_tool(&format!("level{level}"), &agent)]);
    }
    let mut builder = AgentBuilder::from_json(r#"{"model": {"provider": "scripted"}}"#).unwrap();
    let error = builder.add_agent(as_tool("level9", &agent)).unwrap_err();
    assert_eq!(error.code, ErrorCode::ResourceExhausted);
    assert!(error.message.contains("bound is 8"), "{}", error.message);
}

#[test]
fn an_agent_s_name_is_checked_as_a_tool_s() {
    let child = agent(json!([{"text": "x"}]), json!({}), vec![]);
    let mut builder = AgentBuilder::from_json(r#"{"model": {"provider": "scripted"}}"#).unwrap();
    builder.add_tool(echo("helper")).unwrap();
    assert_eq!(builder.add_agent(as_tool("helper", &child)).unwrap_err().code, ErrorCode::DuplicateTool);
    assert_eq!(builder.add_agent(as_tool("bad name", &child)).unwrap_err().code, ErrorCode::InvalidArg);
    let mut spec = as_tool("schema", &child);
    spec.input_schema = Some(json!({"type": "nonsense"}));
    assert_eq!(builder.add_agent(spec).unwrap_err().code, ErrorCode::InvalidSchema);
}

/// `agent` offered as the handoff `transfer_to_<name>`.
fn handoff(name: &str, agent: &Agent, messages: HandoffMessages) -> AgentToolSpec {
    let options = AgentToolOptions { handoff_messages: Some(messages), ..AgentToolOptions::default() };
    AgentToolSpec { mode: AgentToolMode::Handoff, options, ..as_tool(name, agent) }
}

#[test]
fn a_handoff_goes_on_with_the_other_agent_s_tools_and_says_who_answered() {
    // A handed-off run goes on counting turns, and so does its script.
    let billing = agent(
        json!([
            {},
            {"tool_calls": [call("b1", "invoice", json!({"text": "invoice #7"}))], "usage": usage(3, 3)},
            {"text": "billing here: invoice #7", "usage": usage(4, 4)}
        ]),
        json!({}),
        vec![echo("invoice")],
    );
    let front = parent_of(
        json!([{"text": "passing you on", "tool_calls": [call("h1", "transfer_to_billing", json!({}))], "usage": usage(1, 1)}]),
        json!({}),
        vec![handoff("billing", &billing, HandoffMessages::All)],
    );
    let (result, events) = run(&front, "my bill");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.agent.as_deref(), Some("billing"));
    assert_event_invariants(&events);
    let handoffs = of_type(&events, "handoff");
    assert_eq!(handoffs.len(), 1);
    assert_eq!(handoffs[0]["to"], "billing");
    assert_eq!(handoffs[0]["call_id"], "h1");
    assert_eq!(handoffs[0]["turn"], 1);
    assert!(handoffs[0].get("from").is_none());
    // The handoff's call has its result; the next turns are billing's.
    let results = tool_results(&result);
    assert_eq!(text(&results[0]), "Transferred to billing.");
    assert_eq!(text(&results[1]), "invoice #7");
    assert_eq!(result.rounds, 3);
    assert_eq!(serde_json::to_value(result.usage).unwrap(), usage(8, 8));
    let last = serde_json::to_value(&result.final_message).unwrap();
    assert_eq!(last["content"][0]["text"], "billing here: invoice #7");
    // Nothing of a handoff is nested.
    assert!(of_type(&events, "agent_event").is_empty());
}

#[test]
fn only_the_first_handoff_of_a_response_is_made() {
    let a = agent(json!([{"text": "a answers"}]), json!({}), vec![]);
    let b = agent(json!([{"text": "b answers"}]), json!({}), vec![]);
    let front = parent_of(
        json!([{"tool_calls": [
            call("h1", "transfer_to_a", json!({})),
            call("h2", "transfer_to_b", json!({})),
            call("h3", "transfer_to_a", json!({}))
        ]}]),
        json!({}),
        vec![handoff("a", &a, HandoffMessages::All), handoff("b", &b, HandoffMessages::All)],
    );
    let (result, events) = run(&front, "go");
    assert_eq!(result.agent.as_deref(), Some("a"));
    let results = tool_results(&result);
    assert_eq!(results[0]["is_error"], false);
    for later in &results[1..] {
        assert_eq!(later["is_error"], true);
        assert!(text(later).contains("only the first handoff"), "{}", text(later));
    }
    assert_eq!(of_type(&events, "handoff").len(), 1);
}

#[test]
fn a_handoff_without_tool_calls_leaves_no_call_result_or_reasoning_behind() {
    let next = agent(json!([{}, {"text": "taken over"}]), json!({}), vec![]);
    let front = parent_of(
        json!([{"tool_calls": [call("h1", "transfer_to_next", json!({}))]}]),
        json!({}),
        vec![handoff("next", &next, HandoffMessages::WithoutToolCalls)],
    );
    let earlier: Vec<ferrule::message::Message> = serde_json::from_value(json!([
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should look", "signature": "sig"},
            {"type": "text", "text": "looking"}
        ], "tool_calls": [{"id": "c0", "name": "lookup", "arguments": "{}"}], "stop_reason": "tool_use"},
        {"role": "tool", "tool_call_id": "c0", "name": "lookup", "content": "found"},
        {"role": "assistant", "content": "found it", "stop_reason": "end_turn"},
        {"role": "user", "content": "now pass me on"}
    ]))
    .unwrap();
    let (result, events) = run_input(&front, ferrule::agent::RunSource::Messages(earlier).into());
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let messages = serde_json::to_value(&result.messages).unwrap();
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": "look it up"},
            {"role": "assistant", "content": [{"type": "text", "text": "looking"}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 0, "output_tokens": 0}},
            {"role": "assistant", "content": [{"type": "text", "text": "found it"}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 0, "output_tokens": 0}},
            {"role": "user", "content": "now pass me on"},
            {"role": "assistant", "content": [{"type": "text", "text": "taken over"}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 0, "output_tokens": 0}}
        ])
    );
    assert_eq!(of_type(&events, "handoff")[0]["dropped"], 3);
    assert_eq!(result.agent.as_deref(), Some("next"));
}

#[test]
fn handoffs_chain_and_each_says_where_it_came_from() {
    let c = agent(json!([{}, {}, {"text": "c answers"}]), json!({}), vec![]);
    let b = parent_of(
        json!([{}, {"tool_calls": [call("h2", "transfer_to_c", json!({}))]}]),
        json!({}),
        vec![handoff("c", &c, HandoffMessages::All)],
    );
    let a = parent_of(
        json!([{"tool_calls": [call("h1", "transfer_to_b", json!({}))]}]),
        json!({}),
        vec![handoff("b", &b, HandoffMessages::All)],
    );
    let (result, events) = run(&a, "go");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    assert_eq!(result.agent.as_deref(), Some("c"));
    let hops: Vec<(Value, Value)> = of_type(&events, "handoff")
        .iter()
        .map(|e| (e.get("from").cloned().unwrap_or(Value::Null), e["to"].clone()))
        .collect();
    assert_eq!(hops, [(Value::Null, json!("b")), (json!("b"), json!("c"))]);
}

#[test]
fn a_run_interrupted_after_a_handoff_resumes_with_the_agent_it_was_handed_to() {
    let build = || {
        let careful = agent(
            json!([{}, {"tool_calls": [call("d1", "delete", json!({"text": "deleted"}))]}, {"text": "careful is done"}]),
            json!({}),
            vec![tool("delete", json!({"needs_approval": true}), |call: Invocation| async move {
                ToolOutcome::Completed(ToolResult::text(call.arguments()["text"].as_str().unwrap().to_owned()))
            })],
        );
        parent_of(
            json!([{"tool_calls": [call("h1", "transfer_to_careful", json!({}))]}]),
            json!({}),
            vec![handoff("careful", &careful, HandoffMessages::All)],
        )
    };
    let (first, _) = run(&build(), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(first.agent.as_deref(), Some("careful"));
    let state = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();
    assert_eq!(state["handed_to"], json!(["careful"]));
    let input = json!({"resume": state, "decisions": {"d1": {"approve": true}}}).to_string();
    let (resumed, _) = run_input(&build(), ferrule::agent::RunInput::from_json(&input).unwrap());
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    assert_eq!(resumed.agent.as_deref(), Some("careful"));
    let last = serde_json::to_value(&resumed.final_message).unwrap();
    assert_eq!(last["content"][0]["text"], "careful is done");

    // A state naming a handoff the agent lacks is refused.
    let mut forged = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();
    forged["handed_to"] = json!(["careless"]);
    let input = json!({"resume": forged, "decisions": {"d1": {"approve": true}}}).to_string();
    let error = build().start(ferrule::agent::RunInput::from_json(&input).unwrap(), None).err().unwrap();
    assert_eq!(error.code, ErrorCode::InvalidArg);
    assert!(error.message.contains("careless"), "{}", error.message);
}

/// A worker whose model asks to `delete`, a tool that needs approval, then
/// answers with what the tool said; `calls` counts the tool's runs.
fn careful_worker(calls: Arc<Gauge>) -> Agent {
    let delete = tool("delete", json!({"needs_approval": true}), move |call: Invocation| {
        let calls = calls.clone();
        async move {
            let _counted = calls.enter();
            ToolOutcome::Completed(ToolResult::text(format!("deleted {}", call.arguments()["what"])))
        }
    });
    agent(
        json!([
            {"tool_calls": [call("d1", "delete", json!({"what": "old"}))], "usage": usage(1, 1)},
            {"text": "worker done", "usage": usage(2, 2)}
        ]),
        json!({}),
        vec![delete],
    )
}

/// A boss whose model calls `worker` and the tool `note` in one batch.
fn boss_of(worker: &Agent, notes: Arc<Gauge>) -> Agent {
    let note = tool("note", json!({}), move |_call: Invocation| {
        let notes = notes.clone();
        async move {
            let _counted = notes.enter();
            ToolOutcome::Completed(ToolResult::text("noted"))
        }
    });
    let mut config = json!({"model": {"provider": "scripted", "script": [
        {"tool_calls": [call("c1", "worker", json!({"input": "clean up"})), call("n1", "note", json!({}))],
         "usage": usage(10, 10)},
        {"text": "boss done", "usage": usage(20, 20)}
    ]}});
    config["tool_execution"] = json!("parallel");
    let mut builder = AgentBuilder::from_json(&config.to_string()).unwrap();
    builder.add_tool(note).unwrap();
    builder.add_agent(as_tool("worker", worker)).unwrap();
    builder.build().unwrap()
}

#[test]
fn an_approval_inside_a_called_agent_interrupts_the_caller_and_resumes_in_a_new_agent() {
    let (deletes, notes) = (Arc::new(Gauge::default()), Arc::new(Gauge::default()));
    let boss = boss_of(&careful_worker(deletes.clone()), notes.clone());
    let (first, events) = run(&boss, "go");
    assert_eq!(first.status, RunStatus::Interrupted, "{:?}", first.error);
    let interruptions = serde_json::to_value(&first.interruptions).unwrap();
    assert_eq!(
        interruptions,
        json!([{"call_id": "d1", "name": "delete", "arguments": {"what": "old"}, "key": "c1/d1",
                "path": ["c1"], "agent": "worker"}])
    );
    assert_eq!(deletes.total(), 0);
    assert_eq!(notes.total(), 1);
    // The tokens so far count, the worker's too.
    assert_eq!(serde_json::to_value(first.usage).unwrap(), usage(11, 11));
    // The worker's call has no end in this run; the note's has.
    assert_eq!(of_type(&events, "tool_execution_start").len(), 2);
    let ends = of_type(&events, "tool_execution_end");
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["call_id"], "n1");

    // The state embeds the worker's, and resumes in another agent built alike.
    let state = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();
    assert_eq!(state["awaiting"], json!(["c1/d1"]));
    assert_eq!(state["nested"]["c1"]["awaiting"], json!(["d1"]));
    assert_eq!(state["ran"]["n1"]["content"][0]["text"], "noted");
    let input = json!({"resume": state, "decisions": {"c1/d1": {"approve": true}}}).to_string();
    let (deletes2, notes2) = (Arc::new(Gauge::default()), Arc::new(Gauge::default()));
    let again = boss_of(&careful_worker(deletes2.clone()), notes2.clone());
    let (resumed, events) = run_input(&again, ferrule::agent::RunInput::from_json(&input).unwrap());
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    assert_eq!(deletes2.total(), 1);
    assert_eq!(notes2.total(), 0, "the note ran again");
    assert_event_invariants(&events);
    let results = tool_results(&resumed);
    assert_eq!(results.iter().map(text).collect::<Vec<_>>(), ["worker done", "noted"]);
    // The resumed run counts the tokens spent since: the worker's second
    // request and the boss's second, on top of the state's.
    assert_eq!(serde_json::to_value(resumed.usage).unwrap(), usage(33, 33));
    let nested_events = nested(&events);
    let inner_tool_ends: Vec<&Value> =
        nested_events.iter().map(|(_, _, _, e)| e).filter(|e| e["type"] == "tool_execution_end").collect();
    assert_eq!(inner_tool_ends.len(), 1);
    assert_eq!(inner_tool_ends[0]["result"]["content"][0]["text"], "deleted \"old\"");
}

#[test]
fn a_rejection_reaches_the_called_agent_and_a_wrong_key_is_refused() {
    let boss = boss_of(&careful_worker(Arc::default()), Arc::default());
    let (first, _) = run(&boss, "go");
    let state = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();

    for (decisions, needle) in [
        (json!({"d1": {"approve": true}}), "no decision for call \"c1/d1\""),
        (json!({"c1/d1": {"approve": true}, "c1/d2": {"approve": true}}), "no interrupted call \"c1/d2\""),
    ] {
        let input = json!({"resume": state, "decisions": decisions}).to_string();
        let error = boss.start(ferrule::agent::RunInput::from_json(&input).unwrap(), None).err().unwrap();
        assert_eq!(error.code, ErrorCode::InvalidArg);
        assert!(error.message.contains(needle), "{}", error.message);
    }
    let mut forged = state.clone();
    forged["nested"]["c1"]["awaiting"] = json!(["d9"]);
    let input = json!({"resume": forged, "decisions": {"c1/d1": {"approve": true}}}).to_string();
    let error = ferrule::agent::RunInput::from_json(&input).unwrap_err();
    assert!(error.message.contains("waits on other calls"), "{}", error.message);

    let deletes = Arc::new(Gauge::default());
    let again = boss_of(&careful_worker(deletes.clone()), Arc::default());
    let input = json!({"resume": state, "decisions": {"c1/d1": {"approve": false, "message": "not today"}}});
    let (resumed, events) = run_input(&again, ferrule::agent::RunInput::from_json(&input.to_string()).unwrap());
    assert_eq!(resumed.status, RunStatus::Completed);
    assert_eq!(deletes.total(), 0);
    let inner: Vec<Value> = nested(&events).into_iter().map(|(_, _, _, e)| e).collect();
    let end = inner.iter().find(|e| e["type"] == "tool_execution_end").unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "not today");
    assert_eq!(end["is_error"], true);
}

#[test]
fn an_approval_two_agents_deep_is_keyed_by_its_path() {
    let deletes = Arc::new(Gauge::default());
    let build = |deletes: Arc<Gauge>| {
        let middle = parent_of(
            json!([{"tool_calls": [call("m/1", "worker", json!({"input": "x"}))]}, {"text": "middle done"}]),
            json!({}),
            vec![as_tool("worker", &careful_worker(deletes))],
        );
        parent_of(
            json!([{"tool_calls": [call("t1", "middle", json!({"input": "y"}))]}, {"text": "top done"}]),
            json!({}),
            vec![as_tool("middle", &middle)],
        )
    };
    let (first, _) = run(&build(Arc::default()), "go");
    assert_eq!(first.status, RunStatus::Interrupted);
    let interruption = serde_json::to_value(&first.interruptions[0]).unwrap();
    assert_eq!(interruption["key"], "t1/m%2F1/d1");
    assert_eq!(interruption["path"], json!(["t1", "m/1"]));
    assert_eq!(interruption["agent"], "worker");
    let state = serde_json::to_value(first.state.as_ref().unwrap()).unwrap();
    let input = json!({"resume": state, "decisions": {"t1/m%2F1/d1": {"approve": true}}}).to_string();
    let (resumed, _) = run_input(&build(deletes.clone()), ferrule::agent::RunInput::from_json(&input).unwrap());
    assert_eq!(resumed.status, RunStatus::Completed, "{:?}", resumed.error);
    assert_eq!(deletes.total(), 1);
    assert_eq!(text(&tool_results(&resumed)[0]), "middle done");
}

/// A scripted agent with `extra` config fields and `agents` added to it.
fn parent_of(script: Value, extra: Value, agents: Vec<AgentToolSpec>) -> Agent {
    with_agents(script, extra, vec![], agents)
}

/// A hook of `stages` that records each payload it sees and lets everything
/// through.
fn watching(stages: Vec<HookStage>, seen: &Arc<std::sync::Mutex<Vec<Value>>>) -> Hook {
    let seen = seen.clone();
    Hook::new(stages, move |request: HookRequest| {
        seen.lock().unwrap().push(serde_json::from_str(request.payload()).unwrap());
        async { Ok(HookDecision::Continue) }
    })
    .unwrap()
}

#[test]
fn a_called_agent_s_hooks_are_its_own_and_the_caller_s_see_a_tool_call() {
    let (inner, outer) = (Arc::default(), Arc::default());
    let mut builder = AgentBuilder::from_json(
        &json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [call("w1", "lookup", json!({"text": "x"}))]}, {"text": "worker done"}]}})
        .to_string(),
    )
    .unwrap();
    builder.add_tool(echo("lookup")).unwrap();
    builder.add_hook(watching(vec![HookStage::ToolCall], &inner));
    let worker = builder.build().unwrap();
    let mut builder = AgentBuilder::from_json(
        &json!({"model": {"provider": "scripted", "script": [
            {"tool_calls": [call("c1", "worker", json!({"input": "go"}))]}, {"text": "done"}]}})
        .to_string(),
    )
    .unwrap();
    builder.add_agent(as_tool("worker", &worker)).unwrap();
    builder.add_hook(watching(vec![HookStage::ToolCall, HookStage::ToolResult], &outer));
    let boss = builder.build().unwrap();
    let (result, events) = run(&boss, "go");
    assert_eq!(result.status, RunStatus::Completed);
    let (inner, outer) = (inner.lock().unwrap().clone(), outer.lock().unwrap().clone());
    // The caller's hooks see the agent's call and its result, nothing inside.
    assert_eq!(outer.len(), 2);
    assert_eq!(outer[0]["call"]["name"], "worker");
    assert_eq!(outer[1]["result"]["content"][0]["text"], "worker done");
    // The agent's hooks see its own call, in its own run.
    assert_eq!(inner.len(), 1);
    assert_eq!(inner[0]["call"]["name"], "lookup");
    let nested_run = of_type(&events, "agent_event")[0]["event"]["run_id"].clone();
    assert_eq!(inner[0]["run_id"], nested_run);
    assert_ne!(outer[0]["run_id"], nested_run);
}

#[test]
fn no_model_request_leaves_a_called_agent_after_its_caller_is_cancelled() {
    use crate::common::server::{Ending, MockServer, Reply};
    // The first request is never answered; a retry or a next turn would get
    // the second reply.
    let server = MockServer::start(vec![
        Reply::sse(b"").ending(Ending::Silent),
        Reply::sse(&crate::common::wire::chat("too late", &[])),
    ]);
    let worker = provider_agent("openai", &format!("{}/v1", server.url()), json!({}), json!({}), vec![]);
    let boss = parent_of(
        json!([{"tool_calls": [call("c1", "worker", json!({"input": "go"}))]}, {"text": "never"}]),
        json!({}),
        vec![as_tool("worker", &worker)],
    );
    let (handle, events) = start(&boss, "go");
    while server.requests().is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    handle.cancel();
    let result = handle.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Cancelled);
    assert_event_invariants(&events.lock().unwrap());
    // Long enough for a retry's first backoff or a next request to leave.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(server.requests().len(), 1, "a request left after the cancel");
}

/// After a handoff the run consults the hooks of the agent it was handed to,
/// all of them, each from a fresh state: a hook taking the new messages is
/// given the whole history at its first turn, though the agent handing off had
/// no hooks.
#[test]
fn a_handoff_consults_every_hook_of_the_agent_handed_to_each_from_the_start() {
    let (calls, turns) = (Arc::default(), Arc::default());
    let mut builder = AgentBuilder::from_json(
        &json!({"model": {"provider": "scripted", "script": [
            {}, {"tool_calls": [call("b1", "invoice", json!({"text": "invoice #7"}))]}, {"text": "billing done"}]}})
        .to_string(),
    )
    .unwrap();
    builder.add_tool(echo("invoice")).unwrap();
    builder.add_hook(watching(vec![HookStage::TurnStart], &turns).with_history(ferrule::hook::HookHistory::New));
    builder.add_hook(watching(vec![HookStage::ToolCall], &calls));
    let billing = builder.build().unwrap();
    let front = parent_of(
        json!([{"tool_calls": [call("h1", "transfer_to_billing", json!({}))]}]),
        json!({}),
        vec![handoff("billing", &billing, HandoffMessages::All)],
    );
    let (result, _) = run(&front, "my bill");
    assert_eq!(result.status, RunStatus::Completed, "{:?}", result.error);
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["call"]["id"], "b1");
    let turns = turns.lock().unwrap();
    assert_eq!(turns.len(), 2, "{turns:?}");
    // Turn 2: the prompt, the handoff's call and result, all new to the hook.
    assert_eq!(turns[0]["messages_from"], 0);
    assert_eq!(turns[0]["messages"].as_array().unwrap().len(), 3);
    assert_eq!(turns[1]["messages_from"], 3);
    assert_eq!(turns[1]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(turns[1]["message_count"], 5);
}
