//! The protocol on a transport: which era the server speaks (the stateless
//! 2026-07-28 version, or the `initialize` handshake of 2025-11-25 and
//! before), the server's tools (every page), calls to them, and the
//! subscription to changes of its tool list.
//!
//! Finding the era: the client asks `server/discover` in the 2026-07-28
//! version; a `DiscoverResult` naming that version, or a refusal with
//! `-32022` that names it, makes the server modern, and anything else
//! legacy. Over stdio the `initialize` request goes out at once behind the
//! probe, so a legacy server that never answers the probe costs no wait:
//! whichever answer settles the era first wins (a dual-era server that took
//! the probe refuses the handshake; a legacy one refuses the probe or stays
//! silent and answers the handshake). Over HTTP the probe is answered at
//! once, with a result or a status, so the handshake follows only when
//! needed.
//!
//! Over HTTP in the stateless version, a tool's arguments annotated
//! `x-mcp-header` are sent as headers with each call
//! ([`super::param_headers`]), and a tool whose annotations break the rules
//! is left out of the list.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::bounded::{bounded, quoted, NAME_BYTES, TEXT_BYTES};
use super::config::Transport;
use super::error::McpError;
use super::param_headers::{header_values, param_headers, ParamHeader};
use super::rpc::{Answer, Exchange, Rpc, ServerNotice};
use crate::trace::SpanContext;

/// The stateless version of the protocol, the newest this client speaks.
pub const MODERN_VERSION: &str = "2026-07-28";
/// The handshake version this client asks for in `initialize`.
pub const HANDSHAKE_VERSION: &str = "2025-11-25";
/// Every handshake version this client accepts a server's answer in.
const HANDSHAKE_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The error by which a modern server refuses a version it does not speak.
const UNSUPPORTED_VERSION: i64 = -32022;
/// The error by which a modern HTTP server refuses headers that do not
/// match the request (a tool's `Mcp-Param-*` among them).
const HEADER_MISMATCH: i64 = -32020;

/// The most pages of a tool list read, the most tools kept from them and
/// the most bytes of their names, descriptions and schemas: what a server's
/// list holds past any of them is left out, saying so.
const MAX_PAGES: usize = 100;
const MAX_TOOLS: usize = 4096;
const LISTING_BYTES: usize = 16 << 20;
/// The largest input or output schema (as JSON) a tool may have: a tool
/// with a larger one, or with a name over `NAME_BYTES`, is left out, saying why.
const MAX_SCHEMA_BYTES: usize = 64 << 10;
/// The longest description kept: a longer one is cut.
const DESCRIPTION_BYTES: usize = 8 << 10;
/// How often a modern request answered `input_required` (with only a
/// `requestState`: ferrule offers no input) is made again, and the pause
/// before the first retry, doubling up to the last.
const INPUT_ROUNDS: u32 = 10;
const FIRST_INPUT_PAUSE: Duration = Duration::from_millis(50);
const LONGEST_INPUT_PAUSE: Duration = Duration::from_millis(250);

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

/// A server whose era is known. Shared by its holder's tasks; every method
/// may be called from any thread of the runtime.
pub struct McpClient {
    rpc: Arc<dyn Rpc>,
    /// The protocol version spoken.
    pub protocol_version: String,
    /// Whether the server speaks the stateless version (every request
    /// carries it; no handshake, no session).
    pub modern: bool,
    /// The server's `serverInfo`, as it gave it (null when it gave none).
    pub server_info: Value,
    /// The server's `capabilities`, as it gave them.
    pub capabilities: Value,
    next_token: AtomicU64,
    /// The arguments each tool sends as headers, by the tool's name, when
    /// the server speaks the stateless version over HTTP.
    param_headers: Option<Mutex<HashMap<String, Vec<ParamHeader>>>>,
}

/// What the probe's answer says.
enum Verdict {
    /// The server speaks the stateless version: its discover result.
    Modern(Value),
    /// The server may speak the handshake.
    Legacy,
    /// The server refused the version it says it speaks: ask again.
    Again,
    /// Neither: why.
    Failed(McpError),
}

