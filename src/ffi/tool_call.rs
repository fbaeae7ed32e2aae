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
use std::sync::LazyLock;

use super::boundary::{arg_str, guard, guard_or};
use super::error::ferrule_error;
use super::foreign_data::ferrule_free_fn;
use super::handle_table::{HandleKind, HandleTable};
use super::host_request::{self, ferrule_cancel_fn, Answerable, Handle, HostRequest, Pending, Ticket};
use super::string::{ferrule_str, NulTerminated};
use crate::error::Result;
use crate::tool::{Invocation, ToolOutcome, ToolResult, UpdateSink};

/// One call of a host tool: an opaque handle. See `ferrule_tool_call_complete`
/// for its life.
pub struct ferrule_tool_call {
    _opaque: [u8; 0],
}

/// Every call whose host has not completed it yet.
static LIVE_CALLS: LazyLock<HandleTable<ForeignCall>> = LazyLock::new(|| HandleTable::new(HandleKind::ToolCall));

/// A call as ferrule keeps it while the host works on it.
pub(crate) struct ForeignCall {
    id: NulTerminated,
    name: NulTerminated,
    arguments: NulTerminated,
    /// The `traceparent` of the call's span, when its run is traced.
    traceparent: Option<NulTerminated>,
    /// Which time the call runs (1 the first time).
    attempt: u32,
    updates: UpdateSink,
    request: HostRequest<ToolOutcome>,
}

impl Answerable for ForeignCall {
    type Answer = ToolOutcome;
    const ANSWERED: &'static str = "this tool call was already completed or failed";

    fn table() -> &'static HandleTable<Self> {
        &LIVE_CALLS
    }

    fn request(&self) -> &HostRequest<ToolOutcome> {
        &self.request
    }
}

type CallHandle = Handle<ForeignCall>;

/// Starts a call: enters it in the table and returns what hands it to the host,
/// with the future of its outcome. `None` when the table is full.
pub(crate) fn begin(invocation: Invocation) -> Option<(CallTicket, PendingCall)> {
    let traceparent = invocation.trace().map(|trace| NulTerminated::from_string(trace.traceparent()));
    let attempt = invocation.attempt();
    let (call, cancel, updates, run_serial) = invocation.into_parts();
    let (request, outcome) = HostRequest::new(cancel, run_serial);
    let call = ForeignCall {
        id: NulTerminated::from_string(call.id),
        name: NulTerminated::from_string(call.name),
        arguments: NulTerminated::from_string(call.arguments),
        traceparent,
        attempt,
        updates,
        request,
    };
    host_request::begin(call, outcome)
}

/// A registered call not yet handed to the host.
pub(crate) type CallTicket = Ticket<ForeignCall>;
/// The runner's side of a call.
pub(crate) type PendingCall = Pending<ForeignCall>;

/// What a call the host never answered (it went away) means for the model.
pub(crate) fn unanswered() -> ToolOutcome {
    ToolOutcome::Failed("The tool's call was dropped before it completed.".to_owned())
}

/// The call id the model gave. Borrowed from `call`; valid until the call is
/// completed or failed. Empty for NULL and for a call that was already completed.
/// Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_id(call: *const ferrule_tool_call) -> ferrule_str {
    host_request::borrow_string::<ForeignCall, _>(call, |c| c.id.as_ferrule_str())
}

/// The tool name. Borrowed from `call`; valid until the call is completed or
/// failed. Empty for NULL and for a call that was already completed. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_name(call: *const ferrule_tool_call) -> ferrule_str {
    host_request::borrow_string::<ForeignCall, _>(call, |c| c.name.as_ferrule_str())
}

/// The arguments: a JSON object that satisfied the tool's schema, exactly as the
/// model wrote it. Borrowed from `call`; valid until the call is completed or
/// failed. Empty for NULL and for a call that was already completed. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_arguments(call: *const ferrule_tool_call) -> ferrule_str {
    host_request::borrow_string::<ForeignCall, _>(call, |c| c.arguments.as_ferrule_str())
}

