//! Agent builders and agents.

use std::ffi::{c_char, c_void};

use serde_json::Value;

use super::boundary::{
    arg_mut, arg_opt, arg_ref, arg_str, arg_take, check_struct_size, free_box, give_box, guard, guard_or, null_arg,
};
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, ForeignData};
use super::run::{ferrule_event_fn, ferrule_run, ForeignEventSink};
use super::string::give_json;
use super::tool::{ferrule_tool_spec, ForeignTool};
use crate::agent::{Agent, AgentBuilder, EventSink, RunInput};
use crate::error::{Error, Result};
use crate::provider::UnusedRecordings;
use crate::tool::{ToolOptions, ToolSpec};

/// Collects an agent's configuration and tools. Owned by the host; not for use
/// from two threads at once. Consumed by `ferrule_agent_build`.
pub struct ferrule_agent_builder {
    pub(super) inner: AgentBuilder,
}

/// A built agent: immutable and shared. Every handle (from `_build` or `_clone`)
/// is freed with `ferrule_agent_free`; runs keep the agent alive on their own.
/// Any thread.
pub struct ferrule_agent {
    pub(super) inner: Agent,
}

/// Creates a builder from the agent configuration JSON (`model`,
/// `system`, `tool_execution`, `tool_choice`, `max_rounds`, ...). Unknown fields
/// and keys given twice in one object are `FERRULE_ERROR_INVALID_ARG` naming the
/// field; text that is not JSON is `FERRULE_ERROR_INVALID_JSON`. On success `*out` owns a new builder.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_builder_new(
    config_json: *const c_char,
    len: usize,
    out: *mut *mut ferrule_agent_builder,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a writable out-parameter and `len` readable bytes.
        let out = unsafe { arg_mut(out, "out") }?;
        let json = unsafe { arg_str(config_json, len, "config_json") }?;
        let inner = AgentBuilder::from_json(json)?;
        *out = give_box(ferrule_agent_builder { inner });
        Ok(())
    })
}

/// Adds a host tool. Checks the name, compiles the schema
/// (`FERRULE_ERROR_INVALID_SCHEMA`), parses the options, and refuses a second tool
/// of the same name (`FERRULE_ERROR_DUPLICATE_TOOL`). On success the builder owns
/// `spec->user_data` (freed with `spec->free_user_data` once the agent and all its
/// runs are gone); on error the host still owns it. `spec` is only read during
/// the call.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_builder_add_tool(
    builder: *mut ferrule_agent_builder,
    spec: *const ferrule_tool_spec,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live builder and spec (or NULL).
        let builder = unsafe { arg_mut(builder, "builder") }?;
        let spec = unsafe { arg_ref(spec, "spec") }?;
        // SAFETY: `spec` is live; its strings are `(ptr, len)` pairs.
        let tool = unsafe { tool_spec(spec) }?;
        builder.inner.check_unique(tool.name())?;
        let execute = spec.execute.ok_or_else(|| null_arg("spec->execute"))?;
        // Everything is checked: from here on the user data belongs to ferrule.
        let user_data = ForeignData::new(spec.user_data, spec.free_user_data);
        let function = ForeignTool::new(execute, user_data, tool.options().nonblocking);
        builder.inner.add_tool(tool.implement(function))
    })
}

unsafe fn tool_spec(spec: &ferrule_tool_spec) -> Result<ToolSpec> {
    check_struct_size::<ferrule_tool_spec>(spec.struct_size, "ferrule_tool_spec")?;
    // SAFETY: the caller guarantees each `(ptr, len)` pair is readable.
    let name = unsafe { arg_str(spec.name, spec.name_len, "spec->name") }?;
    let description = unsafe { arg_str(spec.description, spec.description_len, "spec->description") }?;
    let schema_json = unsafe { arg_str(spec.input_schema, spec.input_schema_len, "spec->input_schema") }?;
    let options_json = unsafe { arg_str(spec.options, spec.options_len, "spec->options") }?;
    let schema: Value = if schema_json.trim().is_empty() {
        serde_json::json!({"type": "object"})
    } else {
        crate::json::parse_document(&format!("tool \"{name}\": input schema"), schema_json)?
    };
    let options = ToolOptions::from_json(options_json)
        .map_err(|e| Error::new(e.code, format!("tool \"{name}\": {}", e.message)))?;
    ToolSpec::new(name, description, schema, options)
}

/// Builds the agent. Consumes `builder`, also on error. On success `*out` owns a
/// new agent handle.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_build(
    builder: *mut ferrule_agent_builder,
    out: *mut *mut ferrule_agent,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host hands over a live builder (or NULL) and a writable
        // out-parameter. The builder is taken first, so it is consumed on error too.
        let builder = unsafe { arg_take(builder, "builder") };
        let out = unsafe { arg_mut(out, "out") }?;
        let inner = builder?.inner.build()?;
        *out = give_box(ferrule_agent { inner });
        Ok(())
    })
}

