//! `ferrule_tool_call`: one running call of a host tool.
//!
//! A `ferrule_tool_call *` is a handle into a table of live calls, never a
//! pointer ferrule dereferences (see `handle_table`). `_complete` and `_fail`
//! remove the call from the table, so from then on, on every thread and however
//! late, the handle is recognised as stale: the functions that act on it return
//! `ALREADY_COMPLETED`, `_is_cancelled` returns true, and the getters return empty
//! strings. Only strings a getter returned earlier follow the simple rule: they
//! are valid until the call is completed or failed.

use std::ffi::{c_char, c_void};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::boundary::{arg_str, guard, guard_or, null_arg};
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::handle_table::HandleTable;
use super::string::{ferrule_str, NulTerminated};
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::{CallbackKind, CallbackScope};
use crate::tool::{Invocation, ToolOutcome, ToolResult, UpdateSink};

/// One call of a host tool: an opaque handle. See `ferrule_tool_call_complete`
/// for its life.
pub struct ferrule_tool_call {
    _opaque: [u8; 0],
}

/// Runs when a call is cancelled before it completes; see
/// `ferrule_tool_call_on_cancel`.
pub type ferrule_cancel_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Every call whose host has not completed it yet.
static LIVE_CALLS: HandleTable<ForeignCall> = HandleTable::new();

/// A call as ferrule keeps it while the host works on it.
struct ForeignCall {
    id: NulTerminated,
    name: NulTerminated,
    arguments: NulTerminated,
    cancel: CancellationToken,
    updates: UpdateSink,
    run_serial: u64,
    state: Mutex<CallState>,
}

struct CallState {
    /// Taken by the one completion.
    completion: Option<oneshot::Sender<ToolOutcome>>,
    /// The host's cancel handler, kept until the call is completed. Its user data
    /// is freed when the call is completed and the handler, if it ran, returned.
    cancel_handler: Option<Arc<CancelHandler>>,
    /// The handler was started; it runs once.
    handler_fired: bool,
}

struct CancelHandler {
    function: unsafe extern "C" fn(*mut c_void),
    user_data: ForeignData,
}

impl CancelHandler {
    /// Runs the handler on a tool callback thread, in the run's callback scope.
    fn fire(self: Arc<Self>, run_serial: u64) {
        match crate::runtime::threads() {
            Ok(threads) => threads.tool_callbacks.submit_urgent(Box::new(move || self.run(run_serial))),
            Err(_) => self.run(run_serial),
        }
    }

    fn run(&self, run_serial: u64) {
        let _scope = CallbackScope::enter(run_serial, CallbackKind::Tool);
        // SAFETY: the host registered this function for this user data.
        unsafe { (self.function)(self.user_data.data) };
    }
}

impl ForeignCall {
    fn new(invocation: Invocation, completion: oneshot::Sender<ToolOutcome>) -> Self {
        let (call, cancel, updates, run_serial) = invocation.into_parts();
        ForeignCall {
            id: NulTerminated::from_string(call.id),
            name: NulTerminated::from_string(call.name),
            arguments: NulTerminated::from_string(call.arguments),
            cancel,
            updates,
            run_serial,
            state: Mutex::new(CallState { completion: Some(completion), cancel_handler: None, handler_fired: false }),
        }
    }

    fn state(&self) -> MutexGuard<'_, CallState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the call with `outcome` (discarded if the runner gave up), letting go
    /// of the cancel handler (unrun, or once it has returned) first, so a handler
    /// that never ran is freed before the run can go on.
    fn finish(&self, outcome: ToolOutcome) {
        let (completion, handler) = {
            let mut state = self.state();
            (state.completion.take(), state.cancel_handler.take())
        };
        drop(handler);
        if let Some(completion) = completion {
            let _ = completion.send(outcome);
        }
    }

    /// The runner gave up on the call: it is cancelled, and its cancel handler runs.
    fn abandon(&self) {
        self.cancel.cancel();
        let handler = self.state().take_unfired_handler();
        if let Some(handler) = handler {
            handler.fire(self.run_serial);
        }
    }

    /// Whether the call timed out or its run was cancelled: its result will be
    /// discarded. Set before the runner gives up on it.
    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

impl CallState {
    /// The registered handler if it has not run yet, marked as run.
    fn take_unfired_handler(&mut self) -> Option<Arc<CancelHandler>> {
        if self.handler_fired {
            return None;
        }
        let handler = self.cancel_handler.clone()?;
        self.handler_fired = true;
        Some(handler)
    }
}

/// A call's handle as ferrule passes it to the host: the key of its table entry.
#[derive(Clone, Copy)]
struct CallHandle(usize);

impl CallHandle {
    /// Enters `call` in the table of live calls.
    fn register(call: Arc<ForeignCall>) -> Option<CallHandle> {
        LIVE_CALLS.insert(call).map(CallHandle)
    }

