//! Host hooks: `ferrule_agent_builder_add_hook` and the `ferrule_hook` handle a
//! hook answers through (DESIGN section 10).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, LazyLock};

use futures_util::FutureExt;

use super::agent::ferrule_agent_builder;
use super::boundary::{arg_mut, arg_str, guard, guard_or, null_arg};
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::handle_table::{HandleKind, HandleTable};
use super::host_request::{self, ferrule_cancel_fn, Answerable, Handle, HostRequest};
use super::string::{ferrule_str, NulTerminated};
use crate::error::{Error, ErrorCode, Result};
use crate::hook::{Hook, HookDecision, HookFunction, HookOptions, HookRequest, HookRunState, HookStage};
use crate::BoxFuture;

/// One consultation of a host hook: an opaque handle. See `ferrule_hook_respond`
/// for its life.
pub struct ferrule_hook {
    _opaque: [u8; 0],
}

/// A host hook's function. It must eventually call `ferrule_hook_respond` on
/// `hook` exactly once, before it returns or later from any thread. It runs on
/// one of ferrule's callback threads, where it may block (a blocked hook slows
/// only its own run, and `hook_timeout_ms` bounds it), unless the hook was added
/// `nonblocking`: then it runs on ferrule's runtime and must return at once,
/// handing the work to a thread of the host's. A nonblocking callback that blocks
/// stalls other runs too, and neither the timeout nor a cancel can reach it until
/// it returns. A blocking callback that responds and goes on running holds up
/// only the run's end (its `ferrule_run_wait`) until it returns.
pub type ferrule_hook_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, hook: *mut ferrule_hook)>;

/// Every consultation whose host has not responded yet.
static LIVE_HOOKS: LazyLock<HandleTable<ForeignConsultation>> =
    LazyLock::new(|| HandleTable::new(HandleKind::HookConsultation));

/// A consultation as ferrule keeps it while the host decides.
struct ForeignConsultation {
    stage: HookStage,
    payload: NulTerminated,
    /// The `traceparent` of the run's span, when the run is traced.
    traceparent: Option<NulTerminated>,
    request: HostRequest<Result<HookDecision>>,
    /// What the hook keeps for the consultation's run.
    run_state: Arc<HookRunState>,
}

impl Answerable for ForeignConsultation {
    type Answer = Result<HookDecision>;
    const ANSWERED: &'static str = "this hook was already responded to";

    fn table() -> &'static HandleTable<Self> {
        &LIVE_HOOKS
    }

    fn request(&self) -> &HostRequest<Self::Answer> {
        &self.request
    }
}

type HookHandle = Handle<ForeignConsultation>;

/// Runs a host hook's callback and resolves with its decision: on a callback
/// thread, or (`nonblocking`) at once on the run's own thread.
struct ForeignHook {
    callback: Arc<HookCallback>,
    nonblocking: bool,
}

struct HookCallback {
    decide: unsafe extern "C" fn(*mut c_void, *mut ferrule_hook),
    user_data: ForeignData,
}

impl HookCallback {
    fn deliver(&self, hook: HookHandle) {
        // SAFETY: the host's function gets its own user data and a live handle.
        unsafe { (self.decide)(self.user_data.data, hook.as_ptr()) }
    }
}

impl HookFunction for ForeignHook {
    fn decide(&self, request: HookRequest) -> BoxFuture<'static, Result<HookDecision>> {
        let traceparent = request.trace().map(|trace| NulTerminated::from_string(trace.traceparent()));
        let (stage, payload, cancel, run_cancel, run_serial, run_state) = request.into_parts();
        let (request, answer) = HostRequest::new(cancel, run_serial);
        let request = request.with_run_cancel(run_cancel);
        let payload = NulTerminated::from_string(payload);
        let consultation = ForeignConsultation { stage, payload, traceparent, request, run_state };
        let Some((ticket, mut pending)) = host_request::begin(consultation, answer) else {
            return Box::pin(std::future::ready(Err(Error::new(
                ErrorCode::ResourceExhausted,
                "too many hook consultations are in progress in this process",
            ))));
        };
        let threads = match crate::runtime::threads() {
            Ok(threads) => threads,
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        if self.nonblocking {
            ticket.hand_over(|hook| self.callback.deliver(hook));
            // A decision given inside the callback (an inline hook's) made the
            // run wait for nothing: taken now, it does not count against the
            // run's cooperative budget, so hooks do not make the run yield
            // more often (each forced yield wakes another worker thread).
            if let Some(answer) = pending.answered() {
                return Box::pin(std::future::ready(answer));
            }
        } else {
            host_request::run_on_pool(threads.tool_callbacks, self.callback.clone(), ticket, HookCallback::deliver);
        }
        Box::pin(pending.map(|answer| {
            answer.unwrap_or_else(|| Err(Error::invalid_arg("the hook's consultation went away without a response")))
        }))
    }
}

