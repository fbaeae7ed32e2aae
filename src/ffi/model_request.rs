//! `ferrule_model_request`: one request to a host model.
//!
//! A `ferrule_model_request *` is a handle into a table of live requests, as a
//! tool call's is (see `tool_call`): `_complete` and `_fail` remove it, so from
//! then on, on every thread and however late, the handle is recognised as
//! stale: the functions that act on it return `ALREADY_COMPLETED`,
//! `_is_cancelled` returns true, and `_json` returns an empty string.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, LazyLock};

use super::boundary::{arg_str, guard};
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, releasing_later};
use super::handle_table::{HandleKind, HandleTable};
use super::host_request::{self, ferrule_cancel_fn, Answerable, Handle, HostRequest, Pending, Ticket};
use super::string::{ferrule_str, NulTerminated};
use crate::error::{Error, ErrorCode, Result};
use crate::message::{StopReason, Usage};
use crate::provider::host::{HostAnswer, HostReply, RequestJson};

/// One request to a host model: an opaque handle. See
/// `ferrule_model_request_complete` for its life.
pub struct ferrule_model_request {
    _opaque: [u8; 0],
}

/// Every request whose host has not answered it yet.
static LIVE_REQUESTS: LazyLock<HandleTable<ForeignModelRequest>> =
    LazyLock::new(|| HandleTable::new(HandleKind::ModelRequest));

/// A request as ferrule keeps it while the host answers it.
pub(crate) struct ForeignModelRequest {
    json: Arc<RequestStrings>,
    reply: Arc<HostReply>,
    request: HostRequest<HostAnswer>,
    _model: ModelHold,
}

/// The model's callback and user data, which must outlive every request the
/// host has yet to answer. The hold is let go under [`releasing_later`]: when
/// it is the last (a late answer to a request of a freed agent), the model's
/// `free_user_data` runs on a callback thread, never inside the host's
/// `ferrule_model_request_*` call, whose thread may hold what it takes.
struct ModelHold(Option<Arc<dyn Send + Sync>>);

impl Drop for ModelHold {
    fn drop(&mut self) {
        let model = self.0.take();
        releasing_later(|| drop(model));
    }
}

/// A request's JSON, as the host may read it; shared by the attempts of one
/// model request.
pub(crate) struct RequestStrings {
    full: NulTerminated,
    options: NulTerminated,
    new_messages: NulTerminated,
}

impl RequestStrings {
    pub(crate) fn new(json: RequestJson) -> Self {
        RequestStrings {
            full: NulTerminated::from_string(json.full),
            options: NulTerminated::from_string(json.options),
            new_messages: NulTerminated::from_string(json.new_messages),
        }
    }
}

impl Answerable for ForeignModelRequest {
    type Answer = HostAnswer;
    const ANSWERED: &'static str = "this model request was already completed or failed";

    fn table() -> &'static HandleTable<Self> {
        &LIVE_REQUESTS
    }

    fn request(&self) -> &HostRequest<HostAnswer> {
        &self.request
    }
}

type RequestHandle = Handle<ForeignModelRequest>;

/// A registered request not yet handed to the host.
pub(crate) type RequestTicket = Ticket<ForeignModelRequest>;
/// The runner's side of a request.
pub(crate) type PendingRequest = Pending<ForeignModelRequest>;

/// Starts a request of the run `run_serial` whose JSON is `json` and whose
/// answer streams into `reply`. `None` when the table is full.
pub(crate) fn begin(
    json: Arc<RequestStrings>,
    reply: Arc<HostReply>,
    model: Arc<dyn Send + Sync>,
    run_serial: u64,
) -> Option<(RequestTicket, PendingRequest)> {
    let (request, answer) = HostRequest::new(tokio_util::sync::CancellationToken::new(), run_serial);
    host_request::begin(ForeignModelRequest { json, reply, request, _model: ModelHold(Some(model)) }, answer)
}

/// The request as JSON: `{"model", "run_id", "turn", "system", "messages" (ferrule's
/// transcript JSON), "message_count", "first_new_message", "tools"
/// ([{"name", "description", "input_schema", "strict"}]), "tool_choice",
/// "output_schema", "max_tokens"}` (see docs/host-model.md). Borrowed from
/// `request`; valid until it is completed or failed. Empty for NULL and for a
/// request that was already answered. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_json(request: *const ferrule_model_request) -> ferrule_str {
    host_request::borrow_string::<ForeignModelRequest, _>(request, |r| r.json.full.as_ferrule_str())
}

/// The request as `ferrule_model_request_json` gives it, without `messages`:
/// small whatever the history, for a host that reads the messages apart
/// (`ferrule_model_request_new_messages_json`). Borrowed as `_json` is.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_options_json(request: *const ferrule_model_request) -> ferrule_str {
    host_request::borrow_string::<ForeignModelRequest, _>(request, |r| r.json.options.as_ferrule_str())
}