impl McpClient {
    /// Finds the era of the server on `rpc`, reached over `transport` (see
    /// the module's doc), each request allowed `timeout`; ferrule offers no
    /// roots, sampling or elicitation.
    pub async fn connect(rpc: Arc<dyn Rpc>, timeout: Duration, transport: Transport) -> Result<McpClient, McpError> {
        let probe_once =
            || rpc.exchange("server/discover", stamped(json!({})), timeout, unabandoned(Some(MODERN_VERSION)));
        let discover = probe_once();
        let established = match transport {
            Transport::Http => {
                let mut verdict = verdict(discover.await);
                if matches!(verdict, Verdict::Again) {
                    verdict = self::verdict(probe_once().await);
                }
                match verdict {
                    Verdict::Modern(result) => Ok(McpClient::modern(&rpc, &result)),
                    Verdict::Failed(error) => Err(error),
                    Verdict::Legacy | Verdict::Again => {
                        let answer = rpc.exchange("initialize", handshake(), timeout, unabandoned(None)).await;
                        McpClient::legacy(&rpc, answer)
                    }
                }
            }
            Transport::Stdio => {
                // The probe's line is queued when its future is first polled,
                // which join does in order: the probe goes out first.
                let initialize = rpc.exchange("initialize", handshake(), timeout, unabandoned(None));
                settle_pipelined(&rpc, discover, initialize).await
            }
        };
        let mut client = established?;
        if client.modern && transport == Transport::Http {
            client.param_headers = Some(Mutex::default());
        }
        if !client.modern {
            client.rpc.notify("notifications/initialized", json!({}), Some(client.version())).await?;
        }
        Ok(client)
    }

    /// The client of a server whose discover result is `result`.
    fn modern(rpc: &Arc<dyn Rpc>, result: &Value) -> McpClient {
        McpClient {
            rpc: Arc::clone(rpc),
            protocol_version: MODERN_VERSION.to_owned(),
            modern: true,
            server_info: result["_meta"]["io.modelcontextprotocol/serverInfo"].clone(),
            capabilities: result["capabilities"].clone(),
            next_token: AtomicU64::new(1),
            param_headers: None,
        }
    }

    /// The client of a server that answered `initialize` with `answer`.
    fn legacy(rpc: &Arc<dyn Rpc>, answer: Answer) -> Result<McpClient, McpError> {
        let result = answer?;
        let version = result["protocolVersion"]
            .as_str()
            .ok_or_else(|| McpError::Protocol("initialize answered without a protocolVersion".into()))?;
        if !HANDSHAKE_VERSIONS.contains(&version) {
            return Err(McpError::Protocol(format!(
                "the server speaks the protocol version {}, none of {}",
                quoted(&json!(version)),
                HANDSHAKE_VERSIONS.join(", ")
            )));
        }
        Ok(McpClient {
            rpc: Arc::clone(rpc),
            protocol_version: version.to_owned(),
            modern: false,
            server_info: result["serverInfo"].clone(),
            capabilities: result["capabilities"].clone(),
            next_token: AtomicU64::new(1),
            param_headers: None,
        })
    }

    /// The transport the client speaks on.
    pub fn rpc(&self) -> &Arc<dyn Rpc> {
        &self.rpc
    }

    /// Whether the server says its tool list changes (so a modern server
    /// takes a subscription to the changes).
    pub fn tools_change(&self) -> bool {
        self.capabilities["tools"]["listChanged"] == true
    }

    /// The server's notices from now on (one receiver).
    pub fn notices(&self) -> mpsc::Receiver<ServerNotice> {
        self.rpc.notices()
    }

