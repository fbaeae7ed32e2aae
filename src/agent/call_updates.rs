//! A running call's progress updates, as events of its run.
//!
//! An update is delivered only while the call is live: updates sent after its
//! result was recorded are dropped at once, and one that was already on its way
//! when the call ended is dropped by the event thread, which delivered the end
//! event first. So an update is always delivered before its call's end event, or not at
//! all, and none is ever lost while the call is live.

use std::sync::Arc;

use super::call_progress::CallProgress;
use super::event::EventKind;
use super::event_queue::EventEmitter;
use crate::error::Result;
use crate::message::ToolCall;
use crate::tool::{ToolResult, UpdateReceiver};
use crate::BoxFuture;

/// A call's updates, sent as `tool_execution_update` events of a run that has an
/// event sink (without one, a call's updates are discarded and this is not made).
pub(crate) struct CallUpdates {
    progress: Arc<CallProgress>,
    events: EventEmitter,
    call_id: String,
    name: String,
}

impl CallUpdates {
    pub(crate) fn new(call: &ToolCall, progress: Arc<CallProgress>, events: EventEmitter) -> Self {
        CallUpdates { progress, events, call_id: call.id.clone(), name: call.name.clone() }
    }

    fn event(&self, partial: ToolResult) -> EventKind {
        EventKind::ToolExecutionUpdate { call_id: self.call_id.clone(), name: self.name.clone(), partial }
    }
}

impl UpdateReceiver for CallUpdates {
    fn send(&self, partial: ToolResult) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if !self.progress.is_finished() {
                self.events.emit_update(self.event(partial), &self.progress).await;
            }
        })
    }

    fn send_blocking(&self, partial: ToolResult) -> Result<()> {
        if self.progress.is_finished() {
            return Ok(());
        }
        self.events.emit_update_blocking(self.event(partial), &self.progress)
    }
}