/// The messages from `first_new_message` on, as a JSON array: what the run's
/// previous request did not hold, for an engine that keeps its own cache of
/// the conversation (all of them on a run's first request, and after the
/// history budget dropped messages). Borrowed as `_json` is.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_new_messages_json(request: *const ferrule_model_request) -> ferrule_str {
    host_request::borrow_string::<ForeignModelRequest, _>(request, |r| r.json.new_messages.as_ferrule_str())
}

/// Applies one streamed piece to a live request; after the run stopped
/// waiting, the piece is dropped.
fn with_reply(request: *mut ferrule_model_request, piece: impl FnOnce(&HostReply) -> Result<()>) -> *mut ferrule_error {
    guard(|| {
        let live = RequestHandle::from_ptr(request, "request")?.live()?;
        if live.request.is_cancelled() {
            live.reply.discard();
        }
        piece(&live.reply)
    })
}

/// Takes the request out of the table for its one answer; what was streamed
/// before is all the answer holds.
fn answering(request: *mut ferrule_model_request) -> Result<Arc<ForeignModelRequest>> {
    let entry = RequestHandle::from_ptr(request, "request")?.take()?;
    entry.reply.close();
    Ok(entry)
}

/// Streams answer text. Any thread, any number of times before `_complete` or
/// `_fail`. `FERRULE_ERROR_ALREADY_COMPLETED` once the request was answered;
/// `FERRULE_ERROR_PROVIDER_MALFORMED_STREAM` when the answer grows past 64 MiB
/// (the request then fails with that error, whatever the host says next).
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_text_delta(
    request: *mut ferrule_model_request,
    text: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    // SAFETY: the host passes `len` readable bytes.
    with_reply(request, |reply| reply.text(unsafe { arg_str(text, len, "text") }?))
}

/// Streams reasoning text; as `ferrule_model_request_text_delta`.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_thinking_delta(
    request: *mut ferrule_model_request,
    text: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    // SAFETY: the host passes `len` readable bytes.
    with_reply(request, |reply| reply.thinking(unsafe { arg_str(text, len, "text") }?))
}

/// Streams a piece of the tool call at `index` (its position in the answer,
/// from 0): its id and name when this piece carries them (NULL or empty when
/// not), and more argument text. A call that never gets an id gets one made
/// up. A call of more than 4 MiB of arguments, or more than 256 calls, fail
/// the request (`FERRULE_ERROR_PROVIDER_MALFORMED_STREAM`). As
/// `ferrule_model_request_text_delta` otherwise.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_tool_call_delta(
    request: *mut ferrule_model_request,
    index: u32,
    id: *const c_char,
    id_len: usize,
    name: *const c_char,
    name_len: usize,
    arguments: *const c_char,
    arguments_len: usize,
) -> *mut ferrule_error {
    with_reply(request, |reply| {
        // SAFETY: the host passes readable `(ptr, len)` pairs.
        let (id, name, arguments) = unsafe {
            (
                arg_str(id, id_len, "id")?,
                arg_str(name, name_len, "name")?,
                arg_str(arguments, arguments_len, "arguments")?,
            )
        };
        reply.tool_call(index, (!id.is_empty()).then_some(id), (!name.is_empty()).then_some(name), arguments)
    })
}

/// Sets the answer's token counts (the last call wins). Any thread, before
/// `_complete`. `FERRULE_ERROR_ALREADY_COMPLETED` once the request was answered.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_usage(
    request: *mut ferrule_model_request,
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
) -> *mut ferrule_error {
    with_reply(request, |reply| reply.usage(Usage { input_tokens, output_tokens, cached_tokens }))
}

/// Completes the request: the answer streamed so far is the model's message.
/// `stop_reason` is `end_turn`, `tool_use`, `length` or `content_filter`, or
/// empty (or NULL with 0) for `tool_use` when calls came and `end_turn`
/// otherwise. Consumes the handle, also when `stop_reason` is not one of those
/// (then the request fails with `FERRULE_ERROR_PROVIDER_MALFORMED_STREAM` and
/// this returns `FERRULE_ERROR_INVALID_ARG`, or `_NULL_ARG` / `_INVALID_UTF8`
/// for text that cannot be read). A completion after the request
/// was cancelled is accepted and discarded. Any thread, inside the callback or
/// later. `FERRULE_ERROR_ALREADY_COMPLETED` once the request was answered.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_complete(
    request: *mut ferrule_model_request,
    stop_reason: *const c_char,
    len: usize,
) -> *mut ferrule_error {
    guard(|| {
        let entry = answering(request)?;
        // SAFETY: the host passes `len` readable bytes.
        let stop = unsafe { arg_str(stop_reason, len, "stop_reason") }.and_then(stop_reason_arg);
        match stop {
            Ok(stop) => {
                entry.request.finish(HostAnswer::Complete(stop));
                Ok(())
            }
            Err(error) => {
                let broken =
                    Error::new(ErrorCode::ProviderMalformedStream, format!("the host model: {}", error.message));
                entry.request.finish(HostAnswer::Fail { error: broken, retryable: false });
                Err(error)
            }
        }
    })
}

