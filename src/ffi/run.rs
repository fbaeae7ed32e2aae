//! Runs: waiting, cancelling, and delivering events to a C callback.

use std::ffi::{c_char, c_void};

use super::boundary::{arg_mut, arg_opt, arg_ref, arg_str, free_box, give_box, guard, guard_or};
use super::error::ferrule_error;
use super::foreign_data::ForeignData;
use super::string::{ferrule_str, give_json, NulTerminated};
use crate::agent::{Event, EventSink, Run};

/// Receives one event: a JSON object with `"type"` and `"run_id"`, `len` bytes at
/// `event_json` (NUL-terminated), borrowed for the duration of the call. Called on
/// one of ferrule's event threads, never twice at once for one run, in order.
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
        give_box(ferrule_run { inner, id })
    }
}

/// Delivers events to a C callback; dropping it frees the host's user data.
pub(crate) struct ForeignEventSink {
    on_event: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
    user_data: ForeignData,
    buffer: Vec<u8>,
    /// Events go in bursts, as JSON lists (run input `event_bursts`).
    bursts: bool,
}

/// The most events one burst carries.
const BURST: usize = 256;

impl ForeignEventSink {
    pub(crate) fn new(
        on_event: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
        user_data: ForeignData,
        bursts: bool,
    ) -> Self {
        ForeignEventSink { on_event, user_data, buffer: Vec::with_capacity(512), bursts }
    }

    /// Hands the buffer's JSON to the host.
    fn send(&mut self) {
        let len = self.buffer.len();
        self.buffer.push(0);
        // SAFETY: the host's callback gets its own user data and a buffer that
        // lives for the call.
        unsafe { (self.on_event)(self.user_data.data, self.buffer.as_ptr().cast(), len) };
    }
}

impl EventSink for ForeignEventSink {
    fn on_event(&mut self, event: &Event) {
        self.on_events(std::slice::from_ref(event));
    }

    fn burst(&self) -> usize {
        if self.bursts {
            BURST
        } else {
            1
        }
    }

    fn on_events(&mut self, events: &[Event]) {
        if self.bursts {
            self.buffer.clear();
            if serde_json::to_writer(&mut self.buffer, events).is_ok() {
                self.send();
            }
            return;
        }
        for event in events {
            self.buffer.clear();
            if serde_json::to_writer(&mut self.buffer, event).is_ok() {
                self.send();
            }
        }
    }
}

/// The run's id (`"run-7"`), as in its events. Borrowed from `run`; valid until
/// that handle is freed. Empty for NULL.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_id(run: *const ferrule_run) -> ferrule_str {
    guard_or(ferrule_str::EMPTY, || {
        // SAFETY: the host passes NULL or a live run.
        unsafe { arg_opt(run) }.map_or(ferrule_str::EMPTY, |r| r.id.as_ferrule_str())
    })
}

/// Blocks until the run has ended, every event was delivered, every callback
/// that answered one of the run's tool calls, hook consultations or model
/// requests while the run waited for it has returned, and the run let go of
/// the host's user data (the event callback's, and the tools' when the run
/// held the agent last), then writes the run result JSON (`status`, `final`,
/// `messages`, `usage`, `rounds`, `error`) to `*result_json` / `*len`, owned by the
/// host (free with `ferrule_string_free`). Succeeds for every status; a failed run
/// has its error inside the result. With `result_json` and `len` both NULL it
/// only waits, and writes nothing (for a host that read the result from
/// `run_end`: serializing it again costs as much as the event did); one of them
/// NULL is `FERRULE_ERROR_NULL_ARG`. May be called any number of times, from any
/// thread. Returns `FERRULE_ERROR_WOULD_DEADLOCK` instead of hanging inside one of
/// this run's own callbacks or `free_user_data` functions, and inside a
/// `nonblocking` tool's callback (which runs on ferrule's runtime). As with
/// joining a thread, a callback that answered and then waits for what the
/// host does only after this wait returns (a lock held across the wait, a
/// signal given after it) never returns, and neither does the wait.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_wait(
    run: *mut ferrule_run,
    result_json: *mut *mut c_char,
    len: *mut usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes live pointers (or NULL).
        let run = unsafe { arg_ref(run, "run") }?;
        if result_json.is_null() && len.is_null() {
            return run.inner.wait_blocking().map(drop);
        }
        let result_json = unsafe { arg_mut(result_json, "result_json") }?;
        let len = unsafe { arg_mut(len, "len") }?;
        let result = run.inner.wait_blocking()?;
        give_json(&*result, "the run result", result_json, len)
    })
}

/// Queues a message into the live run: a `user` or `system` message (the
/// transcript's JSON). It enters the transcript before the next model request
/// (never between a call and its result), marked `"origin": "injection"`, and a
/// `message_injected` event reports it; one still waiting when the model gives a
/// final answer keeps the run going for one more request. Any thread, inside
/// callbacks too; never blocks. `FERRULE_ERROR_INVALID_JSON` /
/// `FERRULE_ERROR_INVALID_ARG` for a message that does not parse or has another
/// role, `FERRULE_ERROR_ALREADY_COMPLETED` once the run is over.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_inject(
    run: *mut ferrule_run,
    message_json: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live run (or NULL) and `len` readable bytes.
        let run = unsafe { arg_ref(run, "run") }?;
        let json = unsafe { arg_str(message_json, len, "message_json") }?;
        run.inner.inject(crate::json::parse_document("injected message", json)?)
    })
}

/// Cancels the run: running tools see `ferrule_tool_call_is_cancelled`, nothing new
/// starts, and the run ends with status `cancelled` (unless it already ended).
/// Safe from any thread, inside callbacks too. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_cancel(run: *mut ferrule_run) {
    guard_or((), || {
        // SAFETY: the host passes NULL or a live run.
        if let Some(run) = unsafe { arg_opt(run) } {
            run.inner.cancel();
        }
    })
}

/// A new handle on the same run, freed separately with `ferrule_run_free`. NULL
/// for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_clone(run: *const ferrule_run) -> *mut ferrule_run {
    guard_or(std::ptr::null_mut(), || {
        // SAFETY: the host passes NULL or a live run.
        unsafe { arg_opt(run) }.map_or(std::ptr::null_mut(), |run| ferrule_run::new(run.inner.clone()))
    })
}

/// Frees one run handle; freeing the last cancels the run if it is still going.
/// The run still ends properly (its `run_end` event is delivered). NULL is a
/// no-op. Any thread, inside callbacks too.
#[no_mangle]
pub unsafe extern "C" fn ferrule_run_free(run: *mut ferrule_run) {
    // SAFETY: the host passes NULL or a run handle from ferrule, once.
    guard_or((), || unsafe { free_box(run) })
}