/// The W3C `traceparent` of the call's `execute_tool` span, for the host's
/// own spans of the call to go under it (`00-<trace id>-<span id>-<flags>`).
/// Empty when the call's run records no spans (no tracer is set), for NULL
/// and for a call that was already completed. Borrowed from `call`; valid
/// until the call is completed or failed. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_traceparent(call: *const ferrule_tool_call) -> ferrule_str {
    host_request::borrow_string::<ForeignCall, _>(call, |c| {
        c.traceparent.as_ref().map_or(ferrule_str::EMPTY, NulTerminated::as_ferrule_str)
    })
}

/// Which time the call runs: 1, unless the host runs a call that a run
/// returned (run input `"calls": "return"`) and says it runs it again
/// (`invoke` with `attempt`), as after a crash. A tool that must not do its
/// work twice keys it by the call id and looks for an earlier attempt's. 0 for
/// NULL and for a call that was already completed. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_attempt(call: *const ferrule_tool_call) -> u32 {
    guard_or(0, || Handle::<ForeignCall>::from_ptr(call, "call").and_then(Handle::live).map_or(0, |c| c.attempt))
}

/// The call id, the tool name and the arguments at once, each written where
/// its pointer points unless that pointer is NULL: what `ferrule_tool_call_id`,
/// `_name` and `_arguments` return, in one call (for a binding whose foreign
/// function interface returns a struct slowly, as JNA does). Borrowed from
/// `call`, as theirs are. Each non-NULL pointer must point to a `ferrule_str` the
/// caller owns; each is written empty for NULL, for a request that was
/// answered and in a forked child. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_strings(
    call: *const ferrule_tool_call,
    id: *mut ferrule_str,
    name: *mut ferrule_str,
    arguments: *mut ferrule_str,
) {
    // SAFETY: the caller's promise.
    unsafe {
        host_request::borrow_strings::<ForeignCall, _, 3>(
            call,
            [
                (|c| c.id.as_ferrule_str(), id),
                (|c| c.name.as_ferrule_str(), name),
                (|c| c.arguments.as_ferrule_str(), arguments),
            ],
        )
    }
}

/// Whether the call timed out or its run was cancelled: its result will be
/// discarded, so the tool should stop and complete (or fail) soon. True as well
/// for a call that was already completed, and for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_is_cancelled(call: *const ferrule_tool_call) -> bool {
    host_request::is_cancelled::<ForeignCall, _>(call)
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
        let handle = CallHandle::from_ptr(call, "call")?;
        let live = handle.live()?;
        // SAFETY: the host passes `len` readable bytes.
        match unsafe { result_arg(json, len) } {
            Ok(partial) => live.updates.send_blocking(partial),
            Err(error) => {
                handle.take()?.request.finish(ToolOutcome::Invalid(format!("invalid update: {}", error.message)));
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
        let call = CallHandle::from_ptr(call, "call")?.take()?;
        // SAFETY: the host passes `len` readable bytes.
        match unsafe { result_arg(json, len) } {
            Ok(result) => {
                call.request.finish(ToolOutcome::Completed(result));
                Ok(())
            }
            Err(error) => {
                call.request.finish(ToolOutcome::Invalid(error.message.clone()));
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
        let call = CallHandle::from_ptr(call, "call")?.take()?;
        // SAFETY: the host passes `len` readable bytes.
        match unsafe { arg_str(message, len, "message") } {
            Ok(text) => {
                call.request.finish(ToolOutcome::Failed(text.to_owned()));
                Ok(())
            }
            Err(error) => {
                call.request
                    .finish(ToolOutcome::Invalid(format!("the failure message was unusable: {}", error.message)));
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
        let call = CallHandle::from_ptr(call, "call")?.live()?;
        call.request.on_cancel(on_cancel, user_data, free_user_data, ForeignCall::ANSWERED, "tool call")
    })
}