    /// Sends `method` with `params` in the client's era, waiting at most
    /// `timeout` for each answer; a modern server's `input_required` without
    /// input requests is asked again, echoing its `requestState`.
    async fn request(
        &self,
        method: &str,
        mut params: Value,
        timeout: Duration,
        progress: Option<mpsc::Sender<Value>>,
        headers: Vec<(String, String)>,
    ) -> Answer {
        if !self.modern {
            let how = Exchange { progress, version: Some(self.version()), ..Exchange::default() };
            return self.rpc.exchange(method, params, timeout, how).await;
        }
        params = stamped(params);
        let mut pause = FIRST_INPUT_PAUSE;
        for _ in 0..=INPUT_ROUNDS {
            let how = Exchange {
                progress: progress.clone(),
                version: Some(MODERN_VERSION),
                headers: headers.clone(),
                ..Exchange::default()
            };
            let result = self.rpc.exchange(method, params.clone(), timeout, how).await?;
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => return Ok(result),
                Some("input_required") if result.get("inputRequests").is_none() => {
                    let Some(state) = result.get("requestState") else {
                        return Err(McpError::Protocol(format!("{method} asked for input and gave no requestState")));
                    };
                    params["requestState"] = state.clone();
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(LONGEST_INPUT_PAUSE);
                }
                Some("input_required") => {
                    return Err(McpError::Protocol(format!(
                        "{method} asked for input (elicitation or sampling), which ferrule does not offer"
                    )))
                }
                Some(other) => {
                    let other = quoted(&json!(other));
                    return Err(McpError::Protocol(format!("{method} answered with the resultType {other}")));
                }
            }
        }
        Err(McpError::Protocol(format!("{method} still asked to be made again after {INPUT_ROUNDS} rounds")))
    }

    /// The version a request carries.
    fn version(&self) -> &'static str {
        HANDSHAKE_VERSIONS.iter().copied().find(|v| *v == self.protocol_version).unwrap_or(MODERN_VERSION)
    }

    /// Every tool of the server, each page asked for within `timeout`. A tool
    /// that does not describe itself (no name, no input schema) is left out
    /// of the list, named with why in [`ToolList::left_out`]; so is what the
    /// list holds past its bounds (one entry, without a name).
    pub async fn list_tools(&self, timeout: Duration) -> Result<ToolList, McpError> {
        let mut list = ToolList::default();
        let (mut beyond, mut bytes) = (0usize, 0usize);
        let mut table = HashMap::new();
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, timeout, None, Vec::new()).await?;
            let listed =
                page["tools"].as_array().ok_or_else(|| McpError::Protocol("tools/list gave no tools".into()))?;
            for tool in listed {
                if list.tools.len() + list.left_out.len() >= MAX_TOOLS || bytes >= LISTING_BYTES {
                    beyond += 1;
                    continue;
                }
                let name = || bounded(tool["name"].as_str().unwrap_or_default(), NAME_BYTES);
                let parsed = McpTool::deserialize(tool);
                let schemas = parsed.as_ref().map_or(0, schema_bytes);
                match parsed {
                    Ok(tool) if tool.name.len() > NAME_BYTES => {
                        list.left_out.push((name(), format!("its name is longer than {NAME_BYTES} bytes")))
                    }
                    Ok(_) if schemas > MAX_SCHEMA_BYTES => {
                        list.left_out.push((name(), format!("its schemas are larger than {MAX_SCHEMA_BYTES} bytes")))
                    }
                    Ok(mut tool) if tool.input_schema.is_object() => match self.headers_of(&tool) {
                        Ok(headers) => {
                            tool.description = tool.description.map(|text| bounded(&text, DESCRIPTION_BYTES));
                            bytes += tool.name.len() + tool.description.as_ref().map_or(0, String::len) + schemas;
                            table.insert(tool.name.clone(), headers);
                            list.tools.push(tool);
                        }
                        Err(why) => list.left_out.push((tool.name, why)),
                    },
                    Ok(_) => list.left_out.push((name(), "its inputSchema is not an object".to_owned())),
                    Err(e) => list.left_out.push((name(), bounded(&e.to_string(), TEXT_BYTES))),
                }
            }
            // An empty cursor is a cursor: only an absent or null one ends the list.
            cursor = match page.get("nextCursor") {
                None | Some(Value::Null) => None,
                Some(Value::String(next)) if cursors.insert(next.clone()) => Some(next.clone()),
                Some(twice @ Value::String(_)) => {
                    return Err(McpError::Protocol(format!("tools/list gave the cursor {} twice", quoted(twice))))
                }
                Some(other) => return Err(McpError::Protocol(format!("tools/list gave the cursor {}", quoted(other)))),
            };
            if cursor.is_none() || beyond > 0 {
                break;
            }
        }
        let rest = match (beyond, &cursor) {
            (0, None) => None,
            (0, Some(_)) => Some(format!("the rest of the list was left out: it goes on past {MAX_PAGES} pages")),
            (n, None) => Some(format!("{n} more tools were left out")),
            (n, Some(_)) => Some(format!("{n} more tools and the pages after them were left out")),
        };
        if let Some(rest) = rest {
            let bounds = format!("a server offers at most {MAX_TOOLS} tools, of {} MiB in all", LISTING_BYTES >> 20);
            list.left_out.push((String::new(), format!("{rest} ({bounds})")));
        }
        if let Some(headers) = &self.param_headers {
            *headers.lock().unwrap_or_else(|e| e.into_inner()) = table;
        }
        Ok(list)
    }

    /// The arguments `tool` sends as headers: none unless the server speaks
    /// the stateless version over HTTP; an error when its annotations break
    /// the rules (the tool is then left out).
    fn headers_of(&self, tool: &McpTool) -> Result<Vec<ParamHeader>, String> {
        match &self.param_headers {
            None => Ok(Vec::new()),
            Some(_) => param_headers(&tool.input_schema).map_err(|why| format!("its x-mcp-header annotations: {why}")),
        }
    }

    /// Calls the tool `name` with `arguments`, waiting at most `timeout` for
    /// its result (the `CallToolResult`, as the server gave it). With
    /// `progress`, the server is asked for the call's progress, whose
    /// notifications' params go there. A stateless HTTP server that refuses
    /// the call's headers (its tool changed) has its tools listed again and
    /// the call made once more.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        progress: Option<mpsc::Sender<Value>>,
        timeout: Duration,
    ) -> Result<Value, McpError> {
        self.call_tool_in(name, arguments, progress, timeout, None).await
    }

    /// [`call_tool`](Self::call_tool) within the span `trace`, whose W3C
    /// `traceparent` and `tracestate` go in the request's `_meta` (and, over
    /// HTTP, in its headers), so the server's own spans join the trace.
    pub async fn call_tool_in(
        &self,
        name: &str,
        arguments: Value,
        progress: Option<mpsc::Sender<Value>>,
        timeout: Duration,
        trace: Option<&SpanContext>,
    ) -> Result<Value, McpError> {
        let mut params = json!({"name": name, "arguments": arguments});
        if progress.is_some() {
            let token = format!("ferrule-{}", self.next_token.fetch_add(1, Ordering::Relaxed));
            params["_meta"] = json!({"progressToken": token});
        }
        let mut trace_headers = Vec::new();
        if let Some(trace) = trace {
            params["_meta"]["traceparent"] = trace.traceparent().into();
            trace_headers.push(("traceparent".to_owned(), trace.traceparent()));
            if let Some(state) = &trace.tracestate {
                params["_meta"]["tracestate"] = state.as_str().into();
                trace_headers.push(("tracestate".to_owned(), state.clone()));
            }
        }
        let headers = || {
            let mut headers = trace_headers.clone();
            if let Some(table) = &self.param_headers {
                let table = table.lock().unwrap_or_else(|e| e.into_inner());
                headers.extend(table.get(name).map(|h| header_values(h, &params["arguments"])).unwrap_or_default());
            }
            headers
        };
        let mut answer = self.request("tools/call", params.clone(), timeout, progress.clone(), headers()).await;
        if matches!(&answer, Err(error) if error.code() == Some(HEADER_MISMATCH)) && self.param_headers.is_some() {
            self.list_tools(timeout).await?;
            answer = self.request("tools/call", params.clone(), timeout, progress, headers()).await;
        }
        let result = answer?;
        match result.is_object() {
            true => Ok(result),
            false => Err(McpError::Protocol(format!("tools/call of {name} answered {result}, not an object"))),
        }
    }

    /// Subscribes to changes of the tool list (modern servers: changes then
    /// come as [`ServerNotice::ToolsChanged`]); returns when the server ends
    /// the subscription, or the connection does. Dropping the future ends it.
    pub async fn listen(self: Arc<Self>) -> Result<(), McpError> {
        let params = json!({"notifications": {"toolsListChanged": true}});
        self.request("subscriptions/listen", params, Duration::MAX, None, Vec::new()).await.map(drop)
    }
}