fn stop_reason_arg(text: &str) -> Result<Option<StopReason>> {
    Ok(Some(match text {
        "" => return Ok(None),
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "length" => StopReason::Length,
        "content_filter" => StopReason::ContentFilter,
        other => {
            return Err(Error::invalid_arg(format!(
                "stop_reason {other:?} is not end_turn, tool_use, length, content_filter or empty"
            )))
        }
    }))
}

/// Fails the request with `code` (a `FERRULE_ERROR_PROVIDER_*` code,
/// `FERRULE_ERROR_TIMEOUT` or `FERRULE_ERROR_RESOURCE_EXHAUSTED`) and `message`
/// (never put secrets in it). A `retryable` failure is asked again, as the
/// model's `max_retries` allows, when nothing had streamed yet; the run
/// announces each retry with a `retry` event. Consumes the handle, also when
/// `code` is not one of those (then the request fails with
/// `FERRULE_ERROR_PROVIDER_SERVER` and this returns
/// `FERRULE_ERROR_INVALID_ARG`). Any thread.
/// `FERRULE_ERROR_ALREADY_COMPLETED` once the request was answered. A message
/// that is not UTF-8 fails the request all the same (without it) and returns
/// `FERRULE_ERROR_INVALID_UTF8`: every call consumes the handle.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_fail(
    request: *mut ferrule_model_request,
    code: u32,
    message: *const c_char,
    len: usize,
    retryable: bool,
) -> *mut ferrule_error {
    guard(|| {
        let entry = answering(request)?;
        // SAFETY: the host passes `len` readable bytes.
        let message = unsafe { arg_str(message, len, "message") };
        let text = match &message {
            Ok(text) if !text.is_empty() => format!("the host model failed: {text}"),
            _ => "the host model failed".to_owned(),
        };
        match failure_code(code) {
            Some(code) => {
                entry.request.finish(HostAnswer::Fail { error: Error::new(code, text), retryable });
                message.map(drop)
            }
            None => {
                let error = Error::new(ErrorCode::ProviderServer, text);
                entry.request.finish(HostAnswer::Fail { error, retryable: false });
                Err(Error::invalid_arg(format!(
                    "code {code} is not a provider error code, TIMEOUT or RESOURCE_EXHAUSTED"
                )))
            }
        }
    })
}

/// The codes a host model may fail with.
fn failure_code(code: u32) -> Option<ErrorCode> {
    use ErrorCode::*;
    [
        ProviderAuth,
        ProviderInvalidRequest,
        ProviderNotFound,
        ProviderRateLimited,
        ProviderOverloaded,
        ProviderServer,
        ProviderNetwork,
        ProviderMalformedStream,
        Timeout,
        ResourceExhausted,
    ]
    .into_iter()
    .find(|known| *known as u32 == code)
}

/// Whether the request was cancelled (its run was cancelled or timed out, or
/// the run stopped waiting): what the host sends is discarded, so the model
/// should stop and fail or complete soon. True as well for a request that was
/// answered, and for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_is_cancelled(request: *const ferrule_model_request) -> bool {
    host_request::is_cancelled::<ForeignModelRequest, _>(request)
}

/// Registers a one-shot cancel handler, as `ferrule_tool_call_on_cancel` does
/// for a tool call: `on_cancel(user_data)` runs on a ferrule callback thread
/// when the request is cancelled before it is answered, or at once if that
/// already happened; the request must still be completed or failed (that
/// answer is discarded). `free_user_data(user_data)` runs once, when the
/// request has been answered and the handler, if it ran, has returned. A second
/// handler is `FERRULE_ERROR_INVALID_ARG`; `FERRULE_ERROR_NULL_ARG` for a NULL
/// `request` or `on_cancel`; `FERRULE_ERROR_ALREADY_COMPLETED` once it was
/// answered. On error the host still owns `user_data`. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_model_request_on_cancel(
    request: *mut ferrule_model_request,
    on_cancel: ferrule_cancel_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
) -> *mut ferrule_error {
    guard(|| {
        let live = RequestHandle::from_ptr(request, "request")?.live()?;
        live.request.on_cancel(on_cancel, user_data, free_user_data, ForeignModelRequest::ANSWERED, "model request")
    })
}
