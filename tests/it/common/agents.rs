//! Helpers for the tests of agents made of agents: agents offered as tools,
//! agents built with them, and tools that wait to be cancelled.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferrule::agent::{Agent, AgentBuilder, AgentToolMode, AgentToolOptions, AgentToolSpec};
use ferrule::tool::{Invocation, Tool, ToolOutcome, ToolResult};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

/// `agent` offered as the tool `name`, with the default schema.
pub fn as_tool(name: &str, agent: &Agent) -> AgentToolSpec {
    AgentToolSpec {
        name: name.into(),
        description: format!("the agent {name}"),
        agent: agent.clone(),
        input_schema: None,
        mode: AgentToolMode::Tool,
        options: AgentToolOptions::default(),
    }
}

/// A scripted agent with `extra` config fields, `tools` and `agents` added.
pub fn with_agents(script: Value, extra: Value, tools: Vec<Tool>, agents: Vec<AgentToolSpec>) -> Agent {
    let mut config = json!({"model": {"provider": "scripted", "script": script}});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let mut builder = AgentBuilder::from_json(&config.to_string()).unwrap();
    for tool in tools {
        builder.add_tool(tool).unwrap();
    }
    for spec in agents {
        builder.add_agent(spec).unwrap();
    }
    builder.build().unwrap()
}

/// The cancellation tokens of a tool's calls.
pub type Tokens = Arc<Mutex<Vec<CancellationToken>>>;

/// The tool `wait`, whose calls wait until they are cancelled, keeping their
/// tokens.
pub fn waiter(tokens: Tokens) -> Tool {
    crate::common::tool("wait", json!({}), move |call: Invocation| {
        tokens.lock().unwrap().push(call.cancellation().clone());
        async move {
            call.cancellation().cancelled().await;
            ToolOutcome::Completed(ToolResult::text("cancelled"))
        }
    })
}

/// Waits until `tokens` holds one.
pub fn first_call(tokens: &Tokens) {
    while tokens.lock().unwrap().is_empty() {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Whether every call kept in `tokens` was cancelled.
pub fn all_cancelled(tokens: &Tokens) -> bool {
    tokens.lock().unwrap().iter().all(CancellationToken::is_cancelled)
}
