//! A full agent run per HTTP provider, driven through the C ABI with a host tool
//! written against it (an `extern "C"` callback), against a local server.

use std::ffi::{c_char, c_void};
use std::sync::Mutex;

use crate::common::server::{MockServer, Reply};
use crate::common::wire::{self, base_url, PROVIDERS};
use crate::common::{TEST_KEY, TEST_KEY_ENV};
use ferrule::ffi::*;
use serde_json::{json, Value};

unsafe extern "C" fn lookup(_user_data: *mut c_void, call: *mut ferrule_tool_call) {
    let arguments = ferrule_tool_call_arguments(call);
    let arguments = std::slice::from_raw_parts(arguments.ptr.cast::<u8>(), arguments.len);
    let arguments: Value = serde_json::from_slice(arguments).unwrap();
    let result =
        json!({"content": format!("plan for {}: Gold", arguments["customer_id"].as_str().unwrap())}).to_string();
    let error = ferrule_tool_call_complete(call, result.as_ptr().cast(), result.len());
    assert!(error.is_null());
}

unsafe extern "C" fn collect(user_data: *mut c_void, json: *const c_char, len: usize) {
    let events = &*(user_data as *const Mutex<Vec<String>>);
    let text = std::str::from_utf8(std::slice::from_raw_parts(json.cast::<u8>(), len)).unwrap();
    events.lock().unwrap().push(text.to_owned());
}

unsafe extern "C" fn free_events(user_data: *mut c_void) {
    drop(Box::from_raw(user_data as *mut Mutex<Vec<String>>));
}

fn check(error: *mut ferrule_error) {
    if !error.is_null() {
        let message = unsafe { ferrule_error_message(error) };
        let text = unsafe { std::slice::from_raw_parts(message.ptr.cast::<u8>(), message.len) };
        panic!("ferrule error: {}", String::from_utf8_lossy(text));
    }
}

fn run_through_the_c_abi(provider: &str) {
    std::env::set_var(TEST_KEY_ENV, TEST_KEY);
    let server = MockServer::start(vec![
        Reply::sse(&wire::stream(provider, "Let me look.", &[("call_1", "lookup", r#"{"customer_id":"C-100"}"#)])),
        Reply::sse(&wire::stream(provider, "C-100 is on Gold.", &[])),
    ]);
    let config =
        json!({"model": {"provider": provider, "name": "test-model", "base_url": base_url(provider, server.url()),
                                  "api_key_env": TEST_KEY_ENV}})
        .to_string();
    let schema = r#"{"type":"object","properties":{"customer_id":{"type":"string"}},"required":["customer_id"]}"#;
    unsafe {
        let mut builder = std::ptr::null_mut();
        check(ferrule_agent_builder_new(config.as_ptr().cast(), config.len(), &mut builder));
        let spec = ferrule_tool_spec {
            struct_size: std::mem::size_of::<ferrule_tool_spec>() as u32,
            name: c"lookup".as_ptr(),
            name_len: 6,
            description: c"Plan of a customer.".as_ptr(),
            description_len: 19,
            input_schema: schema.as_ptr().cast(),
            input_schema_len: schema.len(),
            options: std::ptr::null(),
            options_len: 0,
            execute: Some(lookup),
            user_data: std::ptr::null_mut(),
            free_user_data: None,
        };
        check(ferrule_agent_builder_add_tool(builder, &spec));
        let mut agent = std::ptr::null_mut();
        check(ferrule_agent_build(builder, &mut agent));

        let events = Box::into_raw(Box::new(Mutex::new(Vec::<String>::new())));
        let input = r#"{"prompt": "Which plan is C-100 on?"}"#;
        let mut run = std::ptr::null_mut();
        check(ferrule_agent_start(
            agent,
            input.as_ptr().cast(),
            input.len(),
            Some(collect),
            events.cast(),
            None,
            &mut run,
        ));
        let mut result: *mut c_char = std::ptr::null_mut();
        let mut len = 0;
        check(ferrule_run_wait(run, &mut result, &mut len));
        let text = std::str::from_utf8(std::slice::from_raw_parts(result.cast::<u8>(), len)).unwrap().to_owned();
        let seen: Vec<String> = (*events).lock().unwrap().clone();
        ferrule_string_free(result);
        ferrule_run_free(run);
        ferrule_agent_free(agent);
        free_events(events.cast());

        let result: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(result["status"], "completed", "{provider}: {text}");
        assert_eq!(result["rounds"], 2);
        assert_eq!(result["messages"][2]["content"][0]["text"], "plan for C-100: Gold", "{provider}");
        assert_eq!(result["final"]["content"][0]["text"], "C-100 is on Gold.", "{provider}");
        assert!(seen.first().unwrap().contains("\"run_start\""));
        assert!(seen.last().unwrap().contains("\"run_end\""));
        assert!(seen.iter().any(|e| e.contains("\"tool_execution_end\"") && e.contains("Gold")));
        assert!(!seen.concat().contains(TEST_KEY));
    }
    let second = server.requests()[1].json().to_string();
    assert!(second.contains("plan for C-100: Gold"), "{provider}: the tool result went back to the model");
}

#[test]
fn a_full_run_per_provider_through_the_c_abi() {
    for provider in PROVIDERS {
        run_through_the_c_abi(provider);
    }
}
