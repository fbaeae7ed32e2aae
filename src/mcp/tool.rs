//! A tool of an MCP server as one of ferrule's: each call goes to the
//! server that listed it, with its progress passed on as the call's updates.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::error::McpError;
use super::result::tool_result;
use super::server::Server;
use crate::tool::{InputSchema, Invocation, ToolFunction, ToolOutcome, ToolResult};
use crate::trace::{CallTrace, ToolSource};
use crate::BoxFuture;

/// Progress notifications kept for a call whose run has not taken them yet;
/// past them, progress is dropped (it is provisional: the next says more).
const QUEUED_PROGRESS: usize = 64;

/// Calls the server's tool `tool` (its own name). Holds its server weakly:
/// the server belongs to the agent.
pub(crate) struct McpToolFunction {
    pub(crate) server: Weak<Server>,
    pub(crate) tool: String,
    /// The compiled `outputSchema`, which structured content must satisfy.
    pub(crate) output: Option<Arc<InputSchema>>,
}

impl ToolFunction for McpToolFunction {
    fn source(&self) -> ToolSource {
        ToolSource::Mcp
    }

    fn invoke(&self, invocation: Invocation) -> BoxFuture<'static, ToolOutcome> {
        let server = self.server.upgrade();
        let tool = self.tool.clone();
        let output = self.output.clone();
        Box::pin(async move {
            let Some(server) = server else {
                return ToolOutcome::Failed("The MCP server of this tool was stopped.".to_owned());
            };
            let Some(ready) = server.ready() else {
                return ToolOutcome::Failed(format!("The MCP server \"{}\" is not available.", server.name));
            };
            let (progress, mut updates) = mpsc::channel(QUEUED_PROGRESS);
            let arguments = invocation.arguments().clone();
            // ferrule's own bound (the tool's timeout) ends the call first.
            let trace = invocation.trace().and_then(CallTrace::propagated);
            let call = ready.client.call_tool_in(&tool, arguments, Some(progress), Duration::MAX, trace);
            tokio::pin!(call);
            let answer = loop {
                tokio::select! {
                    biased;
                    Some(params) = updates.recv() => invocation.updates().send(partial(&params)).await,
                    answer = &mut call => break answer,
                }
            };
            // Progress that came before the answer is passed on before it.
            while let Ok(params) = updates.try_recv() {
                invocation.updates().send(partial(&params)).await;
            }
            match answer {
                Ok(result) => ToolOutcome::Completed(tool_result(invocation.name(), &result, output.as_deref())),
                Err(error) => ToolOutcome::Failed(failure(&server.name, &tool, &error)),
            }
        })
    }
}

/// A progress notification's params as a provisional result: its message, or
/// how far it got, with the params as details.
fn partial(params: &Value) -> ToolResult {
    let number = |key: &str| params.get(key).and_then(Value::as_f64);
    let text = match (params.get("message").and_then(Value::as_str), number("progress"), number("total")) {
        (Some(message), _, _) => message.to_owned(),
        (None, Some(progress), Some(total)) => format!("{progress}/{total}"),
        (None, Some(progress), None) => format!("{progress}"),
        (None, None, _) => String::new(),
    };
    let mut details = params.clone();
    if let Some(params) = details.as_object_mut() {
        params.remove("progressToken");
        params.remove("_meta");
    }
    ToolResult { details: Some(details), ..ToolResult::text(text) }
}

/// What the model is told when a call got no result.
fn failure(server: &str, tool: &str, error: &McpError) -> String {
    match error {
        McpError::Closed(why) => format!("The MCP server \"{server}\" went away during the call to {tool}: {why}"),
        McpError::Refused { message, code, .. } => {
            format!("The MCP server \"{server}\" refused the call to {tool}: {message} ({code})")
        }
        other => format!("The call to {tool} on the MCP server \"{server}\" failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_becomes_a_provisional_result() {
        let with_message = partial(&json!({"progressToken": "t", "progress": 2, "total": 5, "message": "step 2"}));
        assert_eq!(crate::message::text_of(&with_message.content), "step 2");
        assert_eq!(with_message.details, Some(json!({"progress": 2, "total": 5, "message": "step 2"})));
        assert_eq!(crate::message::text_of(&partial(&json!({"progress": 2, "total": 5})).content), "2/5");
        assert_eq!(crate::message::text_of(&partial(&json!({"progress": 0.5})).content), "0.5");
    }
}
