//! Host tools: `ferrule_tool_spec` and the adapter that runs a C callback as a
//! [`ToolFunction`].

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::tool_call::{ferrule_tool_call, CallHandle};
use crate::agent::CallbackScope;
use crate::tool::{Invocation, ToolFunction, ToolOutcome};
use crate::BoxFuture;

/// A host tool's function. Runs on ferrule's blocking pool (never a runtime worker),
/// so it may block. It must eventually call exactly one of
/// `ferrule_tool_call_complete` or `ferrule_tool_call_fail` on `call`, before it
/// returns or later from any thread.
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
    /// `on_error`) or empty.
    pub options: *const c_char,
    /// Length of `options` in bytes.
    pub options_len: usize,
    /// The function; must not be NULL.
    pub execute: ferrule_tool_fn,
    /// Passed to `execute`; may be NULL.
    pub user_data: *mut c_void,
    /// Frees `user_data` once the agent (and every run of it) is gone; may be NULL.
    pub free_user_data: ferrule_free_fn,
}

/// Runs a host callback on the blocking pool and resolves when the host completes.
pub(crate) struct ForeignTool {
    callback: Arc<ForeignCallback>,
}

struct ForeignCallback {
    execute: unsafe extern "C" fn(*mut c_void, *mut ferrule_tool_call),
    user_data: ForeignData,
}

impl ForeignTool {
    pub(crate) fn new(
        execute: unsafe extern "C" fn(*mut c_void, *mut ferrule_tool_call),
        user_data: ForeignData,
    ) -> Self {
        ForeignTool { callback: Arc::new(ForeignCallback { execute, user_data }) }
    }
}

impl ToolFunction for ForeignTool {
    fn invoke(&self, invocation: Invocation) -> BoxFuture<'static, ToolOutcome> {
        let run_serial = invocation.run_serial();
        let (handle, completion) = CallHandle::new(invocation);
        let callback = self.callback.clone();
        tokio::task::spawn_blocking(move || {
            let _scope = CallbackScope::enter(run_serial);
            // SAFETY: `handle` is live: the callback frame holds one of its references.
            unsafe { (callback.execute)(callback.user_data.data, handle.as_ptr()) };
            handle.release();
        });
        Box::pin(async move {
            completion
                .await
                .unwrap_or_else(|_| ToolOutcome::Failed("The tool's call was dropped before it completed.".to_owned()))
        })
    }
}
