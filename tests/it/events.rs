//! Event delivery: one ordered queue per run, bounded, handed to an event
//! thread by whoever queues into it while it is idle.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use ferrule::agent::{Event, EventSink, RunInput, RunStatus};
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
    // The queue holds 256 events not yet delivered, the one the host is on
    // included; the tool counts the update it waits to queue.
    assert!(while_blocked <= 256, "{while_blocked} updates were produced while the host was blocked");
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
fn events_of_concurrent_runs_carry_their_own_run_id_and_every_one_arrives() {
    let agent = agent(json!([{"text": "hi"}]), json!({}), vec![]);
    // Short runs, many at once: each one's few events (fewer than a poll hands
    // over early) reach its sink before its wait returns.
    let runs: Vec<_> = (0..200).map(|i| start(&agent, &format!("run {i}"))).collect();
    for (run, events) in runs {
        run.wait_blocking().unwrap();
        let events = events.lock().unwrap();
        assert!(events.iter().all(|e| e["run_id"] == run.id()), "{events:?}");
        assert_event_invariants(&events);
        assert_eq!(of_type(&events, "message_end").len(), 1, "{events:?}");
    }
}

/// An agent whose one call sends `UPDATES` updates, in order, then completes.
fn chatty_agent() -> ferrule::agent::Agent {
    let chatty = tool("chatty", json!({}), move |call: Invocation| async move {
        for i in 0..UPDATES {
            call.updates().send(ToolResult::text(i.to_string())).await;
        }
        ToolOutcome::Completed(ToolResult::text("done"))
    });
    agent(
        json!([{"tool_calls": [{"id": "c1", "name": "chatty", "arguments": {}}]}, {"text": "ok"}]),
        json!({}),
        vec![chatty],
    )
}

#[test]
fn a_run_that_selects_run_end_delivers_it_alone() {
    let agent = chatty_agent();
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

/// A sink taking events in bursts of up to `burst`, which now and then gives
/// its processor away, so the queue often runs dry and is handed over again.
struct Bursts {
    burst: usize,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl EventSink for Bursts {
    fn on_event(&mut self, event: &Event) {
        self.on_events(std::slice::from_ref(event))
    }

    fn burst(&self) -> usize {
        self.burst
    }

    fn on_events(&mut self, events: &[Event]) {
        assert!(events.len() <= self.burst, "{} events in a burst of {}", events.len(), self.burst);
        let mut seen = self.seen.lock().unwrap();
        if seen.len().is_multiple_of(7) {
            std::thread::yield_now();
        }
        seen.extend(events.iter().map(|event| serde_json::to_value(event).unwrap()));
    }
}

#[test]
fn events_queued_from_both_runtime_threads_while_the_queue_runs_dry_all_arrive_in_order() {
    const CALLS: usize = 8;
    const UPDATES_PER_CALL: usize = 100;
    let chatty = tool("chatty", json!({}), move |call: Invocation| async move {
        for i in 0..UPDATES_PER_CALL {
            call.updates().send(ToolResult::text(i.to_string())).await;
            if i % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        ToolOutcome::Completed(ToolResult::text("done"))
    });
    let calls: Vec<Value> =
        (0..CALLS).map(|i| json!({"id": format!("c{i}"), "name": "chatty", "arguments": {}})).collect();
    let agent = agent(json!([{"tool_calls": calls}, {"text": "ok"}]), json!({}), vec![chatty]);
    for round in 0..60 {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Bursts { burst: 1 + round % 4, seen: seen.clone() };
        let run = agent.start(RunInput::prompt("go"), Some(Box::new(sink))).expect("start");
        assert_eq!(run.wait_blocking().unwrap().status, RunStatus::Completed);
        let events = seen.lock().unwrap();
        assert_event_invariants(&events);
        for call in 0..CALLS {
            let id = format!("c{call}");
            let partials: Vec<&str> = of_type(&events, "tool_execution_update")
                .into_iter()
                .filter(|e| e["call_id"] == id.as_str())
                .map(|e| e["partial"]["content"][0]["text"].as_str().unwrap())
                .collect();
            let expected: Vec<String> = (0..UPDATES_PER_CALL).map(|i| i.to_string()).collect();
            assert_eq!(partials, expected, "round {round}, call {id}: every update, in order");
        }
    }
}

#[test]
fn a_sink_that_panics_ends_delivery_and_the_run_still_ends_with_the_sink_released() {
    struct Released(Arc<AtomicUsize>);
    impl Drop for Released {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    // More updates than the queue holds: were delivery not over, the run would wait.
    let agent = chatty_agent();
    let released = Arc::new(AtomicUsize::new(0));
    let delivered = Arc::new(AtomicUsize::new(0));
    let guard = Released(released.clone());
    let count = delivered.clone();
    let sink = move |event: &Event| {
        let _held = &guard;
        if count.fetch_add(1, Ordering::SeqCst) == 2 {
            panic!("a sink that fails on its third event ({:?})", event.run_id);
        }
    };
    let run = agent.start(RunInput::prompt("go"), Some(Box::new(sink))).expect("start");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let result = loop {
        match run.try_result() {
            Some(result) => break result,
            None if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            None => panic!("the run waits for a sink that is gone"),
        }
    };
    assert_eq!(result.status, RunStatus::Completed);
    assert_eq!(result.messages.len(), 4, "{:?}", result.messages);
    assert_eq!(delivered.load(Ordering::SeqCst), 3, "nothing is delivered after the panic");
    assert_eq!(released.load(Ordering::SeqCst), 1, "the sink is dropped by the time the wait returns");
}

#[test]
fn a_poll_that_queues_more_than_the_queue_holds_waits_for_room_and_loses_nothing() {
    // 150 calls that complete at once: one poll of the run's task queues their
    // 450 events, more than the queue holds; the event thread starts before
    // the poll ends, and the run waits for room.
    const CALLS: usize = 150;
    let calls: Vec<Value> =
        (0..CALLS).map(|i| json!({"id": format!("c{i}"), "name": "echo", "arguments": {"text": i}})).collect();
    let agent = agent(json!([{"tool_calls": calls}, {"text": "ok"}]), json!({}), vec![echo("echo")]);
    let slow = Arc::new(AtomicUsize::new(0));
    let events = Arc::new(Mutex::new(Vec::<Value>::new()));
    let (log, seen) = (events.clone(), slow.clone());
    let sink = move |event: &Event| {
        if seen.fetch_add(1, Ordering::SeqCst) < 5 {
            std::thread::sleep(Duration::from_millis(5));
        }
        log.lock().unwrap().push(serde_json::to_value(event).unwrap());
    };
    let run = agent.start(RunInput::prompt("go"), Some(Box::new(sink))).expect("start");
    assert_eq!(run.wait_blocking().unwrap().status, RunStatus::Completed);
    let events = events.lock().unwrap();
    assert_event_invariants(&events);
    assert_eq!(of_type(&events, "tool_execution_start").len(), CALLS);
    assert_eq!(of_type(&events, "tool_execution_end").len(), CALLS);
}
