//! The C ABI driven as a C host drives it, small enough to run under miri
//! (`make test-miri`): every pointer ferrule hands out and takes back, the handles
//! of tool calls used after they were answered, errors read and freed.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::error::ErrorCode;

/// The error's code, its message freed with it; 0 for none.
fn code(error: *mut ferrule_error) -> u32 {
    unsafe {
        let code = ferrule_error_code(error);
        assert!(code == 0 || ferrule_error_message(error).len > 0, "an error without a message");
        ferrule_error_free(error);
        code
    }
}

fn text(value: ferrule_str) -> String {
    let bytes = unsafe { std::slice::from_raw_parts(value.ptr.cast::<u8>(), value.len) };
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Completes the call at once with its id, then tries again with the handle it
/// no longer owns: the second answer must be refused, not touch freed memory.
unsafe extern "C" fn answer_twice(user_data: *mut c_void, call: *mut ferrule_tool_call) {
    let calls = &*user_data.cast::<AtomicUsize>();
    calls.fetch_add(1, Ordering::SeqCst);
    let id = text(ferrule_tool_call_id(call));
    let result = serde_json::to_string(&format!("ran {id}")).unwrap();
    assert_eq!(code(ferrule_tool_call_complete(call, result.as_ptr().cast(), result.len())), 0);
    let again = ferrule_tool_call_complete(call, result.as_ptr().cast(), result.len());
    assert_eq!(code(again), ErrorCode::AlreadyCompleted as u32);
    assert_eq!(ferrule_tool_call_id(call).len, 0, "a stale handle reads as empty");
}

unsafe extern "C" fn free_counter(user_data: *mut c_void) {
    drop(Box::from_raw(user_data.cast::<AtomicUsize>()));
}

unsafe extern "C" fn count_event(user_data: *mut c_void, json: *const std::ffi::c_char, len: usize) {
    let bytes = std::slice::from_raw_parts(json.cast::<u8>(), len);
    assert!(serde_json::from_slice::<serde_json::Value>(bytes).is_ok(), "an event that is no JSON");
    (*user_data.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_run_with_a_host_tool_through_the_c_abi() {
    let config = r#"{"model": {"provider": "scripted", "script": [
        {"tool_calls": [{"id": "a", "name": "lookup", "arguments": "{}"}, {"id": "b", "name": "lookup", "arguments": "{}"}]},
        {"text": "done"}]}}"#;
    let mut builder = std::ptr::null_mut();
    assert_eq!(code(unsafe { ferrule_agent_builder_new(config.as_ptr().cast(), config.len(), &mut builder) }), 0);
    let calls = Box::into_raw(Box::new(AtomicUsize::new(0)));
    let spec = ferrule_tool_spec {
        struct_size: std::mem::size_of::<ferrule_tool_spec>() as u32,
        name: c"lookup".as_ptr(),
        name_len: 6,
        description: c"Looks up.".as_ptr(),
        description_len: 9,
        input_schema: c"{\"type\": \"object\"}".as_ptr(),
        input_schema_len: 18,
        options: std::ptr::null(),
        options_len: 0,
        execute: Some(answer_twice),
        user_data: calls.cast(),
        free_user_data: Some(free_counter),
    };
    assert_eq!(code(unsafe { ferrule_agent_builder_add_tool(builder, &spec) }), 0);
    let mut agent = std::ptr::null_mut();
    assert_eq!(code(unsafe { ferrule_agent_build(builder, &mut agent) }), 0);
    let events = Box::into_raw(Box::new(AtomicUsize::new(0)));
    let input = r#"{"prompt": "look both up"}"#;
    let mut run = std::ptr::null_mut();
    let started = unsafe {
        ferrule_agent_start(agent, input.as_ptr().cast(), input.len(), Some(count_event), events.cast(), None, &mut run)
    };
    assert_eq!(code(started), 0);
    let (mut result, mut len) = (std::ptr::null_mut(), 0);
    assert_eq!(code(unsafe { ferrule_run_wait(run, &mut result, &mut len) }), 0);
    let json: serde_json::Value =
        serde_json::from_slice(unsafe { std::slice::from_raw_parts(result.cast::<u8>(), len) }).unwrap();
    unsafe { ferrule_string_free(result) };
    assert_eq!(json["status"], "completed", "{json}");
    assert_eq!(unsafe { (*calls).load(Ordering::SeqCst) }, 2);
    assert!(unsafe { (*events).load(Ordering::SeqCst) } > 5, "the run's events arrived");
    unsafe {
        ferrule_run_free(run);
        ferrule_agent_free(agent);
        drop(Box::from_raw(events));
    }
}

#[test]
fn bad_arguments_are_errors_that_free_cleanly() {
    let mut builder = std::ptr::null_mut();
    let null = unsafe { ferrule_agent_builder_new(std::ptr::null(), 3, &mut builder) };
    assert_eq!(code(null), ErrorCode::NullArg as u32);
    let invalid = b"{\"model\": \xff}";
    let utf8 = unsafe { ferrule_agent_builder_new(invalid.as_ptr().cast(), invalid.len(), &mut builder) };
    assert_eq!(code(utf8), ErrorCode::InvalidUtf8 as u32);
    let repeated = r#"{"model": {"provider": "scripted"}, "model": {}}"#;
    let twice = unsafe { ferrule_agent_builder_new(repeated.as_ptr().cast(), repeated.len(), &mut builder) };
    assert_eq!(code(twice), ErrorCode::InvalidArg as u32);
    assert!(builder.is_null(), "no builder came out of a refusal");
    unsafe {
        assert_eq!(text(ferrule_error_message(std::ptr::null())), "");
        ferrule_error_free(std::ptr::null_mut());
    }
}
