//! The protocol on an open connection: the `initialize` handshake, the
//! server's tools (every page), and calls to them.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::connection::Connection;
use super::error::McpError;
use super::PROTOCOL_VERSION;

/// The most pages of a tool list read: a server whose list goes on past
/// them breaks the protocol.
const MAX_PAGES: usize = 1000;

/// One tool of a server, as its `tools/list` describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The server's own name for it.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema of its arguments, in the dialect it declares.
    pub input_schema: Value,
    /// The JSON Schema of its `structuredContent`, when it gives one.
    #[serde(default)]
    pub output_schema: Option<Value>,
}

/// A server's tools, and those it listed without describing them: each by
/// its name (empty when it has none), with why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolList {
    /// The tools, in the order listed.
    pub tools: Vec<McpTool>,
    /// The entries left out, with why.
    pub left_out: Vec<(String, String)>,
}

/// A server past the handshake. Shared by its holder's tasks; every method
/// may be called from any thread of the runtime.
pub struct McpClient {
    connection: Arc<Connection>,
    /// The server's `serverInfo`, as it gave it.
    pub server_info: Value,
    /// The server's `capabilities`, as it gave them.
    pub capabilities: Value,
    /// The protocol version the server answered with.
    pub protocol_version: String,
}

impl McpClient {
    /// Performs the `initialize` handshake on `connection` within `timeout`:
    /// ferrule offers no roots, sampling or elicitation.
    pub async fn initialize(connection: Arc<Connection>, timeout: Duration) -> Result<McpClient, McpError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "ferrule", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = connection.exchange("initialize", params, timeout, false).await?;
        let protocol_version = result["protocolVersion"]
            .as_str()
            .ok_or_else(|| McpError::Protocol("initialize answered without a protocolVersion".into()))?
            .to_owned();
        connection.notify("notifications/initialized", json!({}))?;
        Ok(McpClient {
            connection,
            server_info: result["serverInfo"].clone(),
            capabilities: result["capabilities"].clone(),
            protocol_version,
        })
    }

    /// The connection the client speaks on.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// Every tool of the server, each page asked for within `timeout`. A tool
    /// that does not describe itself (no name, no input schema) is left out
    /// of the list, named with why in [`ToolList::left_out`].
    pub async fn list_tools(&self, timeout: Duration) -> Result<ToolList, McpError> {
        let mut list = ToolList::default();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.connection.request("tools/list", params, timeout).await?;
            let listed =
                page["tools"].as_array().ok_or_else(|| McpError::Protocol("tools/list gave no tools".into()))?;
            for tool in listed {
                let name = || tool["name"].as_str().unwrap_or_default().to_owned();
                match McpTool::deserialize(tool) {
                    Ok(tool) if tool.input_schema.is_object() => list.tools.push(tool),
                    Ok(_) => list.left_out.push((name(), "its inputSchema is not an object".to_owned())),
                    Err(e) => list.left_out.push((name(), e.to_string())),
                }
            }
            cursor = match page.get("nextCursor") {
                None | Some(Value::Null) => return Ok(list),
                Some(Value::String(next)) if cursors.insert(next.clone()) => Some(next.clone()),
                Some(Value::String(next)) => {
                    return Err(McpError::Protocol(format!("tools/list gave the cursor {next:?} twice")))
                }
                Some(other) => return Err(McpError::Protocol(format!("tools/list gave the cursor {other}"))),
            };
        }
        Err(McpError::Protocol(format!("tools/list went on past {MAX_PAGES} pages")))
    }

    /// Calls the tool `name` with `arguments`, waiting at most `timeout` for
    /// its result (the `CallToolResult`, as the server gave it). With
    /// `progress_token`, the server may send progress for the call
    /// ([`super::ServerNotice::Progress`]).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        progress_token: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(token) = progress_token {
            params["_meta"] = json!({"progressToken": token});
        }
        let result = self.connection.request("tools/call", params, timeout).await?;
        match result.is_object() {
            true => Ok(result),
            false => Err(McpError::Protocol(format!("tools/call of {name} answered {result}, not an object"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[tokio::test]
    async fn tools_that_do_not_describe_themselves_are_left_out_by_name() {
        let (client_side, server_side) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(client_side);
        let connection = Connection::open(read, write, 1 << 16, Box::new(|| Box::pin(async { String::new() })));
        let (server_read, mut server_write) = tokio::io::split(server_side);
        let server = tokio::spawn(async move {
            let mut lines = BufReader::new(server_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let request: Value = serde_json::from_str(&line).unwrap();
                let result = match request["method"].as_str() {
                    Some("initialize") => {
                        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}})
                    }
                    Some("tools/list") => json!({"tools": [
                        {"name": "good", "inputSchema": {"type": "object"}},
                        {"name": "no_schema"},
                        {"name": "null_schema", "inputSchema": null},
                        {"description": "no name", "inputSchema": {"type": "object"}},
                    ]}),
                    _ => continue,
                };
                let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
                server_write.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
            }
        });
        let client = McpClient::initialize(connection, Duration::from_secs(30)).await.unwrap();
        let list = client.list_tools(Duration::from_secs(30)).await.unwrap();
        assert_eq!(list.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["good"]);
        let left_out: Vec<&str> = list.left_out.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(left_out, ["no_schema", "null_schema", ""]);
        drop(client);
        server.abort();
    }
}