/// The size of a tool's schemas as JSON.
fn schema_bytes(tool: &McpTool) -> usize {
    tool.input_schema.to_string().len() + tool.output_schema.as_ref().map_or(0, |schema| schema.to_string().len())
}

/// An exchange that is never cancelled (`initialize`, `server/discover`).
fn unabandoned(version: Option<&'static str>) -> Exchange {
    Exchange { cancellable: false, version, ..Exchange::default() }
}

/// `params` with the stateless version's `_meta`: the version, no client
/// capabilities, and who ferrule is.
fn stamped(mut params: Value) -> Value {
    let meta = params.as_object_mut().map(|p| p.entry("_meta").or_insert_with(|| Value::Object(Map::new())));
    if let Some(Value::Object(meta)) = meta {
        meta.insert("io.modelcontextprotocol/protocolVersion".into(), json!(MODERN_VERSION));
        meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({}));
        meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
    }
    params
}

fn client_info() -> Value {
    json!({"name": "ferrule", "version": env!("CARGO_PKG_VERSION")})
}

/// The `initialize` request's params.
fn handshake() -> Value {
    json!({"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": client_info()})
}

/// What the probe's answer says of the server's era.
fn verdict(answer: Answer) -> Verdict {
    let names_modern = |versions: &Value| versions.as_array().is_some_and(|v| v.iter().any(|v| v == MODERN_VERSION));
    match answer {
        Ok(result) if names_modern(&result["supportedVersions"]) && result["capabilities"].is_object() => {
            Verdict::Modern(result)
        }
        // A discover result without this version: a server speaking the
        // handshake that answers discover (go-sdk's stateful servers).
        Ok(_) => Verdict::Legacy,
        Err(error) if error.code() == Some(UNSUPPORTED_VERSION) => {
            let McpError::Refused { data, .. } = &error else { return Verdict::Failed(error) };
            let supported = &data["supported"];
            if names_modern(supported) {
                return Verdict::Again;
            }
            let legacy =
                supported.as_array().is_some_and(|v| v.iter().any(|v| HANDSHAKE_VERSIONS.iter().any(|h| v == h)));
            match legacy {
                true => Verdict::Legacy,
                false => Verdict::Failed(McpError::Protocol(format!(
                    "the server speaks none of ferrule's protocol versions (it speaks {})",
                    quoted(supported)
                ))),
            }
        }
        // A modern server refusing the request itself: no era would do.
        Err(error @ McpError::Refused { code: -32021 | -32020, .. }) => Verdict::Failed(error),
        // An outage, or a refusal of ferrule's credentials, is no era.
        Err(
            error @ (McpError::Closed(_)
            | McpError::Spawn(_)
            | McpError::Unreachable(_)
            | McpError::Network(_)
            | McpError::TimedOut { .. }),
        ) => Verdict::Failed(error),
        Err(error @ McpError::Status { status: 401 | 403, .. }) => Verdict::Failed(error),
        Err(_) => Verdict::Legacy,
    }
}