/// Adds a hook consulted at the stages `stages_json` names (a JSON list such as
/// `["tool_call", "final_answer"]`: `run_start`, `turn_start`, `tool_call`,
/// `tool_result`, `final_answer`), or `{"stages": [...], "nonblocking": true,
/// "history": "none"}`: with `nonblocking`, `decide` runs on ferrule's runtime
/// and must return at once, responding later from a thread of the host's (as a
/// `nonblocking` tool); with `"history": "none"` the `run_start` and
/// `turn_start` payloads carry `message_count` but no `messages` (empty), with
/// `"history": "new"` only the messages added since the hook's last
/// `turn_start` payload in the run, from index `messages_from` (all of them
/// the first time and after the history was replaced; a hook keeps the rest
/// itself, for instance with `ferrule_hook_set_run_state`). Hooks of one stage
/// are consulted in the order they were added. `free_user_data(user_data)` runs once, when the agent, every
/// run of it and every running callback of the hook are gone. On error the host
/// still owns `user_data`: `FERRULE_ERROR_NULL_ARG` for a NULL builder or `decide`,
/// `FERRULE_ERROR_INVALID_ARG` for an unknown, repeated or missing stage.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_builder_add_hook(
    builder: *mut ferrule_agent_builder,
    stages_json: *const c_char,
    len: usize,
    decide: ferrule_hook_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live builder (or NULL) and `len` readable bytes.
        let builder = unsafe { arg_mut(builder, "builder") }?;
        let options = HookOptions::from_json(unsafe { arg_str(stages_json, len, "stages_json") }?)?;
        let decide = decide.ok_or_else(|| null_arg("decide"))?;
        // Everything is checked: from here on the user data belongs to ferrule.
        let callback = Arc::new(HookCallback { decide, user_data: ForeignData::new(user_data, free_user_data) });
        let function = ForeignHook { callback, nonblocking: options.nonblocking };
        builder.inner.add_hook(Hook::new(options.stages, function)?.with_history(options.history));
        Ok(())
    })
}

/// The stage the hook is consulted at (`"tool_call"`...). Borrowed from `hook`;
/// valid until the hook is responded to. Empty for NULL and for a hook already
/// responded to. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_stage(hook: *const ferrule_hook) -> ferrule_str {
    host_request::borrow_string::<ForeignConsultation, _>(hook, |h| ferrule_str::from_cstr(h.stage.c_name()))
}

/// The payload: a JSON object whose fields depend on the stage (DESIGN section
/// 10; each has `run_id`). Borrowed from `hook`; valid until the hook is
/// responded to. Empty for NULL and for a hook already responded to. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_payload(hook: *const ferrule_hook) -> ferrule_str {
    host_request::borrow_string::<ForeignConsultation, _>(hook, |h| h.payload.as_ferrule_str())
}

/// The W3C `traceparent` of the span the hook is consulted in (the run's
/// `invoke_agent` span), for the host's own spans of the consultation to go
/// under it. Empty when the run records no spans (no tracer is set), for NULL
/// and for a hook already responded to. Borrowed from `hook`; valid until the
/// hook is responded to. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_traceparent(hook: *const ferrule_hook) -> ferrule_str {
    host_request::borrow_string::<ForeignConsultation, _>(hook, |h| {
        h.traceparent.as_ref().map_or(ferrule_str::EMPTY, NulTerminated::as_ferrule_str)
    })
}

/// The stage and the payload at once, each written where its pointer points
/// unless that pointer is NULL: what `ferrule_hook_stage` and
/// `ferrule_hook_payload` return, in one call (for a binding whose foreign
/// function interface returns a struct slowly, as JNA does). Borrowed from
/// `hook`, as theirs are. Each non-NULL pointer must point to a `ferrule_str` the
/// caller owns; each is written empty for NULL, for a request that was
/// answered and in a forked child. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_strings(
    hook: *const ferrule_hook,
    stage: *mut ferrule_str,
    payload: *mut ferrule_str,
) {
    // SAFETY: the caller's promise.
    unsafe {
        host_request::borrow_strings::<ForeignConsultation, _, 2>(
            hook,
            [(|h| ferrule_str::from_cstr(h.stage.c_name()), stage), (|h| h.payload.as_ferrule_str(), payload)],
        )
    }
}

/// Whether the run no longer waits for this hook (it was cancelled, or the hook
/// timed out): the response will be discarded. True as well for a hook already
/// responded to, and for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_is_cancelled(hook: *const ferrule_hook) -> bool {
    host_request::is_cancelled::<ForeignConsultation, _>(hook)
}

/// Responds with the decision, a JSON object: `{}` to go on, `{"abort":
/// "reason"}`, or one decision the stage takes (DESIGN section 10). Consumes the
/// handle, also when the decision is invalid: then the run ends `failed` with
/// the error this returns (`FERRULE_ERROR_INVALID_JSON` or
/// `FERRULE_ERROR_INVALID_ARG`, naming what is wrong). A response after the hook
/// timed out or the run was cancelled is accepted and discarded. Any thread,
/// inside the callback or later. `FERRULE_ERROR_ALREADY_COMPLETED` once the hook
/// was responded to, whichever thread did it.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_respond(
    hook: *mut ferrule_hook,
    decision_json: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        let hook = HookHandle::from_ptr(hook, "hook")?.take()?;
        // SAFETY: the host passes `len` readable bytes.
        let decision = unsafe { arg_str(decision_json, len, "decision_json") }
            .and_then(|json| HookDecision::from_json(hook.stage, json));
        // The run fails with the error returned here.
        hook.request.finish(decision.clone());
        decision.map(drop)
    })
}

