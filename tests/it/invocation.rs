//! A tool function tested on its own, with a call built by hand: no agent, no run.

use std::sync::{Arc, Mutex};

use ferrule::message::ToolCall;
use ferrule::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult, UpdateSink};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Counts down from `n`, sending each step as an update; stops when cancelled.
async fn countdown(call: Invocation) -> ToolOutcome {
    let n = call.arguments()["n"].as_u64().unwrap_or(0);
    for step in (1..=n).rev() {
        if call.is_cancelled() {
            return ToolOutcome::Failed("cancelled".into());
        }
        call.updates().send(ToolResult::text(step.to_string())).await;
    }
    ToolOutcome::Completed(ToolResult::text("liftoff"))
}

fn call(n: u64) -> Invocation {
    let arguments = json!({"n": n});
    Invocation::new(ToolCall::new("c1", "countdown", arguments.to_string()), arguments)
}

#[tokio::test]
async fn a_tool_function_runs_on_a_hand_made_invocation() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let updates = UpdateSink::new(move |partial: ToolResult| log.lock().unwrap().push(partial));
    let outcome = countdown(call(3).with_updates(updates)).await;
    assert_eq!(outcome, ToolOutcome::Completed(ToolResult::text("liftoff")));
    assert_eq!(*seen.lock().unwrap(), vec![ToolResult::text("3"), ToolResult::text("2"), ToolResult::text("1")]);
}

#[tokio::test]
async fn a_cancelled_invocation_is_seen_by_the_tool() {
    let token = CancellationToken::new();
    token.cancel();
    let outcome = countdown(call(3).with_cancellation(token)).await;
    assert_eq!(outcome, ToolOutcome::Failed("cancelled".into()));
}

#[test]
fn the_same_function_is_a_tool() {
    let tool = Tool::new("countdown", "Counts down.", json!({"type": "object"}), ToolOptions::default(), countdown);
    assert_eq!(tool.unwrap().name(), "countdown");
}
