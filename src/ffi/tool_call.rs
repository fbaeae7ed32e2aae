//! `ferrule_tool_call`: one running call of a host tool.
//!
//! The handle has two owners: the callback frame (until `execute` returns) and the
//! completion right (until `_complete` or `_fail`). It is freed when both are done,
//! so completing twice inside the callback is caught (`ALREADY_COMPLETED`) instead
//! of touching freed memory. An update holds a temporary reference, so an update
//! still running on one thread while another completes the call is safe.

use std::ffi::c_char;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::boundary::{guard, ref_arg, str_arg};
use super::error::ferrule_error;
use super::string::{ferrule_str, NulTerminated};
use crate::error::{Error, ErrorCode, Result};
use crate::tool::{Invocation, ToolOutcome, ToolResult, UpdateSink};

/// One call of a host tool. Borrowed strings from it stay valid until the call is
/// completed or failed; after that the handle must not be used.
pub struct ferrule_tool_call {
    id: NulTerminated,
    name: NulTerminated,
    arguments: NulTerminated,
    cancel: CancellationToken,
    updates: UpdateSink,
    completion: Mutex<Option<oneshot::Sender<ToolOutcome>>>,
    references: AtomicUsize,
}

/// A counted reference to a heap-allocated `ferrule_tool_call`.
pub(crate) struct CallHandle(*mut ferrule_tool_call);

// SAFETY: every field of `ferrule_tool_call` is thread-safe, and the count decides
// which thread frees it.
unsafe impl Send for CallHandle {}

impl CallHandle {
    /// A handle with its two references (callback frame, completion right), and
    /// the receiver of its outcome.
    pub(crate) fn new(invocation: Invocation) -> (CallHandle, oneshot::Receiver<ToolOutcome>) {
        let (sender, receiver) = oneshot::channel();
        let call = ferrule_tool_call {
            id: NulTerminated::new(invocation.id()),
            name: NulTerminated::new(invocation.name()),
            arguments: NulTerminated::new(invocation.arguments_json()),
            cancel: invocation.cancellation().clone(),
            updates: invocation.updates().clone(),
            completion: Mutex::new(Some(sender)),
            references: AtomicUsize::new(2),
        };
        (CallHandle(Box::into_raw(Box::new(call))), receiver)
    }

    pub(crate) fn as_ptr(&self) -> *mut ferrule_tool_call {
        self.0
    }

    /// Gives up this reference, freeing the call when it was the last.
    pub(crate) fn release(self) {
        // SAFETY: this reference keeps the call alive until the decrement.
        if unsafe { &*self.0 }.references.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: no reference is left; the allocation came from `Box::into_raw`.
            drop(unsafe { Box::from_raw(self.0) });
        }
    }
}

impl ferrule_tool_call {
    fn take_completion(&self) -> Result<oneshot::Sender<ToolOutcome>> {
        self.completion
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| Error::new(ErrorCode::AlreadyCompleted, "this tool call was already completed or failed"))
    }

    fn is_completed(&self) -> bool {
        self.completion.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// Ends the call with `outcome` and gives up the completion right.
    fn finish(&self, sender: oneshot::Sender<ToolOutcome>, outcome: ToolOutcome) {
        let _ = sender.send(outcome);
        CallHandle(self as *const _ as *mut _).release();
    }
}

/// The call id the model gave. Borrowed from `call`; valid until the call is
/// completed or failed. Empty for NULL.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_id(call: *const ferrule_tool_call) -> ferrule_str {
    // SAFETY: the host passes NULL or a live call.
    unsafe { call.as_ref() }.map_or(ferrule_str::EMPTY, |c| c.id.as_ferrule_str())
}

/// The tool name. Borrowed from `call`; valid until the call is completed or
/// failed. Empty for NULL.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_name(call: *const ferrule_tool_call) -> ferrule_str {
    // SAFETY: the host passes NULL or a live call.
    unsafe { call.as_ref() }.map_or(ferrule_str::EMPTY, |c| c.name.as_ferrule_str())
}

/// The arguments: a JSON object that satisfied the tool's schema, exactly as the
/// model wrote it. Borrowed from `call`; valid until the call is completed or
/// failed. Empty for NULL.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_arguments(call: *const ferrule_tool_call) -> ferrule_str {
    // SAFETY: the host passes NULL or a live call.
    unsafe { call.as_ref() }.map_or(ferrule_str::EMPTY, |c| c.arguments.as_ferrule_str())
}

