//! What the protocol needs of a transport: requests answered, notifications
//! sent, the server's notices, and the end of the connection. A server over
//! stdio ([`super::Connection`]) and one over streamable HTTP
//! ([`super::HttpLink`]) each provide it.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::bounded::{bounded, NAME_BYTES};
use super::error::McpError;
use crate::BoxFuture;

/// What the server said without being asked, for the connection's holder.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerNotice {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/subscriptions/acknowledged`: a subscription to list
    /// changes is in place.
    Subscribed,
    /// A line that is no JSON-RPC message, or a response to no request in
    /// flight: what was wrong with it (the line itself is not kept).
    Ignored(String),
}

/// The answer to one request: its result, or why there is none.
pub type Answer = Result<Value, McpError>;

/// How a request is made beyond its method and params.
pub struct Exchange {
    /// Given up (timed out, or its future dropped), it is cancelled at the
    /// server. `initialize` and `server/discover` never are.
    pub cancellable: bool,
    /// Where the params of its progress notifications go, when its params
    /// give a `_meta.progressToken` (while the queue is full, progress is
    /// dropped: it is provisional).
    pub progress: Option<mpsc::Sender<Value>>,
    /// The version of the protocol it is made in (for HTTP's
    /// `MCP-Protocol-Version`); none before the version is known.
    pub version: Option<&'static str>,
    /// HTTP headers it carries beyond the protocol's own (a tool's
    /// `Mcp-Param-*`); other transports send none.
    pub headers: Vec<(String, String)>,
}

impl Default for Exchange {
    fn default() -> Self {
        Exchange { cancellable: true, progress: None, version: None, headers: Vec::new() }
    }
}

/// A transport to one server. Shared (`Arc`) by everything that sends on it;
/// every method may be called from any thread of the runtime.
pub trait Rpc: Send + Sync + 'static {
    /// Sends the request `method` with `params` and waits at most `timeout`
    /// for its result (the wait to send it included), as `how` says.
    fn exchange<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        timeout: Duration,
        how: Exchange,
    ) -> BoxFuture<'a, Answer>;

    /// Sends the notification `method` with `params` (in the protocol version
    /// `version`): queued (stdio) or posted (HTTP).
    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        version: Option<&'static str>,
    ) -> BoxFuture<'a, Result<(), McpError>>;

    /// The server's notices from now on (one receiver: a second call replaces
    /// the first).
    fn notices(&self) -> mpsc::Receiver<ServerNotice>;

    /// Whether the server announced a change of its tools since the last
    /// call (also when the notice queue had no room for it).
    fn take_tools_changed(&self) -> bool;

    /// How many notices were dropped because the holder did not read them.
    fn dropped_notices(&self) -> u64;

    /// Waits until the connection is gone for good (the server exited, or
    /// its session ended); why.
    fn closed(&self) -> BoxFuture<'_, String>;
}

/// What ferrule answers a request of the server's (`method`, `id`): a ping
/// with `{}`, anything else as not offered (ferrule offers no capability).
pub(crate) fn reply_to(method: &str, id: &Value) -> Value {
    match method {
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        _ => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": format!("ferrule does not offer {}", bounded(method, NAME_BYTES))}}),
    }
}
