//! Event delivery: one ordered dispatcher per run, through a bounded queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use ferrule::agent::{Event, RunInput, RunStatus};
use ferrule::tool::{Invocation, ToolOutcome, ToolResult};
use serde_json::{json, Value};

const UPDATES: usize = 2000;

#[test]
fn a_slow_host_slows_its_run_and_the_queue_stays_bounded() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let chatty = tool("chatty", json!({}), move |call: Invocation| {
        let counter = counter.clone();
        async move {
            for i in 0..UPDATES {
                counter.fetch_add(1, Ordering::SeqCst);
                call.updates().send(ToolResult::text(i.to_string())).await;
            }
            ToolOutcome::Completed(ToolResult::text("done"))
        }
    });
    let agent = agent(
        json!([{"tool_calls": [{"id": "c1", "name": "chatty", "arguments": {}}]}, {"text": "ok"}]),
        json!({}),
        vec![chatty],
    );

    // The host blocks on the first event until released.
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(Some(gate));
    let events = Arc::new(Mutex::new(Vec::<Value>::new()));
    let log = events.clone();
    let run = agent
        .start(
            RunInput::prompt("go"),
            Some(Box::new(move |event: &Event| {
                if let Some(gate) = gate.lock().unwrap().take() {
                    gate.recv().unwrap();
                }
                log.lock().unwrap().push(serde_json::to_value(event).unwrap());
            })),
        )
        .expect("start");
    std::thread::sleep(Duration::from_millis(200));
    let while_blocked = sent.load(Ordering::SeqCst);
    assert!(while_blocked < 300, "{while_blocked} updates were produced while the host was blocked");
    assert!(run.try_result().is_none());

    release.send(()).unwrap();
    let result = run.wait_blocking().unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    let events = events.lock().unwrap();
    let partials: Vec<String> = of_type(&events, "tool_execution_update")
        .iter()
        .map(|e| e["partial"]["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (0..UPDATES).map(|i| i.to_string()).collect();
    assert_eq!(partials, expected, "every update, in order");
    assert_event_invariants(&events);
}

#[test]
fn events_of_concurrent_runs_carry_their_own_run_id() {
    let agent = agent(json!([{"text": "hi"}]), json!({}), vec![]);
    let (first, first_events) = start(&agent, "one");
    let (second, second_events) = start(&agent, "two");
    first.wait_blocking().unwrap();
    second.wait_blocking().unwrap();
    for (run, events) in [(first, first_events), (second, second_events)] {
        let events = events.lock().unwrap();
        assert!(events.iter().all(|e| e["run_id"] == run.id()), "{events:?}");
    }
}

#[test]
fn a_run_that_selects_run_end_delivers_it_alone() {
    let chatty = tool("chatty", json!({}), move |call: Invocation| async move {
        for i in 0..UPDATES {
            call.updates().send(ToolResult::text(i.to_string())).await;
        }
        ToolOutcome::Completed(ToolResult::text("done"))
    });
    let agent = agent(
        json!([{"tool_calls": [{"id": "c1", "name": "chatty", "arguments": {}}]}, {"text": "ok"}]),
        json!({}),
        vec![chatty],
    );
    let input = RunInput::from_json(r#"{"prompt": "go", "events": "run_end"}"#).unwrap();
    let (result, events) = run_input(&agent, input);
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(types(&events), ["run_end"], "{events:?}");
    assert_eq!(events[0]["result"], serde_json::to_value(&*result).unwrap());
    assert_eq!(result.messages.len(), 4, "the transcript is whole: {:?}", result.messages);

    let (_, all) = run_input(&agent, RunInput::from_json(r#"{"prompt": "go", "events": "all"}"#).unwrap());
    assert_eq!(of_type(&all, "tool_execution_update").len(), UPDATES);
    for (wrong, says) in [(r#""some""#, "run_end"), ("null", "null"), ("true", "boolean")] {
        let input = format!(r#"{{"prompt": "go", "events": {wrong}}}"#);
        let error = RunInput::from_json(&input).unwrap_err();
        assert!(error.message.contains(says), "{wrong}: {}", error.message);
    }
}
