//! One call of a tool as its function sees it: the arguments, the cancellation
//! signal, and the channel for progress updates.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::ToolResult;
use crate::agent::{CallbackScope, EventEmitter, EventKind};
use crate::message::ToolCall;

/// One call as its runner, its function and its update sink share it: the call
/// itself, and whether its result was recorded (after which updates are ignored).
/// The lock makes "ignored after the end event" exact: an update is either queued
/// before the end event or not at all.
pub(crate) struct CallState {
    call: ToolCall,
    finished: Mutex<bool>,
}

impl CallState {
    pub(crate) fn new(call: ToolCall) -> Self {
        CallState { call, finished: Mutex::new(false) }
    }

    /// Marks the call finished; later updates are dropped.
    pub(crate) async fn finish(&self) {
        *self.finished.lock().await = true;
    }
}

/// One call handed to a [`super::ToolFunction`].
pub struct Invocation {
    pub(crate) arguments: Value,
    pub(crate) run_serial: u64,
    pub(crate) cancel: CancellationToken,
    pub(crate) updates: UpdateSink,
}

impl Invocation {
    /// The call id.
    pub fn id(&self) -> &str {
        &self.updates.state.call.id
    }

    /// The tool name.
    pub fn name(&self) -> &str {
        &self.updates.state.call.name
    }

    /// The arguments exactly as the model wrote them (a JSON object).
    pub fn arguments_json(&self) -> &str {
        &self.updates.state.call.arguments
    }

    /// The arguments, parsed and schema-validated.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// Whether the call timed out or its run was cancelled; the result will be
    /// discarded, so the function should stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The call's cancellation token (a child of the run's).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Where progress updates go.
    pub fn updates(&self) -> &UpdateSink {
        &self.updates
    }

    /// The serial number of the run the call belongs to.
    pub(crate) fn run_serial(&self) -> u64 {
        self.run_serial
    }
}

/// Sends provisional results as `tool_execution_update` events. Updates never enter
/// the transcript, their `terminate` has no effect, and once the call has ended
/// they are dropped. Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct UpdateSink {
    pub(crate) state: Arc<CallState>,
    pub(crate) events: EventEmitter,
}

impl UpdateSink {
    fn event(&self, partial: ToolResult) -> EventKind {
        EventKind::ToolExecutionUpdate {
            call_id: self.state.call.id.clone(),
            name: self.state.call.name.clone(),
            partial,
        }
    }

    /// Sends an update from async code.
    pub async fn send(&self, partial: ToolResult) {
        if !self.events.is_enabled() {
            return;
        }
        let finished = self.state.finished.lock().await;
        if !*finished {
            self.events.emit(self.event(partial)).await;
        }
    }

    /// Sends an update from a thread outside the runtime (a host thread or the
    /// blocking pool), waiting while the run's event queue is full.
    pub fn send_blocking(&self, partial: ToolResult) {
        if !self.events.is_enabled() {
            return;
        }
        // On the run's own dispatcher thread, waiting for the lock could wait for
        // an update that waits for this very thread; such an update is dropped.
        let finished = if CallbackScope::is_inside(self.events.run_serial()) {
            match self.state.finished.try_lock() {
                Ok(guard) => guard,
                Err(_) => return,
            }
        } else {
            self.state.finished.blocking_lock()
        };
        if !*finished {
            self.events.emit_blocking(self.event(partial));
        }
    }
}