/// The value this hook keeps for the consultation's run
/// (`ferrule_hook_set_run_state`), shared by the hook's consultations in that
/// run; NULL when none was set, for NULL and for a hook already responded to.
/// Borrowed: the host's own value, valid until it is replaced or freed. Any
/// thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_run_state(hook: *const ferrule_hook) -> *mut c_void {
    guard_or(std::ptr::null_mut(), || {
        let Ok(consultation) = HookHandle::from_ptr(hook, "hook").and_then(Handle::live) else {
            return std::ptr::null_mut();
        };
        consultation.run_state.with_value(|value| {
            value.and_then(|value| value.downcast_ref::<ForeignData>()).map_or(std::ptr::null_mut(), |data| data.data)
        })
    })
}

/// Keeps `state` for this hook and the consultation's run: the hook's later
/// consultations in that run get it from `ferrule_hook_run_state` (for
/// instance the history a hook registered with `"history": "new"` has been
/// given so far). `free_state(state)` runs once, when the value is replaced
/// (by a later call; NULL clears it) or when the run has ended and no
/// consultation of it is still held, before `ferrule_run_wait` returns unless
/// a late consultation holds it (on a ferrule callback thread or the caller's).
/// After a handoff the other agent's hooks start without a value; those of the
/// agent handed off from are freed when the run ends.
/// Call before responding. On error the host still owns `state`:
/// `FERRULE_ERROR_NULL_ARG` for a NULL hook, `FERRULE_ERROR_ALREADY_COMPLETED`
/// once the hook was responded to. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_set_run_state(
    hook: *mut ferrule_hook,
    state: *mut c_void,
    free_state: ferrule_free_fn,
) -> *mut ferrule_error {
    guard(|| {
        let consultation = HookHandle::from_ptr(hook, "hook")?.live()?;
        let value = (!state.is_null()).then(|| Box::new(ForeignData::new(state, free_state)) as _);
        // The value replaced is freed here, outside the state's lock.
        drop(consultation.run_state.replace_value(value));
        Ok(())
    })
}

/// Registers a one-shot cancel handler: `on_cancel(user_data)` runs when the run
/// stops waiting for the hook (it was cancelled, or the hook timed out) before the
/// hook was responded to, or at once if that already happened, on a ferrule
/// callback thread. The hook must still be responded to. `free_user_data` runs
/// once, when the hook has been responded to and the handler, if it ran, has
/// returned. At most one handler per hook (`FERRULE_ERROR_INVALID_ARG`);
/// `FERRULE_ERROR_ALREADY_COMPLETED` once responded to. On error the host still
/// owns `user_data`. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_hook_on_cancel(
    hook: *mut ferrule_hook,
    on_cancel: ferrule_cancel_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
) -> *mut ferrule_error {
    guard(|| {
        let hook = HookHandle::from_ptr(hook, "hook")?.live()?;
        hook.request.on_cancel(on_cancel, user_data, free_user_data, ForeignConsultation::ANSWERED, "hook")
    })
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;

    use tokio_util::sync::CancellationToken;

    use super::{ferrule_hook, ferrule_hook_respond, ForeignData, ForeignHook, HookCallback};
    use crate::hook::{HookDecision, HookFunction, HookRequest, HookStage};

    /// A nonblocking host hook that goes on inside its callback.
    unsafe extern "C" fn go_on(_: *mut std::ffi::c_void, hook: *mut ferrule_hook) {
        // SAFETY: a live handle, responded to once, with two readable bytes.
        let error = unsafe { ferrule_hook_respond(hook, c"{}".as_ptr(), 2) };
        assert!(error.is_null());
    }

    #[test]
    fn a_decision_given_in_the_callback_never_makes_the_run_yield() {
        let user_data = ForeignData::new(std::ptr::null_mut(), None);
        let hook = ForeignHook { callback: Arc::new(HookCallback { decide: go_on, user_data }), nonblocking: true };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let polls = runtime.block_on(async {
            // Far more consultations than a task's budget (128) allows operations.
            let mut consulting = pin!(async {
                for _ in 0..1_000 {
                    let (cancel, run_cancel) = (CancellationToken::new(), CancellationToken::new());
                    let request =
                        HookRequest::new(HookStage::ToolCall, "{}".into(), cancel, run_cancel, 1, Arc::default());
                    assert!(matches!(hook.decide(request).await, Ok(HookDecision::Continue)));
                }
            });
            let mut polls = 0;
            std::future::poll_fn(|cx| {
                polls += 1;
                consulting.as_mut().poll(cx).map(|()| polls)
            })
            .await
        });
        assert_eq!(polls, 1, "the consultations made the run yield");
    }
}
