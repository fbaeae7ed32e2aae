//! Runs: waiting, cancelling, and delivering events to a C callback.

use std::ffi::{c_char, c_void};

use super::boundary::{guard, guard_void, out_arg, ref_arg};
use super::error::ferrule_error;
use super::foreign_data::ForeignData;
use super::string::{ferrule_str, give_string, NulTerminated};
use crate::agent::{Event, EventSink, Run};
use crate::error::{Error, ErrorCode};

/// Receives one event: a JSON object with `"type"` and `"run_id"`, `len` bytes at
/// `event_json` (NUL-terminated), borrowed for the duration of the call. Called on
/// a ferrule thread, never twice at once for one run, in order.
pub type ferrule_event_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, event_json: *const c_char, len: usize)>;

/// A run. Every handle (from `ferrule_agent_start` or `_clone`) is freed with
/// `ferrule_run_free`; freeing the last one cancels the run if it is still going.
/// Any thread.
pub struct ferrule_run {
    inner: Run,
    id: NulTerminated,
}

impl ferrule_run {
    pub(crate) fn new(inner: Run) -> *mut ferrule_run {
        let id = NulTerminated::new(inner.id());
        Box::into_raw(Box::new(ferrule_run { inner, id }))
    }
}

/// Delivers events to a C callback; dropping it frees the host's user data.
pub(crate) struct ForeignEventSink {
    on_event: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
    user_data: ForeignData,
    buffer: Vec<u8>,
}

impl ForeignEventSink {
    pub(crate) fn new(
        on_event: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
        user_data: ForeignData,
    ) -> Self {
        ForeignEventSink { on_event, user_data, buffer: Vec::with_capacity(512) }
    }
}

impl EventSink for ForeignEventSink {
    fn on_event(&mut self, event: &Event) {
        self.buffer.clear();
        if serde_json::to_writer(&mut self.buffer, event).is_err() {
            return;
        }
        let len = self.buffer.len();
        self.buffer.push(0);
        // SAFETY: the host's callback gets its own user data and a buffer that
        // lives for the call.
        unsafe { (self.on_event)(self.user_data.data, self.buffer.as_ptr().cast(), len) };
    }
}

/// The run's id (`"run-7"`), as in its events. Borrowed from `run`; valid until
/// that handle is freed. Empty for NULL.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_id(run: *const ferrule_run) -> ferrule_str {
    // SAFETY: the host passes NULL or a live run.
    unsafe { run.as_ref() }.map_or(ferrule_str::EMPTY, |r| r.id.as_ferrule_str())
}

/// Blocks until the run has ended and every event was delivered, then writes the
/// run result JSON (`status`, `final`, `messages`, `usage`, `rounds`, `error`) to
/// `*result_json` / `*len`, owned by the host (free with `ferrule_string_free`).
/// Succeeds for every status; a failed run has its error inside the result. May
/// be called any number of times, from any thread; inside one of this run's own
/// callbacks it returns `FERRULE_ERROR_WOULD_DEADLOCK` instead of hanging.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_wait(
    run: *mut ferrule_run,
    result_json: *mut *mut c_char,
    len: *mut usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes live pointers (or NULL).
        let run = unsafe { ref_arg(run, "run") }?;
        let result_json = unsafe { out_arg(result_json, "result_json") }?;
        let len = unsafe { out_arg(len, "len") }?;
        let result = run.inner.wait_blocking()?;
        let json = serde_json::to_string(&*result)
            .map_err(|e| Error::new(ErrorCode::Panic, format!("the run result did not serialise: {e}")))?;
        give_string(json, result_json, len)
    })
}

/// Cancels the run: running tools see `ferrule_tool_call_is_cancelled`, nothing new
/// starts, and the run ends with status `cancelled` (unless it already ended).
/// Safe from any thread, inside callbacks too. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_cancel(run: *mut ferrule_run) {
    guard_void(|| {
        // SAFETY: the host passes NULL or a live run.
        if let Some(run) = unsafe { run.as_ref() } {
            run.inner.cancel();
        }
    })
}

/// A new handle on the same run, freed separately with `ferrule_run_free`. NULL
/// for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_clone(run: *const ferrule_run) -> *mut ferrule_run {
    // SAFETY: the host passes NULL or a live run.
    match unsafe { run.as_ref() } {
        Some(run) => ferrule_run::new(run.inner.clone()),
        None => std::ptr::null_mut(),
    }
}

/// Frees one run handle; freeing the last cancels the run if it is still going.
/// The run still ends properly (its `run_end` event is delivered). NULL is a
/// no-op. Any thread, inside callbacks too.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_free(run: *mut ferrule_run) {
    guard_void(|| {
        if !run.is_null() {
            // SAFETY: the host passes a run handle from ferrule exactly once.
            drop(unsafe { Box::from_raw(run) });
        }
    })
}
