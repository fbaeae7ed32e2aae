//! Run events and their delivery.
//!
//! Each run has one dispatcher: events go through a bounded queue and reach the
//! host's [`EventSink`] one at a time, in order, on the blocking pool (a slow host
//! slows its own run; memory stays bounded). `run_end` is always the last event;
//! the sink is dropped right after it is delivered.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::mpsc;

use super::callback_scope::CallbackScope;
use super::result::{RunResult, RunStatus};
use crate::error::Error;
use crate::message::{AssistantMessage, ToolCall};
use crate::tool::ToolResult;

/// Events a run may have queued before its producer waits for the host.
const EVENT_QUEUE_CAPACITY: usize = 256;

/// One event of a run, as the host receives it.
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
    /// The run it belongs to.
    pub run_id: Arc<str>,
}

/// What happened. Serialises with a `"type"` tag in snake case.
#[derive(Debug, Clone, Serialize)]
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

/// Receives a run's events, one at a time and in order, on a blocking-pool thread.
/// Dropped (on any thread) once `run_end` has been delivered.
pub trait EventSink: Send + 'static {
    /// Handles one event. May block; the run waits for it.
    fn on_event(&mut self, event: &Event);
}

impl<F: FnMut(&Event) + Send + 'static> EventSink for F {
    fn on_event(&mut self, event: &Event) {
        self(event)
    }
}

/// The sending side of a run's event queue. Cheap to clone. A run without a sink
/// has a disabled emitter that builds no events.
#[derive(Clone)]
pub(crate) struct EventEmitter {
    run_id: Arc<str>,
    run_serial: u64,
    queue: Option<mpsc::Sender<Event>>,
}

impl EventEmitter {
    /// Whether anyone listens; callers skip building costly events when not.
    pub(crate) fn is_enabled(&self) -> bool {
        self.queue.is_some()
    }

    /// The serial number of the run this emitter belongs to.
    pub(crate) fn run_serial(&self) -> u64 {
        self.run_serial
    }

    /// Queues an event, waiting while the queue is full.
    pub(crate) async fn emit(&self, kind: EventKind) {
        if let Some(queue) = &self.queue {
            let _ = queue.send(Event { kind, run_id: self.run_id.clone() }).await;
        }
    }

    /// Queues an event from a thread outside the runtime. On the run's own
    /// dispatcher thread (an event callback), waiting could never end, so the
    /// event is dropped if the queue is full.
    pub(crate) fn emit_blocking(&self, kind: EventKind) {
        let Some(queue) = &self.queue else { return };
        let event = Event { kind, run_id: self.run_id.clone() };
        if CallbackScope::is_inside(self.run_serial) {
            let _ = queue.try_send(event);
        } else {
            let _ = queue.blocking_send(event);
        }
    }
}

/// Creates a run's emitter and, when there is a sink, the dispatcher future that
/// delivers to it. The dispatcher ends after delivering `run_end`, or when every
/// emitter is gone.
pub(crate) fn channel(
    run_id: Arc<str>,
    run_serial: u64,
    sink: Option<Box<dyn EventSink>>,
) -> (EventEmitter, Option<impl std::future::Future<Output = ()> + Send>) {
    let Some(sink) = sink else {
        return (EventEmitter { run_id, run_serial, queue: None }, None);
    };
    let (tx, rx) = mpsc::channel(EVENT_QUEUE_CAPACITY);
    (EventEmitter { run_id, run_serial, queue: Some(tx) }, Some(dispatch(rx, sink, run_serial)))
}

async fn dispatch(mut queue: mpsc::Receiver<Event>, mut sink: Box<dyn EventSink>, run_serial: u64) {
    while let Some(first) = queue.recv().await {
        // One trip to the blocking pool delivers everything queued by the time the
        // host is done, so a busy run does not pay a thread hand-off per event.
        let delivery = tokio::task::spawn_blocking(move || {
            let _scope = CallbackScope::enter(run_serial);
            let mut next = Some(first);
            while let Some(event) = next {
                sink.on_event(&event);
                if matches!(event.kind, EventKind::RunEnd { .. }) {
                    return None;
                }
                next = queue.try_recv().ok();
            }
            Some((sink, queue))
        });
        match delivery.await {
            Ok(Some((returned_sink, returned_queue))) => {
                sink = returned_sink;
                queue = returned_queue;
            }
            // run_end was delivered, or the sink panicked: delivery for this run is over.
            Ok(None) | Err(_) => return,
        }
    }
}