    fn from_ptr(call: *const ferrule_tool_call) -> Result<CallHandle> {
        if call.is_null() {
            return Err(null_arg("call"));
        }
        Ok(CallHandle(call as usize))
    }

    fn as_ptr(self) -> *mut ferrule_tool_call {
        self.0 as *mut ferrule_tool_call
    }

    /// The call, while the host has not completed it.
    fn live(self) -> Result<Arc<ForeignCall>> {
        LIVE_CALLS.get(self.0).ok_or_else(already_completed)
    }

    /// Takes the call out of the table: the one completion.
    fn take(self) -> Result<Arc<ForeignCall>> {
        LIVE_CALLS.remove(self.0).ok_or_else(already_completed)
    }
}

fn already_completed() -> Error {
    Error::new(ErrorCode::AlreadyCompleted, "this tool call was already completed or failed")
}

/// The runner's side of a call: resolves with the host's outcome. Dropped before
/// that (a timeout, a cancelled run), it abandons the call.
pub(crate) struct PendingCall {
    outcome: oneshot::Receiver<ToolOutcome>,
    call: Arc<ForeignCall>,
    resolved: bool,
}

impl Future for PendingCall {
    type Output = ToolOutcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolOutcome> {
        let outcome = std::task::ready!(Pin::new(&mut self.outcome).poll(cx));
        self.resolved = true;
        Poll::Ready(
            outcome
                .unwrap_or_else(|_| ToolOutcome::Failed("The tool's call was dropped before it completed.".to_owned())),
        )
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if !self.resolved {
            self.call.abandon();
        }
    }
}

/// Starts a call: enters it in the table and returns what hands it to the host,
/// with the future of its outcome. `None` when the table is full.
pub(crate) fn begin(invocation: Invocation) -> Option<(CallTicket, PendingCall)> {
    let (completion, outcome) = oneshot::channel();
    let call = Arc::new(ForeignCall::new(invocation, completion));
    let handle = CallHandle::register(call.clone())?;
    Some((
        CallTicket { handle, call: call.clone(), handed_over: false },
        PendingCall { outcome, call, resolved: false },
    ))
}

/// A registered call not yet handed to the host. Dropped without being handed
/// over, it takes the call out of the table: the host never sees it.
pub(crate) struct CallTicket {
    handle: CallHandle,
    call: Arc<ForeignCall>,
    handed_over: bool,
}

impl CallTicket {
    /// Calls `execute` with the call's handle, in the run's callback scope, unless
    /// the call was cancelled first (while it waited for a thread).
    pub(crate) fn hand_over(mut self, execute: impl FnOnce(*mut ferrule_tool_call)) {
        if self.call.is_cancelled() {
            return;
        }
        self.handed_over = true;
        let _scope = CallbackScope::enter(self.call.run_serial, CallbackKind::Tool);
        execute(self.handle.as_ptr());
    }
}

impl Drop for CallTicket {
    fn drop(&mut self) {
        if !self.handed_over {
            LIVE_CALLS.remove(self.handle.0);
        }
    }
}

/// The call id the model gave. Borrowed from `call`; valid until the call is
/// completed or failed. Empty for NULL and for a call that was already completed.
/// Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_id(call: *const ferrule_tool_call) -> ferrule_str {
    borrow_string(call, |c| &c.id)
}

/// The tool name. Borrowed from `call`; valid until the call is completed or
/// failed. Empty for NULL and for a call that was already completed. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_name(call: *const ferrule_tool_call) -> ferrule_str {
    borrow_string(call, |c| &c.name)
}

/// The arguments: a JSON object that satisfied the tool's schema, exactly as the
/// model wrote it. Borrowed from `call`; valid until the call is completed or
/// failed. Empty for NULL and for a call that was already completed. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_arguments(call: *const ferrule_tool_call) -> ferrule_str {
    borrow_string(call, |c| &c.arguments)
}

/// Lends one of a live call's strings. The table entry keeps them alive until
/// the call is completed, which is as long as the host may use them.
fn borrow_string(call: *const ferrule_tool_call, field: fn(&ForeignCall) -> &NulTerminated) -> ferrule_str {
    guard_or(ferrule_str::EMPTY, || match CallHandle::from_ptr(call).and_then(CallHandle::live) {
        Ok(call) => field(&call).as_ferrule_str(),
        Err(_) => ferrule_str::EMPTY,
    })
}

/// Whether the call timed out or its run was cancelled: its result will be
/// discarded, so the tool should stop and complete (or fail) soon. True as well
/// for a call that was already completed, and for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_is_cancelled(call: *const ferrule_tool_call) -> bool {
    guard_or(true, || CallHandle::from_ptr(call).and_then(CallHandle::live).map_or(true, |c| c.is_cancelled()))
}