/// Whether the call timed out or its run was cancelled. Its result will be
/// discarded, so the tool should stop and complete (or fail) soon. Any thread.
/// False for NULL.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_is_cancelled(call: *const ferrule_tool_call) -> bool {
    // SAFETY: the host passes NULL or a live call.
    unsafe { call.as_ref() }.is_some_and(|c| c.cancel.is_cancelled())
}

/// Sends a provisional result (a JSON string, or a tool result object) as a
/// `tool_execution_update` event. Updates never reach the model; after the call
/// has ended (timeout, cancellation) they are dropped. May block while the run's
/// event queue is full. Any thread, any number of times before `_complete` or
/// `_fail`, and never after.
///
/// An update that is not valid JSON or not a valid result fails the call (the model
/// sees an error result) and consumes the handle; the error says what was wrong.
/// `FERRULE_ERROR_ALREADY_COMPLETED` when called inside the callback after the call
/// was completed.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_update(
    call: *mut ferrule_tool_call,
    json: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live call (or NULL).
        let call = unsafe { ref_arg(call, "call") }?;
        call.references.fetch_add(1, Ordering::AcqRel);
        let temporary = CallHandle(call as *const _ as *mut _);
        let sent = send_update(call, json, len);
        temporary.release();
        sent
    })
}

fn send_update(call: &ferrule_tool_call, json: *const c_char, len: usize) -> Result<()> {
    if call.is_completed() {
        return Err(Error::new(ErrorCode::AlreadyCompleted, "this tool call was already completed or failed"));
    }
    // SAFETY: the host passes `len` readable bytes.
    match unsafe { result_arg(json, len) } {
        Ok(partial) => {
            call.updates.send_blocking(partial);
            Ok(())
        }
        Err(error) => {
            let sender = call.take_completion()?;
            call.finish(sender, ToolOutcome::Invalid(format!("invalid update: {}", error.message)));
            Err(error)
        }
    }
}

/// Reads a tool result argument.
///
/// # Safety
/// A non-NULL `json` must point to `len` readable bytes.
unsafe fn result_arg(json: *const c_char, len: usize) -> Result<ToolResult> {
    // SAFETY: as the caller guarantees.
    unsafe { str_arg(json, len, "json") }.and_then(ToolResult::from_json)
}

/// Completes the call with its result: a JSON string (a text result) or an object
/// `{"content": ..., "is_error", "terminate", "details", "display", "title",
/// "summary", "usage", "added_tools"}`. Consumes the handle, also when the result
/// is invalid (then the model sees an error result and this returns the error). A
/// completion after the call timed out or the run was cancelled is accepted and
/// discarded. Any thread. `FERRULE_ERROR_ALREADY_COMPLETED` when called a second
/// time inside the callback.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_complete(
    call: *mut ferrule_tool_call,
    json: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live call (or NULL).
        let call = unsafe { ref_arg(call, "call") }?;
        let sender = call.take_completion()?;
        // SAFETY: the host passes `len` readable bytes.
        let (outcome, returned) = match unsafe { result_arg(json, len) } {
            Ok(result) => (ToolOutcome::Completed(result), Ok(())),
            Err(error) => (ToolOutcome::Invalid(error.message.clone()), Err(error)),
        };
        call.finish(sender, outcome);
        returned
    })
}

/// Fails the call: the model sees an error result whose text is `message` (write
/// it for the model; never put secrets in it). Consumes the handle. Any thread.
/// `FERRULE_ERROR_ALREADY_COMPLETED` when called inside the callback after the
/// call was completed.
#[no_mangle]
pub unsafe extern "C" fn ferrule_tool_call_fail(
    call: *mut ferrule_tool_call,
    message: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live call (or NULL).
        let call = unsafe { ref_arg(call, "call") }?;
        let sender = call.take_completion()?;
        // SAFETY: the host passes `len` readable bytes.
        let (outcome, returned) = match unsafe { str_arg(message, len, "message") } {
            Ok(text) => (ToolOutcome::Failed(text.to_owned()), Ok(())),
            Err(error) => {
                (ToolOutcome::Invalid(format!("the failure message was unusable: {}", error.message)), Err(error))
            }
        };
        call.finish(sender, outcome);
        returned
    })
}
