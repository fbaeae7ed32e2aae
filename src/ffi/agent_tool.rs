//! Agents added to another agent's builder: `ferrule_agent_tool_spec` and
//! `ferrule_agent_builder_add_agent`.

use std::ffi::c_char;

use serde_json::Value;

use super::agent::{ferrule_agent, ferrule_agent_builder};
use super::boundary::{arg_mut, arg_ref, arg_str, check_struct_size, guard};
use super::error::ferrule_error;
use crate::agent::{AgentToolMode, AgentToolOptions, AgentToolSpec};
use crate::error::{Error, Result};

/// Describes an agent to `ferrule_agent_builder_add_agent`. Strings are
/// `(ptr, len)` UTF-8, copied during the call.
#[repr(C)]
pub struct ferrule_agent_tool_spec {
    /// `sizeof(ferrule_agent_tool_spec)`.
    pub struct_size: u32,
    /// The name the calling model knows the agent by: the tool's name, or
    /// after `transfer_to_` for a handoff (1 to 64 characters of
    /// `A-Z a-z 0-9 _ -` in all).
    pub name: *const c_char,
    /// Length of `name` in bytes.
    pub name_len: usize,
    /// What the agent does, for the calling model.
    pub description: *const c_char,
    /// Length of `description` in bytes.
    pub description_len: usize,
    /// The agent; the builder takes a handle of its own, so the host may free
    /// this one at once. Must not be NULL.
    pub agent: *const ferrule_agent,
    /// The input schema (JSON Schema 2020-12); empty means `{"input":
    /// string}`, the string being the nested run's prompt (with a schema, the
    /// arguments as JSON text are the prompt).
    pub input_schema: *const c_char,
    /// Length of `input_schema` in bytes.
    pub input_schema_len: usize,
    /// `"tool"` (or empty) or `"handoff"`.
    pub mode: *const c_char,
    /// Length of `mode` in bytes.
    pub mode_len: usize,
    /// Options JSON (`timeout_ms`, `needs_approval`, `handoff_messages`:
    /// `"all"` or `"without_tool_calls"`) or empty.
    pub options: *const c_char,
    /// Length of `options` in bytes.
    pub options_len: usize,
}

/// Adds a built agent the model is offered: as a tool whose calls run it
/// nested in the calling run (its events arrive as `agent_event`s, its tokens
/// count in the call's and the run's usage, cancelling the run cancels it), or
/// as a handoff, the tool `transfer_to_<name>`, after which the run goes on
/// with that agent. The name, schema and options are checked as a tool's
/// (`FERRULE_ERROR_INVALID_ARG`, `_INVALID_SCHEMA`, `_DUPLICATE_TOOL`);
/// `FERRULE_ERROR_RESOURCE_EXHAUSTED` when agents would nest more than 8 deep.
/// `spec` is only read during the call. Not for use on one builder from two
/// threads at once.
#[no_mangle]
pub unsafe extern "C" fn ferrule_agent_builder_add_agent(
    builder: *mut ferrule_agent_builder,
    spec: *const ferrule_agent_tool_spec,
) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes a live builder and spec (or NULL).
        let builder = unsafe { arg_mut(builder, "builder") }?;
        let spec = unsafe { arg_ref(spec, "spec") }?;
        // SAFETY: `spec` is live; its strings are `(ptr, len)` pairs and its
        // agent a live handle (or NULL).
        let spec = unsafe { agent_tool_spec(spec) }?;
        builder.inner.add_agent(spec)
    })
}

unsafe fn agent_tool_spec(spec: &ferrule_agent_tool_spec) -> Result<AgentToolSpec> {
    check_struct_size::<ferrule_agent_tool_spec>(spec.struct_size, "ferrule_agent_tool_spec")?;
    // SAFETY: the caller guarantees each `(ptr, len)` pair is readable and the
    // agent live.
    let name = unsafe { arg_str(spec.name, spec.name_len, "spec->name") }?;
    let description = unsafe { arg_str(spec.description, spec.description_len, "spec->description") }?;
    let agent = unsafe { arg_ref(spec.agent, "spec->agent") }?;
    let schema_json = unsafe { arg_str(spec.input_schema, spec.input_schema_len, "spec->input_schema") }?;
    let mode = unsafe { arg_str(spec.mode, spec.mode_len, "spec->mode") }?;
    let options_json = unsafe { arg_str(spec.options, spec.options_len, "spec->options") }?;
    let input_schema: Option<Value> = match schema_json.trim() {
        "" => None,
        _ => Some(crate::json::parse_document(&format!("agent \"{name}\": input schema"), schema_json)?),
    };
    let mode = match mode.trim() {
        "" | "tool" => AgentToolMode::Tool,
        "handoff" => AgentToolMode::Handoff,
        other => {
            return Err(Error::invalid_arg(format!(
                "agent \"{name}\": mode must be \"tool\" or \"handoff\", not {other:?}"
            )))
        }
    };
    let options = AgentToolOptions::from_json(options_json)
        .map_err(|e| Error::new(e.code, format!("agent \"{name}\": {}", e.message)))?;
    Ok(AgentToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        agent: agent.inner.clone(),
        input_schema,
        mode,
        options,
    })
}
