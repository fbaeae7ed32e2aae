//! A small MCP server over stdio for the conformance scenarios, which every
//! runner can start (it needs nothing but itself): it answers the 2026-07-28
//! probe (`server/discover`) and, when asked first, the `initialize`
//! handshake, and offers these tools:
//!
//! - `echo {text}`: answers its text;
//! - `count {to}`: reports progress `1..=to` (`step N`), then answers;
//! - `fail {reason}`: an error result with the reason;
//! - `add {a, b}`: structured content `{"sum": a + b}` (with an output schema);
//! - `wait {ms}`: answers after `ms` milliseconds, or never once cancelled.
//!
//! It reads one JSON-RPC message per line and answers each call on a thread
//! of its own; when its stdin ends, the calls still waiting are cancelled and
//! it ends once the others answered.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// Where answers go: whole lines, one at a time.
type Out = Arc<Mutex<std::io::Stdout>>;

fn send(out: &Out, message: Value) {
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

fn tools() -> Value {
    let object =
        |properties: Value, required: Value| json!({"type": "object", "properties": properties, "required": required});
    json!([
        {"name": "echo", "description": "Answers its text.",
         "inputSchema": object(json!({"text": {"type": "string"}}), json!(["text"]))},
        {"name": "count", "description": "Reports progress up to `to`, then answers.",
         "inputSchema": object(json!({"to": {"type": "integer", "minimum": 0}}), json!(["to"]))},
        {"name": "fail", "description": "Fails with the reason.",
         "inputSchema": object(json!({"reason": {"type": "string"}}), json!(["reason"]))},
        {"name": "add", "description": "Adds two integers.",
         "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
         "outputSchema": object(json!({"sum": {"type": "integer"}}), json!(["sum"]))},
        {"name": "wait", "description": "Answers after `ms` milliseconds.",
         "inputSchema": object(json!({"ms": {"type": "integer", "minimum": 0}}), json!(["ms"]))},
    ])
}

fn text(value: &str) -> Value {
    json!({"content": [{"type": "text", "text": value}], "isError": false})
}

/// The result of calling `name`, after its progress went out.
fn call(
    out: &Out,
    name: &str,
    arguments: &Value,
    token: Option<&Value>,
    cancelled: &dyn Fn() -> bool,
) -> Option<Value> {
    match name {
        "echo" => Some(text(arguments["text"].as_str().unwrap_or_default())),
        "count" => {
            let to = arguments["to"].as_u64().unwrap_or(0);
            for step in 1..=to {
                if let Some(token) = token {
                    send(
                        out,
                        json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step, "total": to, "message": format!("step {step}")}}),
                    );
                }
            }
            Some(text(&format!("counted to {to}")))
        }
        "fail" => Some(json!({"content": [{"type": "text", "text": arguments["reason"].as_str().unwrap_or("failed")}],
                              "isError": true})),
        "add" => {
            let sum = arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0);
            Some(json!({"content": [{"type": "text", "text": sum.to_string()}], "structuredContent": {"sum": sum}}))
        }
        "wait" => {
            let ms = arguments["ms"].as_u64().unwrap_or(0);
            for _ in 0..ms.div_ceil(10) {
                if cancelled() {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Some(text(&format!("waited {ms} ms")))
        }
        other => {
            Some(json!({"content": [{"type": "text", "text": format!("Unknown tool: {other}")}], "isError": true}))
        }
    }
}

fn main() {
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let cancelled_ids: Arc<Mutex<HashSet<String>>> = Arc::default();
    let ending = Arc::new(AtomicBool::new(false));
    let mut calls = Vec::new();
    let mut modern = false;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let params = message.get("params").cloned().unwrap_or_default();
        let Some(id) = message.get("id").cloned() else {
            if method == "notifications/cancelled" {
                let id = params["requestId"].to_string();
                cancelled_ids.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
            }
            continue;
        };
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        let refuse =
            |code: i64, text: &str| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}});
        let stamped = |mut result: Value| {
            if modern {
                result["resultType"] = json!("complete");
            }
            result
        };
        match method.as_str() {
            "server/discover" => {
                modern = true;
                send(
                    &out,
                    answer(json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "ferrule-mcp-test-server", "version": "1"}}})),
                );
            }
            "initialize" if modern => send(&out, refuse(-32022, "this connection speaks 2026-07-28")),
            "initialize" => send(
                &out,
                answer(json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "ferrule-mcp-test-server", "version": "1"}})),
            ),
            "ping" => send(&out, answer(json!({}))),
            "tools/list" => {
                let mut listed = stamped(json!({"tools": tools()}));
                if modern {
                    listed["ttlMs"] = json!(0);
                    listed["cacheScope"] = json!("private");
                }
                send(&out, answer(listed));
            }
            "tools/call" => {
                let (out, cancelled_ids, ending) = (Arc::clone(&out), Arc::clone(&cancelled_ids), Arc::clone(&ending));
                let key = id.to_string();
                calls.push(std::thread::spawn(move || {
                    let name = params["name"].as_str().unwrap_or_default();
                    let token = params["_meta"].get("progressToken");
                    let cancelled = || {
                        ending.load(Ordering::SeqCst)
                            || cancelled_ids.lock().unwrap_or_else(|e| e.into_inner()).contains(&key)
                    };
                    if let Some(mut result) = call(&out, name, &params["arguments"], token, &cancelled) {
                        if modern {
                            result["resultType"] = json!("complete");
                        }
                        send(&out, json!({"jsonrpc": "2.0", "id": id, "result": result}));
                    }
                }));
            }
            _ => send(&out, refuse(-32601, "Method not found")),
        }
    }
    ending.store(true, Ordering::SeqCst);
    for call in calls {
        let _ = call.join();
    }
}
