//! One call of a tool as its function sees it: the call, its checked arguments,
//! the cancellation signal, and where progress updates go.
//!
//! The run loop builds invocations; a test builds one with [`Invocation::new`] to
//! call a tool function directly:
//!
//! ```
//! use ferrule::message::ToolCall;
//! use ferrule::tool::{Invocation, ToolResult, UpdateSink};
//! use serde_json::json;
//!
//! let call = ToolCall::new("c1", "lookup", r#"{"id":7}"#);
//! let updates = UpdateSink::new(|partial: ToolResult| println!("update: {:?}", partial.content));
//! let invocation = Invocation::new(call, json!({"id": 7})).with_updates(updates);
//! assert_eq!(invocation.arguments()["id"], 7);
//! ```

use std::any::Any;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::ToolResult;
use crate::error::Result;
use crate::message::ToolCall;
use crate::trace::CallTrace;
use crate::BoxFuture;

/// One call handed to a [`super::ToolFunction`].
pub struct Invocation {
    call: ToolCall,
    arguments: Value,
    cancel: CancellationToken,
    updates: UpdateSink,
    run_serial: u64,
    caller: Option<Caller>,
    trace: Option<CallTrace>,
    attempt: u32,
}

/// The calling run's side of a call, for a function that
/// [starts runs](super::ToolFunction::starts_runs): a type of the run's own,
/// which the tool layer does not look into.
pub(crate) type Caller = Arc<dyn Any + Send + Sync>;

impl Invocation {
    /// A call of a tool whose `arguments` were parsed and checked. Its updates are
    /// discarded and nothing cancels it, unless set with the `with_` methods.
    pub fn new(call: ToolCall, arguments: Value) -> Self {
        Invocation {
            call,
            arguments,
            cancel: CancellationToken::new(),
            updates: UpdateSink::discard(),
            run_serial: 0,
            caller: None,
            trace: None,
            attempt: 1,
        }
    }

    /// Sends the call's progress updates to `updates`.
    pub fn with_updates(mut self, updates: UpdateSink) -> Self {
        self.updates = updates;
        self
    }

    /// Cancels the call when `cancel` is cancelled.
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// A call of a run: `run_serial` ties host functions to the run's callback
    /// scope (a blocking wait for that run from inside the call is refused);
    /// `caller` is the run's side of the call, for a function that starts runs.
    pub(crate) fn in_run(
        call: ToolCall,
        arguments: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
        run_serial: u64,
        caller: Option<Caller>,
    ) -> Self {
        Invocation { call, arguments, cancel, updates, run_serial, caller, trace: None, attempt: 1 }
    }

    /// The call's span, when its run is traced.
    pub(crate) fn with_trace(mut self, trace: Option<CallTrace>) -> Self {
        self.trace = trace;
        self
    }

    /// Which time the call runs: 1, unless the host runs a call a run
    /// returned again (run input `invoke` with `attempt`).
    pub(crate) fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// Which time the call runs (1 the first time): a host that runs a call
    /// again, after a crash, says so, and a tool that must not do its work
    /// twice reads it with the call id.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The call's span, when its run is traced: its `traceparent`, for the
    /// function's own spans to go under.
    pub fn trace(&self) -> Option<&CallTrace> {
        self.trace.as_ref()
    }

    /// The calling run's side of the call: given to a function that starts
    /// runs, when the call is one of a run's.
    pub(crate) fn caller(&self) -> Option<&Caller> {
        self.caller.as_ref()
    }

    /// The call id.
    pub fn id(&self) -> &str {
        &self.call.id
    }

    /// The tool name.
    pub fn name(&self) -> &str {
        &self.call.name
    }

    /// The arguments exactly as the model wrote them (a JSON object).
    pub fn arguments_json(&self) -> &str {
        &self.call.arguments
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

    /// The call, its cancellation token, its update sink and its run serial, for
    /// a function that keeps them in a shape of its own (host tools).
    pub(crate) fn into_parts(self) -> (ToolCall, CancellationToken, UpdateSink, u64) {
        (self.call, self.cancel, self.updates, self.run_serial)
    }
}

/// Where a call's progress updates go. A run implements it (updates become
/// `tool_execution_update` events); a closure `Fn(ToolResult)` is one too.
pub trait UpdateReceiver: Send + Sync + 'static {
    /// Takes an update from async code, waiting while there is no room.
    fn send(&self, partial: ToolResult) -> BoxFuture<'_, ()>;

    /// Takes an update from a thread outside the runtime, blocking while there is
    /// no room. Fails with `WOULD_DEADLOCK` where waiting could never end.
    fn send_blocking(&self, partial: ToolResult) -> Result<()>;
}

impl<F: Fn(ToolResult) + Send + Sync + 'static> UpdateReceiver for F {
    fn send(&self, partial: ToolResult) -> BoxFuture<'_, ()> {
        self(partial);
        Box::pin(std::future::ready(()))
    }

    fn send_blocking(&self, partial: ToolResult) -> Result<()> {
        self(partial);
        Ok(())
    }
}

/// Sends provisional results of one call. In a run, updates become
/// `tool_execution_update` events: they never enter the transcript, their
/// `terminate` has no effect, and once the call has ended they are dropped.
/// Cheap to clone; usable from any thread.
#[derive(Clone)]
pub struct UpdateSink(Arc<dyn UpdateReceiver>);

impl UpdateSink {
    /// Updates go to `receiver`.
    pub fn new(receiver: impl UpdateReceiver) -> Self {
        UpdateSink(Arc::new(receiver))
    }

    /// Updates go nowhere. Cheap: every such sink shares one receiver.
    pub fn discard() -> Self {
        static DISCARD: OnceLock<UpdateSink> = OnceLock::new();
        DISCARD.get_or_init(|| UpdateSink::new(|_: ToolResult| ())).clone()
    }

    /// Sends an update from async code.
    pub async fn send(&self, partial: ToolResult) {
        self.0.send(partial).await
    }

    /// Sends an update from a thread outside the runtime (a host thread or a
    /// callback thread), waiting while the run's event queue is full. Fails with
    /// `WOULD_DEADLOCK` where that wait could never end: on ferrule's runtime, or
    /// inside the run's own event callback.
    pub fn send_blocking(&self, partial: ToolResult) -> Result<()> {
        self.0.send_blocking(partial)
    }
}
