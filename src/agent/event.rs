//! A run's events, as the host receives them: one JSON object each, with its
//! `"type"` and the run's `"run_id"`, and the sink they are delivered to.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use super::result::{RunResult, RunStatus};
use crate::error::Error;
use crate::mcp::{LeftOutTool, McpServerStatus};
use crate::message::{AssistantMessage, Message, ToolCall};
use crate::tool::ToolResult;

/// One event of a run, as the host receives it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Event {
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// The run it belongs to.
    pub run_id: Arc<str>,
}

/// What happened. Serialises with a `"type"` tag in snake case.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The run began.
    RunStart,
    /// A model request is about to be made.
    TurnStart {
        /// The round, from 1.
        turn: u32,
    },
    /// A piece of streamed assistant text or thinking.
    MessageDelta {
        /// The round.
        turn: u32,
        /// Text, when this delta is answer text.
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Thinking, when this delta is reasoning.
        #[serde(skip_serializing_if = "Option::is_none")]
        thinking: Option<String>,
    },
    /// A piece of a streamed tool call. Arguments here may be incomplete; only
    /// `tool_execution_start` carries a call that will run.
    ToolCallDelta {
        /// The round.
        turn: u32,
        /// The call's position in the response.
        index: u32,
        /// The call id, when this delta carries it.
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The tool name, when this delta carries it.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// More argument text.
        arguments_delta: String,
    },
    /// The assistant message is complete.
    MessageEnd {
        /// The round.
        turn: u32,
        /// The message, as it enters the transcript.
        #[serde(serialize_with = "serialize_assistant")]
        #[schemars(with = "Message")]
        message: AssistantMessage,
    },
    /// A call begins (invalid calls too: they start and end with an error result).
    ToolExecutionStart {
        /// The call as the model made it.
        call: ToolCall,
    },
    /// A provisional result. Never enters the transcript.
    ToolExecutionUpdate {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The provisional result.
        partial: ToolResult,
    },
    /// A call ended; `result` is what the transcript records for it.
    ToolExecutionEnd {
        /// The call's id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The final result.
        result: ToolResult,
        /// Whether the result is an error.
        is_error: bool,
    },
    /// A failed model request is being retried.
    Retry {
        /// The attempt about to be made, from 2.
        attempt: u32,
        /// Why the previous attempt failed.
        error: Error,
        /// How long ferrule waits first.
        delay_ms: u64,
    },
    /// A message entered the transcript from outside the model: injected into
    /// the live run (`ferrule_run_inject`) or by a `turn_start` hook.
    MessageInjected {
        /// The message, marked `"origin": "injection"`.
        message: Message,
    },
    /// A request left out the oldest messages to stay within
    /// `history.max_input_tokens`; the transcript keeps them.
    HistoryCompacted {
        /// The round.
        turn: u32,
        /// How many messages the request left out.
        dropped: usize,
    },
    /// An MCP server's state or tools changed since the run was last told of
    /// it; the first turn (or the batch a resumed run begins with) tells of
    /// every server. Sent before the turn's model request: the tools it names
    /// are those the turn offers.
    McpServer {
        /// The server's name in the configuration.
        server: String,
        /// Whether its tools are offered.
        status: McpServerStatus,
        /// The tools offered from it, by the names the model sees.
        tools: Vec<String>,
        /// Tools offered now that the run was not told of before.
        added: Vec<String>,
        /// Tools the run was told of that are no longer offered.
        removed: Vec<String>,
        /// Tools of the server not offered, with why.
        left_out: Vec<LeftOutTool>,
        /// Why it is unavailable.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// How often it was started again after it failed or went away.
        restarts: u32,
        /// The protocol version it speaks, when ready.
        #[serde(skip_serializing_if = "Option::is_none")]
        protocol_version: Option<String>,
    },
    /// Lines an MCP server wrote to its stderr, and notes of ferrule's about
    /// it (beginning `ferrule: `), since the run last reported its log (at
    /// most its last 64 lines). Sent with the turn's `mcp_server` events.
    McpServerLog {
        /// The server's name in the configuration.
        server: String,
        /// The lines, oldest first.
        lines: Vec<String>,
        /// Lines that went before the run could report them.
        missed: u64,
    },
    /// An event of a run nested in this one: the run of an agent called as a
    /// tool. Delivered in order, between the call's `tool_execution_start` and
    /// `tool_execution_end` (none after it); never in the transcript.
    AgentEvent {
        /// The id of the call that started the nested run.
        call_id: String,
        /// The name the calling agent knows the nested one by (the tool's name).
        agent: Arc<str>,
        /// How deep the nested run is: 1 inside the run the host started.
        depth: u32,
        /// The nested run's event, with its own `run_id` (an `agent_event`
        /// itself when the nested run called an agent in turn).
        event: Box<Event>,
    },
    /// The run handed control to another agent: from here on that agent's
    /// system prompt, tools and model answer, with the transcript its
    /// handoff carries.
    Handoff {
        /// The round whose batch made the handoff.
        turn: u32,
        /// The id of the `transfer_to_...` call.
        call_id: String,
        /// The agent that handed off: null for the run's own.
        #[serde(skip_serializing_if = "Option::is_none")]
        from: Option<Arc<str>>,
        /// The agent that takes over, by its handoff's name.
        to: Arc<str>,
        /// How many messages of the transcript the handoff left out.
        dropped: usize,
    },
    /// A round is over.
    TurnEnd {
        /// The round.
        turn: u32,
    },
    /// The run is over. Always the last event.
    RunEnd {
        /// How it ended.
        status: RunStatus,
        /// The run result, as `ferrule_run_wait` returns it.
        result: Arc<RunResult>,
        /// The error, when the run failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<Error>,
    },
}

fn serialize_assistant<S: serde::Serializer>(message: &AssistantMessage, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Tagged<'a> {
        role: &'static str,
        #[serde(flatten)]
        message: &'a AssistantMessage,
    }
    Tagged { role: "assistant", message }.serialize(s)
}

/// Receives a run's events, in order, on one of ferrule's event threads: one at
/// a time, or in bursts of up to [`EventSink::burst`]. Dropped once `run_end`
/// has been delivered, on the thread that delivered it.
pub trait EventSink: Send + 'static {
    /// Handles one event. May block; the run waits for it.
    fn on_event(&mut self, event: &Event);

    /// How many events, queued by the time they are delivered, the sink takes
    /// at once through [`EventSink::on_events`]; 1 (the default): one at a time.
    fn burst(&self) -> usize {
        1
    }

    /// Handles events queued together, in order (at most [`EventSink::burst`]).
    /// May block; the run waits for it.
    fn on_events(&mut self, events: &[Event]) {
        for event in events {
            self.on_event(event);
        }
    }
}

impl<F: FnMut(&Event) + Send + 'static> EventSink for F {
    fn on_event(&mut self, event: &Event) {
        self(event)
    }
}
