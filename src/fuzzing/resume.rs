//! A stored run state, read and resumed: a state is the host's to keep, so a
//! forged one must be refused or run like any other.

use serde_json::{json, Map, Value};

use crate::agent::{AgentBuilder, RunInput, RunState};
use crate::error::ErrorCode;
use crate::tool::{Invocation, Tool, ToolOptions, ToolOutcome, ToolResult};

/// Input: a state as JSON. Holds: it is read, or refused with a message; a
/// state that reads writes out as JSON that reads back as the same state; it
/// resumes, with every waiting call approved, on an agent that has a tool of
/// each name its waiting message calls, into a run that ends (or is refused
/// at its start as not fitting the agent), never with a panic.
pub fn resume(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(value) = crate::json::parse_unique(text) else { return };
    let state = match RunState::from_value(value.clone()) {
        Ok(state) => state,
        Err(error) => {
            assert_eq!(error.code, ErrorCode::InvalidArg, "{error:?}");
            assert!(!error.message.is_empty(), "a refusal without a reason");
            return;
        }
    };
    let written = serde_json::to_value(&state).expect("a state is JSON");
    assert_eq!(RunState::from_value(written).ok(), Some(state), "the state read back differs");
    run_resumed(&value);
}

fn run_resumed(state: &Value) {
    let mut builder = AgentBuilder::from_json(r#"{"model": {"provider": "scripted", "script": [{"text": "done"}]}}"#)
        .expect("the agent's configuration");
    let waiting = state["messages"].as_array().and_then(|messages| messages.last());
    let calls = waiting.and_then(|message| message["tool_calls"].as_array()).into_iter().flatten();
    for name in calls.filter_map(|call| call["name"].as_str()) {
        let Ok(tool) = Tool::new(name, "a tool", json!({}), ToolOptions::default(), |_: Invocation| async {
            ToolOutcome::Completed(ToolResult::text("ran"))
        }) else {
            return;
        };
        let _ = builder.add_tool(tool);
    }
    let agent = builder.build().expect("the agent");
    let decisions: Map<String, Value> = state["awaiting"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|key| (key.to_owned(), json!({"approve": true})))
        .collect();
    let input = RunInput::from_json(&json!({"resume": state, "decisions": decisions}).to_string())
        .expect("a state that reads is run input");
    let run = match agent.start(input, None) {
        Ok(run) => run,
        Err(error) => {
            assert_eq!(error.code, ErrorCode::InvalidArg, "{error:?}");
            return;
        }
    };
    let result = run.wait_blocking().expect("the run ends");
    if let Some(error) = &result.error {
        assert!(!matches!(error.code, ErrorCode::Panic), "{error:?}");
    }
}
