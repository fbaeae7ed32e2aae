//! Every JSON document a host gives ferrule refuses a key named twice in one
//! object, at any depth, with INVALID_ARG naming the key (a reader that keeps
//! the first of two and one that keeps the last would otherwise act on different
//! values), and text that is not JSON with INVALID_JSON.

use std::ffi::c_void;

use ferrule::agent::{AgentBuilder, RunInput};
use ferrule::ffi::*;
use ferrule::hook::{HookDecision, HookStage};
use ferrule::tool::{ToolOptions, ToolResult};
use ferrule::ErrorCode;

use crate::common::taken;

fn assert_repeated_key(what: &str, error: Option<(u32, String)>, key: &str) {
    let (code, message) = error.unwrap_or_else(|| panic!("{what}: a repeated key was taken"));
    assert_eq!(code, ErrorCode::InvalidArg as u32, "{what}: {message}");
    assert!(message.contains(&format!("\"{key}\" appears twice")), "{what}: {message}");
}

fn builder(config: &str) -> Result<*mut ferrule_agent_builder, Option<(u32, String)>> {
    let mut builder = std::ptr::null_mut();
    match taken(unsafe { ferrule_agent_builder_new(config.as_ptr().cast(), config.len(), &mut builder) }) {
        None => Ok(builder),
        error => Err(error),
    }
}

const CONFIG: &str = r#"{"model": {"provider": "scripted"}}"#;

unsafe extern "C" fn never_called(_: *mut c_void, _: *mut ferrule_tool_call) {}
unsafe extern "C" fn never_consulted(_: *mut c_void, _: *mut ferrule_hook) {}

#[test]
fn the_agent_configuration_refuses_a_repeated_key_at_any_depth() {
    for (config, key) in [
        (r#"{"model": {"provider": "scripted"}, "max_rounds": 5, "max_rounds": 1}"#, "max_rounds"),
        (r#"{"model": {"provider": "scripted", "provider": "openai"}}"#, "provider"),
        (r#"{"model": {"provider": "scripted", "script": [{"text": "a", "text": "b"}]}}"#, "text"),
        (r#"{"model": {"provider": "scripted"}, "builtin_tools": {"confine": true, "confine": false}}"#, "confine"),
    ] {
        assert_repeated_key(config, builder(config).err().flatten(), key);
        assert_repeated_key(config, AgentBuilder::from_json(config).err().map(|e| (e.code as u32, e.message)), key);
    }
    let error = builder(r#"{"model": {"provider": "scripted"}"#).err().flatten().unwrap();
    assert_eq!(error.0, ErrorCode::InvalidJson as u32);
}

#[test]
fn tool_options_and_input_schemas_refuse_a_repeated_key() {
    let options = r#"{"timeout_ms": 10, "timeout_ms": 0}"#;
    let error = ToolOptions::from_json(options).unwrap_err();
    assert_repeated_key("options", Some((error.code as u32, error.message)), "timeout_ms");
    let schema = r#"{"type": "object", "properties": {"path": {"enum": ["a"]}, "path": {}}}"#;
    for (schema, options, key) in [(schema, "", "path"), ("", options, "timeout_ms")] {
        let builder = builder(CONFIG).unwrap();
        let spec = ferrule_tool_spec {
            struct_size: std::mem::size_of::<ferrule_tool_spec>() as u32,
            name: c"open".as_ptr(),
            name_len: 4,
            description: c"".as_ptr(),
            description_len: 0,
            input_schema: schema.as_ptr().cast(),
            input_schema_len: schema.len(),
            options: options.as_ptr().cast(),
            options_len: options.len(),
            execute: Some(never_called),
            user_data: std::ptr::null_mut(),
            free_user_data: None,
        };
        assert_repeated_key(schema, taken(unsafe { ferrule_agent_builder_add_tool(builder, &spec) }), key);
        unsafe { ferrule_agent_builder_free(builder) };
    }
}

#[test]
fn hook_stages_and_decisions_refuse_a_repeated_key() {
    let stages = r#"{"stages": ["tool_call"], "stages": ["run_start"]}"#;
    let builder = builder(CONFIG).unwrap();
    let added = unsafe {
        ferrule_agent_builder_add_hook(
            builder,
            stages.as_ptr().cast(),
            stages.len(),
            Some(never_consulted),
            std::ptr::null_mut(),
            None,
        )
    };
    assert_repeated_key(stages, taken(added), "stages");
    unsafe { ferrule_agent_builder_free(builder) };
    let decision = HookDecision::from_json(HookStage::ToolCall, r#"{"arguments": {"a": 1, "a": 2}}"#).unwrap_err();
    assert_repeated_key("decision", Some((decision.code as u32, decision.message)), "a");
}

#[test]
fn run_input_tool_results_and_runtime_sizes_refuse_a_repeated_key() {
    let input = RunInput::from_json(r#"{"prompt": "a", "prompt": "b"}"#).unwrap_err();
    assert_repeated_key("input", Some((input.code as u32, input.message)), "prompt");
    let result = ToolResult::from_json(r#"{"content": "ok", "details": {"x": 1, "x": 2}}"#).unwrap_err();
    assert_repeated_key("result", Some((result.code as u32, result.message)), "x");
    // Refused before anything is configured, so the runtime stays as it was.
    let sizes = r#"{"worker_threads": 2, "worker_threads": 64}"#;
    assert_repeated_key(
        sizes,
        taken(unsafe { ferrule_runtime_configure(sizes.as_ptr().cast(), sizes.len()) }),
        "worker_threads",
    );
}
