//! The client the MCP conformance suite runs (`tests/mcp/conformance.sh`):
//! ferrule's MCP client over streamable HTTP, given the scenario server's URL
//! as its last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` (its data in `MCP_CONFORMANCE_CONTEXT`). It
//! finds the server's era, lists its tools, makes the calls the scenario
//! asks for, ends its session and exits; it prints what it did to stdout and
//! what failed to stderr, exiting 1 when it could not connect.

use std::sync::Arc;
use std::time::Duration;

use ferrule::mcp::{HttpLink, McpClient, McpServerConfig, McpTool, ServerLog, Transport};
use serde_json::{json, Value};

/// Each request's bound: the suite gives a client 30 s in all.
const PATIENCE: Duration = Duration::from_secs(20);

/// The calls `scenario` asks for, by tool name, given the tools listed and
/// the scenario's data.
fn calls(scenario: &str, tools: &[McpTool], context: &Value) -> Vec<(String, Value)> {
    let listed = |name: &str| tools.iter().find(|tool| tool.name == name);
    let call = |name: &str, arguments: Value| (name.to_owned(), arguments);
    match scenario {
        "tools_call" => vec![call("add_numbers", json!({"a": 2, "b": 3}))],
        "sse-retry" => vec![call("test_reconnection", json!({}))],
        "http-standard-headers" => vec![call("test_headers", json!({})), call("my-hyphenated-tool", json!({}))],
        "http-custom-headers" => context["toolCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| call(c["name"].as_str().unwrap_or_default(), c["arguments"].clone()))
            .collect(),
        "http-invalid-tool-headers" => vec![call("valid_tool", json!({"region": "us-west1"}))],
        "json-schema-2020-12-preservation" => match listed("json_schema_2020_12_tool") {
            Some(tool) => vec![call("json_schema_echo", json!({"schema": tool.input_schema}))],
            None => Vec::new(),
        },
        // Every listed tool that takes no arguments.
        _ => tools
            .iter()
            .filter(|tool| tool.input_schema["required"].as_array().is_none_or(Vec::is_empty))
            .map(|tool| call(&tool.name, json!({})))
            .collect(),
    }
}

async fn exercise(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    let config: McpServerConfig = serde_json::from_value(json!({"url": url})).map_err(|e| e.to_string())?;
    let link = Arc::new(HttpLink::new(&config, 16 << 20, Arc::new(ServerLog::default())).map_err(|e| e.to_string())?);
    let client = McpClient::connect(link.clone(), PATIENCE, Transport::Http).await.map_err(|e| e.to_string())?;
    println!("connected: {} ({})", client.protocol_version, client.server_info);
    let listing = client.list_tools(PATIENCE).await;
    let tools = match listing {
        Ok(list) => {
            for (name, why) in &list.left_out {
                println!("left out {name}: {why}");
            }
            list.tools
        }
        Err(error) => {
            eprintln!("tools/list: {error}");
            Vec::new()
        }
    };
    println!("tools: {:?}", tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>());
    for (name, arguments) in calls(scenario, &tools, context) {
        match client.call_tool(&name, arguments, None, PATIENCE).await {
            Ok(result) => println!("{name}: {result}"),
            Err(error) => eprintln!("{name}: {error}"),
        }
    }
    link.end_session().await;
    Ok(())
}

fn main() {
    let url = std::env::args().next_back().unwrap_or_default();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    if let Err(error) = runtime.block_on(exercise(&url, &scenario, &context)) {
        eprintln!("{scenario}: {error}");
        std::process::exit(1);
    }
}
