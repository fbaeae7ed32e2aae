//! Steps 1 to 4 of checking a tool call, before anything runs: id and name, a
//! registered (and disclosed) tool, arguments that are a JSON object, arguments
//! that satisfy the schema. Each failure is a message written for the model.

use std::collections::HashSet;

use serde_json::Value;

use super::tool_scope::ToolScope;
use crate::json::JsonError;
use crate::message::ToolCall;
use crate::tool::{json_kind, Tool};

/// A call that passed every check.
pub(crate) struct ValidCall<'a> {
    pub(crate) tool: &'a Tool,
    pub(crate) arguments: Value,
    /// Arguments a `tool_call` hook put in place of the model's.
    pub(crate) replaced: bool,
    /// What the `tool_call` hooks said about approval.
    pub(crate) hook_approval: HookApproval,
}

/// What the `tool_call` hooks said about a call's approval.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HookApproval {
    /// Nothing: the tool's `needs_approval` decides.
    #[default]
    Unsaid,
    /// `{"approve": true}`: the call runs.
    Approved,
    /// `{"interrupt": true}`: the call needs approval.
    Interrupt,
}

/// Checks the calls of one response in call order. The first call with an id is
/// the valid one; a later call repeating it gets the error.
pub(crate) fn check_calls<'a>(scope: ToolScope<'a>, calls: &[ToolCall]) -> Vec<Result<ValidCall<'a>, String>> {
    let mut seen_ids = HashSet::with_capacity(calls.len());
    calls
        .iter()
        .map(|call| {
            let fresh_id = seen_ids.insert(call.id.as_str());
            check_call(scope, call, fresh_id)
        })
        .collect()
}

fn check_call<'a>(scope: ToolScope<'a>, call: &ToolCall, fresh_id: bool) -> Result<ValidCall<'a>, String> {
    if call.id.trim().is_empty() {
        return Err(format!("The call to \"{}\" has no id, so it was not run.", call.name));
    }
    if !fresh_id {
        return Err(format!(
            "The call id \"{}\" was already used by an earlier call in this response, so this call was not run. Give every call its own id.",
            call.id
        ));
    }
    if call.name.trim().is_empty() {
        return Err("The call has no tool name, so it was not run.".to_owned());
    }
    let Some(tool) = scope.offered_tool(&call.name) else {
        return Err(unknown_tool(scope, &call.name));
    };
    let arguments: Value = crate::json::parse_unique(&call.arguments).map_err(|e| match e {
        JsonError::Syntax(e) => {
            format!("The arguments for \"{}\" are not valid JSON ({e}); send a JSON object.", call.name)
        }
        JsonError::DuplicateKey(key) => format!(
            "The arguments for \"{}\" give the key \"{key}\" twice, so the call was not run; give each key once.",
            call.name
        ),
    })?;
    if !arguments.is_object() {
        return Err(format!(
            "The arguments for \"{}\" must be a JSON object, not {}.",
            call.name,
            json_kind(&arguments)
        ));
    }
    check_arguments(tool, &call.name, &arguments)?;
    Ok(ValidCall { tool, arguments, replaced: false, hook_approval: HookApproval::Unsaid })
}

/// Step 4: the arguments satisfy the tool's schema.
pub(crate) fn check_arguments(tool: &Tool, name: &str, arguments: &Value) -> Result<(), String> {
    tool.schema().validate(arguments).map_err(|problems| format!("Invalid arguments for \"{name}\": {problems}"))
}

fn unknown_tool(scope: ToolScope<'_>, name: &str) -> String {
    let available: Vec<&str> = scope.offered().map(|(_, tool)| tool.name()).collect();
    if available.is_empty() {
        format!("Unknown tool \"{name}\". No tools are available.")
    } else {
        format!("Unknown tool \"{name}\". Available tools: {}.", available.join(", "))
    }
}