/// Sends a provisional result (a JSON string, or a tool result object) as a
/// `tool_execution_update` event. Updates never reach the model and are never
/// dropped while the call is live: when the run's event queue is full this
/// waits for room. After the call timed out or its run was cancelled they are
/// accepted and dropped. Any thread, any number of times before `_complete` or
/// `_fail`; safe while another thread completes the call.
///
/// Errors: `FERRULE_ERROR_ALREADY_COMPLETED` once the call was completed or
/// failed. `FERRULE_ERROR_WOULD_DEADLOCK` when the queue is full and waiting could
/// never end: inside a `nonblocking` tool's callback (it runs on ferrule's
/// runtime) or inside the run's own event callback; send from another thread. An
/// update that is not valid JSON or not a valid result fails the call (the model
/// sees an error result) and consumes the handle; the error says what was wrong.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_update(
    call: *mut ferrule_tool_call,
    json: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        let handle = CallHandle::from_ptr(call)?;
        let live = handle.live()?;
        // SAFETY: the host passes `len` readable bytes.
        match unsafe { result_arg(json, len) } {
            Ok(partial) => live.updates.send_blocking(partial),
            Err(error) => {
                handle.take()?.finish(ToolOutcome::Invalid(format!("invalid update: {}", error.message)));
                Err(error)
            }
        }
    })
}

/// Reads a tool result argument.
///
/// # Safety
/// A non-NULL `json` must point to `len` readable bytes.
unsafe fn result_arg(json: *const c_char, len: usize) -> Result<ToolResult> {
    // SAFETY: as the caller guarantees.
    unsafe { arg_str(json, len, "json") }.and_then(ToolResult::from_json)
}

/// Completes the call with its result: a JSON string (a text result) or an object
/// `{"content": ..., "is_error", "terminate", "details", "display", "title",
/// "summary", "usage", "added_tools"}`. Consumes the handle, also when the result
/// is invalid (then the model sees an error result and this returns the error).
/// A completion after the call timed out or the run was cancelled is accepted and
/// discarded. Any thread, inside the callback or later.
/// `FERRULE_ERROR_ALREADY_COMPLETED` once the call was completed or failed,
/// whichever thread did it.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_complete(
    call: *mut ferrule_tool_call,
    json: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        let call = CallHandle::from_ptr(call)?.take()?;
        // SAFETY: the host passes `len` readable bytes.
        match unsafe { result_arg(json, len) } {
            Ok(result) => {
                call.finish(ToolOutcome::Completed(result));
                Ok(())
            }
            Err(error) => {
                call.finish(ToolOutcome::Invalid(error.message.clone()));
                Err(error)
            }
        }
    })
}

/// Fails the call: the model sees an error result whose text is `message` (write
/// it for the model; never put secrets in it). Consumes the handle. Any thread.
/// `FERRULE_ERROR_ALREADY_COMPLETED` once the call was completed or failed.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_fail(
    call: *mut ferrule_tool_call,
    message: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        let call = CallHandle::from_ptr(call)?.take()?;
        // SAFETY: the host passes `len` readable bytes.
        match unsafe { arg_str(message, len, "message") } {
            Ok(text) => {
                call.finish(ToolOutcome::Failed(text.to_owned()));
                Ok(())
            }
            Err(error) => {
                call.finish(ToolOutcome::Invalid(format!("the failure message was unusable: {}", error.message)));
                Err(error)
            }
        }
    })
}

/// Registers a one-shot cancel handler: `on_cancel(user_data)` runs when the call
/// times out or its run is cancelled before the call is completed, or at once if
/// that already happened. It runs on a ferrule callback thread, never inside this
/// function (a completion racing the cancellation may come first). The call must
/// still be completed or failed after a cancellation (that completion is
/// discarded). `free_user_data(user_data)` runs once, when the call has been
/// completed or failed and the handler, if it ran, has returned: until then both
/// the handler and the code that completes the call may use `user_data`.
///
/// A call has at most one handler: a second is `FERRULE_ERROR_INVALID_ARG`.
/// `FERRULE_ERROR_NULL_ARG` for a NULL `call` or `on_cancel`;
/// `FERRULE_ERROR_ALREADY_COMPLETED` once the call was completed. On error the
/// host still owns `user_data`. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_on_cancel(
    call: *mut ferrule_tool_call,
    on_cancel: ferrule_cancel_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
) -> *mut ferrule_error {
    guard(|| {
        let call = CallHandle::from_ptr(call)?.live()?;
        let function = on_cancel.ok_or_else(|| null_arg("on_cancel"))?;
        let mut state = call.state();
        if state.completion.is_none() {
            return Err(already_completed());
        }
        if state.cancel_handler.is_some() {
            return Err(Error::invalid_arg("this tool call already has a cancel handler"));
        }
        // Everything is checked: from here on the user data belongs to ferrule.
        state.cancel_handler =
            Some(Arc::new(CancelHandler { function, user_data: ForeignData::new(user_data, free_user_data) }));
        let due = if call.is_cancelled() { state.take_unfired_handler() } else { None };
        drop(state);
        if let Some(handler) = due {
            handler.fire(call.run_serial);
        }
        Ok(())
    })
}
