//! Host tools: `ferrule_tool_spec` and the adapter that runs a C callback as a
//! [`ToolFunction`].

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::host_request::{self, Handle};
use super::tool_call::{self, ferrule_tool_call, ForeignCall};
use crate::tool::{Invocation, ToolFunction, ToolOutcome};
use crate::BoxFuture;
use futures_util::FutureExt;

/// A host tool's function. It must eventually call exactly one of
/// `ferrule_tool_call_complete` or `ferrule_tool_call_fail` on `call`, before it
/// returns or later from any thread. The run goes on as soon as the call is
/// answered; a function that answers and goes on running holds up only the
/// run's end (its `ferrule_run_wait`) until it returns. It runs on one of ferrule's tool callback
/// threads, where it may block (a blocked tool slows only its own run), unless
/// the tool's options say `"nonblocking": true`: then it runs on ferrule's runtime
/// and must return at once, handing the work to a thread, goroutine or task of
/// the host's.
pub type ferrule_tool_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, call: *mut ferrule_tool_call)>;

/// Describes a host tool to `ferrule_agent_builder_add_tool`. Strings are
/// `(ptr, len)` UTF-8, copied during the call.
#[repr(C)]
pub struct ferrule_tool_spec {
    /// `sizeof(ferrule_tool_spec)`.
    pub struct_size: u32,
    /// The tool name: 1 to 64 characters of `A-Z a-z 0-9 _ -`.
    pub name: *const c_char,
    /// Length of `name` in bytes.
    pub name_len: usize,
    /// What the tool does, for the model.
    pub description: *const c_char,
    /// Length of `description` in bytes.
    pub description_len: usize,
    /// The input schema (JSON Schema 2020-12); empty means any object.
    pub input_schema: *const c_char,
    /// Length of `input_schema` in bytes.
    pub input_schema_len: usize,
    /// Options JSON (`execution`, `timeout_ms`, `deferred`, `strict`,
    /// `nonblocking`, `on_error`) or empty.
    pub options: *const c_char,
    /// Length of `options` in bytes.
    pub options_len: usize,
    /// The function; must not be NULL.
    pub execute: ferrule_tool_fn,
    /// Passed to `execute`; may be NULL.
    pub user_data: *mut c_void,
    /// Frees `user_data` once the agent, every run of it and every running
    /// callback of the tool are gone (see `ferrule_agent_free`); may be NULL.
    pub free_user_data: ferrule_free_fn,
}

/// Runs a host tool's callback and resolves when the host completes the call.
/// A blocking tool's callback runs on a tool callback thread; a `nonblocking`
/// one's runs at once on the run's own thread, with no hand-off.
pub(crate) struct ForeignTool {
    callback: Arc<ForeignCallback>,
    nonblocking: bool,
}

struct ForeignCallback {
    execute: unsafe extern "C" fn(*mut c_void, *mut ferrule_tool_call),
    user_data: ForeignData,
}

impl ForeignCallback {
    fn deliver(&self, call: Handle<ForeignCall>) {
        // SAFETY: the host's function gets its own user data and a live call handle.
        unsafe { (self.execute)(self.user_data.data, call.as_ptr()) }
    }
}

impl ForeignTool {
    pub(crate) fn new(
        execute: unsafe extern "C" fn(*mut c_void, *mut ferrule_tool_call),
        user_data: ForeignData,
        nonblocking: bool,
    ) -> Self {
        ForeignTool { callback: Arc::new(ForeignCallback { execute, user_data }), nonblocking }
    }
}

impl ToolFunction for ForeignTool {
    fn invoke(&self, invocation: Invocation) -> BoxFuture<'static, ToolOutcome> {
        let Some((ticket, pending)) = tool_call::begin(invocation) else {
            return Box::pin(std::future::ready(ToolOutcome::Failed(
                "Too many tool calls are in progress in this process; try again later.".to_owned(),
            )));
        };
        let pending = pending.map(|outcome| outcome.unwrap_or_else(tool_call::unanswered));
        if self.nonblocking {
            ticket.hand_over(|call| self.callback.deliver(call));
            return Box::pin(pending);
        }
        let threads = match crate::runtime::threads() {
            Ok(threads) => threads,
            Err(error) => return Box::pin(std::future::ready(ToolOutcome::Failed(error.message))),
        };
        host_request::run_on_pool(threads.tool_callbacks, self.callback.clone(), ticket, ForeignCallback::deliver);
        Box::pin(pending)
    }
}