/// The era from a probe and a handshake sent together: the probe's result
/// makes the server modern; a handshake answered while the probe is not
/// makes it legacy; a probe refused waits for the handshake.
async fn settle_pipelined(
    rpc: &Arc<dyn Rpc>,
    discover: crate::BoxFuture<'_, Answer>,
    initialize: crate::BoxFuture<'_, Answer>,
) -> Result<McpClient, McpError> {
    use futures_util::future::{select, Either};
    match select(discover, initialize).await {
        Either::Left((probed, initialize)) => match verdict(probed) {
            Verdict::Modern(result) => Ok(McpClient::modern(rpc, &result)),
            Verdict::Legacy | Verdict::Again => McpClient::legacy(rpc, initialize.await),
            // A silent probe (timed out) still leaves the handshake.
            Verdict::Failed(McpError::TimedOut { .. }) => McpClient::legacy(rpc, initialize.await),
            Verdict::Failed(error) => Err(error),
        },
        Either::Right((Ok(result), _)) => McpClient::legacy(rpc, Ok(result)),
        // The handshake refused: the probe decides (a server that locked
        // itself to the stateless version refuses the handshake).
        Either::Right((Err(refused), discover)) => match verdict(discover.await) {
            Verdict::Modern(result) => Ok(McpClient::modern(rpc, &result)),
            _ => Err(refused),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Connection;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A client of a server played by `answer`, which gives each request's
    /// result or error (None: no answer at all).
    async fn played(answer: fn(&Value) -> Option<Result<Value, Value>>) -> Result<McpClient, McpError> {
        let (client_side, server_side) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(client_side);
        let connection = Connection::open(read, write, 1 << 16, Box::new(|| Box::pin(async { String::new() })));
        let (server_read, mut server_write) = tokio::io::split(server_side);
        tokio::spawn(async move {
            let mut lines = BufReader::new(server_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let request: Value = serde_json::from_str(&line).unwrap();
                let reply = match answer(&request) {
                    None => continue,
                    Some(Ok(result)) => json!({"jsonrpc": "2.0", "id": request["id"], "result": result}),
                    Some(Err(error)) => json!({"jsonrpc": "2.0", "id": request["id"], "error": error}),
                };
                server_write.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
            }
        });
        McpClient::connect(connection, Duration::from_secs(30), Transport::Stdio).await
    }

    fn init_result() -> Value {
        json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": true}}, "serverInfo": {"name": "old"}})
    }

    #[tokio::test]
    async fn a_legacy_server_is_spoken_to_in_its_handshake_version_whatever_it_does_with_the_probe() {
        for probe in [
            |r: &Value| match r["method"].as_str() {
                Some("initialize") => Some(Ok(init_result())),
                _ => Some(Err(json!({"code": -32601, "message": "Method not found"}))),
            },
            |r: &Value| match r["method"].as_str() {
                Some("initialize") => Some(Ok(init_result())),
                _ => Some(Err(json!({"code": -32602, "message": "Invalid request parameters", "data": ""}))),
            },
            // Silent to the probe: no wait for it.
            |r: &Value| match r["method"].as_str() {
                Some("initialize") => Some(Ok(init_result())),
                _ => None,
            },
        ] {
            let client = played(probe).await.unwrap();
            assert!(!client.modern && client.tools_change());
            assert_eq!((client.protocol_version.as_str(), &client.server_info["name"]), ("2025-06-18", &json!("old")));
        }
    }

    #[tokio::test]
    async fn a_modern_server_is_spoken_to_statelessly() {
        let client = played(|r: &Value| match r["method"].as_str() {
            Some("server/discover") => {
                assert_eq!(r["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], MODERN_VERSION);
                Some(Ok(json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "new"}}})))
            }
            _ => Some(Err(json!({"code": -32022, "message": "locked", "data": {"supported": ["2026-07-28"]}}))),
        })
        .await
        .unwrap();
        assert!(client.modern && !client.tools_change());
        assert_eq!((client.protocol_version.as_str(), &client.server_info["name"]), (MODERN_VERSION, &json!("new")));
        let refused = played(|r: &Value| match r["method"].as_str() {
            Some("server/discover") => {
                Some(Err(json!({"code": -32022, "message": "no", "data": {"supported": ["2099-01-01"]}})))
            }
            _ => Some(Err(json!({"code": -32022, "message": "no", "data": {"supported": ["2099-01-01"]}}))),
        })
        .await;
        let refused = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("none of ferrule's protocol versions") && refused.contains("2099"), "{refused}");
    }

    #[tokio::test]
    async fn tools_that_do_not_describe_themselves_are_left_out_by_name() {
        let client = played(|r: &Value| match r["method"].as_str() {
            Some("initialize") => Some(Ok(init_result())),
            Some("tools/list") => Some(Ok(json!({"tools": [
                {"name": "good", "inputSchema": {"type": "object"}},
                {"name": "no_schema"},
                {"name": "null_schema", "inputSchema": null},
                {"description": "no name", "inputSchema": {"type": "object"}},
            ]}))),
            _ => None,
        })
        .await
        .unwrap();
        let list = client.list_tools(Duration::from_secs(30)).await.unwrap();
        assert_eq!(list.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["good"]);
        let left_out: Vec<&str> = list.left_out.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(left_out, ["no_schema", "null_schema", ""]);
    }
}
