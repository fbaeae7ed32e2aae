//! Host models: `ferrule_model_spec`, `ferrule_agent_builder_set_model`, and
//! the adapter that runs a C callback as a [`Generator`].

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::agent::ferrule_agent_builder;
use super::boundary::{arg_mut, arg_ref, arg_str, check_struct_size, guard, null_arg};
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::host_request::{self, Handle};
use super::model_request::{self, ferrule_model_request, ForeignModelRequest, RequestStrings};
use crate::error::{Error, ErrorCode};
use crate::message::AssistantMessage;
use crate::provider::host::{self, HostReply, HostSettings};
use crate::provider::http::RetryPolicy;
use crate::provider::{DeltaSink, GenerationRequest, Generator, WireCache};
use crate::BoxFuture;

/// A host model's function. It must eventually call exactly one of
/// `ferrule_model_request_complete` or `ferrule_model_request_fail` on
/// `request`, before it returns or later from any thread, after streaming the
/// answer with the `_delta` functions (from any thread). It runs on one of
/// ferrule's tool callback threads, where it may block, unless the spec says
/// `nonblocking`: then it runs on ferrule's runtime and must return at once,
/// handing the work to a thread of the host's. A blocking function that answers
/// and goes on running holds up only the run's end (its `ferrule_run_wait`)
/// until it returns.
pub type ferrule_model_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, request: *mut ferrule_model_request)>;

/// Describes a host model to `ferrule_agent_builder_set_model`. Strings are
/// `(ptr, len)` UTF-8, copied during the call.
#[repr(C)]
pub struct ferrule_model_spec {
    /// `sizeof(ferrule_model_spec)`.
    pub struct_size: u32,
    /// The model's name: the configuration's `model.name`.
    pub name: *const c_char,
    /// Length of `name` in bytes.
    pub name_len: usize,
    /// The function; must not be NULL.
    pub generate: ferrule_model_fn,
    /// Passed to `generate`; may be NULL.
    pub user_data: *mut c_void,
    /// Frees `user_data` once the agent, every run of it, every running
    /// callback of the model and every request the host has not answered yet
    /// are gone; may be NULL. It never runs inside a `ferrule_model_request_*`
    /// call: when the host's answer lets go of the last hold, it runs on a
    /// ferrule callback thread.
    pub free_user_data: ferrule_free_fn,
    /// `generate` returns at once (see `ferrule_model_fn`).
    pub nonblocking: bool,
}

/// Sets the agent's model to the host's: the configuration must say `"model":
/// {"provider": "host", "name": <spec->name>}` (`FERRULE_ERROR_INVALID_ARG`
/// otherwise, and for a second model). Everything after the model (call
/// validation, approvals, hooks, events, retries before any output, the
/// configuration's `max_tokens`, `max_retries` and `retry_backoff_ms`) is as
/// for a built-in provider. On success the builder owns `spec->user_data`; on
/// error the host still owns it. `spec` is only read during the call.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_builder_set_model(
    builder: *mut ferrule_agent_builder,
    spec: *const ferrule_model_spec,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live builder and spec (or NULL).
        let builder = unsafe { arg_mut(builder, "builder") }?;
        let spec = unsafe { arg_ref(spec, "spec") }?;
        check_struct_size::<ferrule_model_spec>(spec.struct_size, "ferrule_model_spec")?;
        // SAFETY: `spec` is live; its name is a `(ptr, len)` pair.
        let name = unsafe { arg_str(spec.name, spec.name_len, "spec->name") }?;
        let generate = spec.generate.ok_or_else(|| null_arg("spec->generate"))?;
        let config = builder.inner.model_config();
        let settings =
            HostSettings { name: name.to_owned(), max_tokens: config.max_tokens, retries: RetryPolicy::new(config) };
        builder.inner.check_host_model(name)?;
        // Everything is checked: from here on the user data belongs to ferrule.
        let user_data = ForeignData::new(spec.user_data, spec.free_user_data);
        let callback = ForeignModelCallback { generate, user_data };
        let model = ForeignModel { callback: Arc::new(callback), nonblocking: spec.nonblocking, settings };
        builder.inner.host_model(name, Box::new(model))
    })
}

/// Runs a host model's callback; its answer comes through the request handle.
struct ForeignModel {
    callback: Arc<ForeignModelCallback>,
    nonblocking: bool,
    settings: HostSettings,
}

struct ForeignModelCallback {
    generate: unsafe extern "C" fn(*mut c_void, *mut ferrule_model_request),
    user_data: ForeignData,
}

impl ForeignModelCallback {
    fn deliver(&self, request: Handle<ForeignModelRequest>) {
        // SAFETY: the host's function gets its own user data and a live request handle.
        unsafe { (self.generate)(self.user_data.data, request.as_ptr()) }
    }
}

impl ForeignModel {
    /// One attempt: the request handed to the host, its answer forwarded.
    async fn attempt(
        &self,
        json: &Arc<RequestStrings>,
        run_serial: u64,
        deltas: &mut dyn DeltaSink,
    ) -> (Result<AssistantMessage, host::HostFailure>, bool) {
        let reply = Arc::new(HostReply::default());
        let model: Arc<dyn Send + Sync> = self.callback.clone();
        let Some((ticket, pending)) = model_request::begin(json.clone(), reply.clone(), model, run_serial) else {
            let error =
                Error::new(ErrorCode::ResourceExhausted, "too many model requests are in progress in this process");
            return (Err(host::HostFailure { error, retryable: false }), false);
        };
        if self.nonblocking {
            ticket.hand_over(|request| self.callback.deliver(request));
        } else {
            match crate::runtime::threads() {
                Ok(threads) => {
                    let (pool, callback) = (threads.tool_callbacks, self.callback.clone());
                    host_request::run_on_pool(pool, callback, ticket, ForeignModelCallback::deliver);
                }
                Err(error) => return (Err(host::HostFailure { error, retryable: false }), false),
            }
        }
        let outcome = host::receive(&reply, pending, deltas).await;
        (outcome, reply.has_streamed())
    }
}

impl Generator for ForeignModel {
    fn generate<'a>(
        &'a self,
        request: GenerationRequest<'a>,
        wire: &'a mut WireCache,
        deltas: &'a mut dyn DeltaSink,
    ) -> BoxFuture<'a, Result<AssistantMessage, Error>> {
        Box::pin(async move {
            let json = Arc::new(RequestStrings::new(host::request_json(&self.settings, &request, wire)?));
            let mut attempt = 1;
            loop {
                let (outcome, streamed) = self.attempt(&json, request.run_serial, deltas).await;
                let failure = match outcome {
                    Ok(message) => return Ok(message),
                    Err(failure) => failure,
                };
                if streamed
                    || !failure.retryable
                    || !self.settings.retries.again(&mut attempt, &failure.error, None, deltas).await
                {
                    return Err(failure.error);
                }
            }
        })
    }
}