/// Frees a builder that was not built (with its tools and their user data, freed
/// on this thread). NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_builder_free(builder: *mut ferrule_agent_builder) {
    // SAFETY: the host passes NULL or a builder from ferrule, once.
    guard_or((), || unsafe { free_box(builder) })
}

/// A new handle on the same agent, freed separately with `ferrule_agent_free`.
/// NULL for NULL. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_clone(agent: *const ferrule_agent) -> *mut ferrule_agent {
    guard_or(std::ptr::null_mut(), || {
        // SAFETY: the host passes NULL or a live agent.
        unsafe { arg_opt(agent) }
            .map_or(std::ptr::null_mut(), |agent| give_box(ferrule_agent { inner: agent.inner.clone() }))
    })
}

/// Frees one agent handle. Runs already started go on. The tools' user data is
/// freed when the last handle and the last run are gone and no callback of the
/// tool is still running: inside this call when it frees the last handle and
/// nothing else holds the agent, otherwise on a ferrule callback thread after the
/// last run's `run_end`, before that run's `ferrule_run_wait` returns. A run
/// ends only once the callbacks that answered its requests have returned, so
/// after its wait nothing of it holds the user data. A callback that had not
/// answered when its run stopped waiting (its call timed out or was cancelled)
/// keeps its tool's user data until it returns. Called on a runtime thread (inside a `nonblocking`
/// tool's callback), the frees run on a callback thread instead, soon after. NULL
/// is a no-op. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_free(agent: *mut ferrule_agent) {
    // SAFETY: the host passes NULL or an agent handle from ferrule, once.
    guard_or((), || unsafe { free_box(agent) })
}

/// Writes the exchanges of the cassette the agent's model replays
/// (`model.record` in `replay` or `replay_or_record` mode) that none of its
/// requests has used so far: `{"unused": [{"index": 3, "method": "POST",
/// "path": "/v1/chat/completions"}]}` (`index` counts from 1, in cassette
/// order), to `*unused_json` / `*len`, owned by the host (free with
/// `ferrule_string_free`). Read once the runs are over, it says what a replay
/// left out. `FERRULE_ERROR_INVALID_ARG` when the model replays no cassette.
/// Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_unused_recordings(
    agent: *const ferrule_agent,
    unused_json: *mut *mut c_char,
    len: *mut usize,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live agent and writable out-parameters (or NULL).
        let agent = unsafe { arg_ref(agent, "agent") }?;
        let unused_json = unsafe { arg_mut(unused_json, "unused_json") }?;
        let len = unsafe { arg_mut(len, "len") }?;
        let unused = agent.inner.unused_recordings().ok_or_else(|| {
            Error::invalid_arg(
                "the agent's model replays no cassette (model.record with mode replay or replay_or_record)",
            )
        })?;
        give_json(&UnusedRecordings { unused }, "the unused recordings", unused_json, len)
    })
}

/// Starts a run from `{"prompt": "..."}`, `{"messages": [...]}`, an execute-only
/// `{"execute": {...}, "messages": [...]}`, or `{"resume": <state>, "decisions":
/// {"<call id>": {"approve": bool, "message"?, "always"?}}}` (an interrupted run's
/// state; `FERRULE_ERROR_INVALID_ARG` naming the call id, version or tool when it
/// does not fit this agent or the decisions). Events go to
/// `on_event(user_data, json, len)` one at a time, in order, on one of ferrule's
/// event threads (`json` is borrowed for the call and NUL-terminated; with run
/// input `"event_bursts": true`, a JSON list of the events queued by then); `run_end`
/// is always the last, and `free_user_data(user_data)` runs once right after it,
/// on the same thread, before `ferrule_run_wait` returns. `on_event` may be NULL
/// (no events); then `free_user_data(user_data)` runs before this returns (soon
/// after, on a callback thread, when called inside a `nonblocking` tool's
/// callback).
///
/// On success `*out` owns a run handle and ferrule owns `user_data`; on any error
/// the host still owns it. `FERRULE_ERROR_RESOURCE_EXHAUSTED` when the runtime
/// cannot start its threads (a later call tries again). Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_start(
    agent: *const ferrule_agent,
    input_json: *const c_char,
    len: usize,
    on_event: ferrule_event_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
    out: *mut *mut ferrule_run,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes live pointers (or NULL) and `len` readable bytes.
        let agent = unsafe { arg_ref(agent, "agent") }?;
        let out = unsafe { arg_mut(out, "out") }?;
        let json = unsafe { arg_str(input_json, len, "input_json") }?;
        let input = RunInput::from_json(json)?;
        let bursts = input.event_bursts;
        let origin = agent.inner.begin(input)?;
        let threads = crate::runtime::threads()?;
        // Nothing can fail from here on: the user data belongs to ferrule.
        let user_data = ForeignData::new(user_data, free_user_data);
        let sink = match on_event {
            Some(on_event) => Some(Box::new(ForeignEventSink::new(on_event, user_data, bursts)) as Box<dyn EventSink>),
            None => {
                drop(user_data);
                None
            }
        };
        *out = ferrule_run::new(origin.start_on(threads, sink));
        Ok(())
    })
}
