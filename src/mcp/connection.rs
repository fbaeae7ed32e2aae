//! A JSON-RPC 2.0 connection to an MCP server over newline-delimited JSON:
//! requests matched to their responses by id, the server's notifications
//! passed on, its pings answered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::error::McpError;
use super::line_reader::{next_frame, Frame};
use crate::BoxFuture;

/// What the server said without being asked, for the connection's holder.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerNotice {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/progress` of a request that asked for it.
    Progress {
        /// The request's `progressToken` (a number as its digits).
        token: String,
        /// The notification's params (`progress`, `total`, `message`).
        params: Value,
    },
    /// A line that is no JSON-RPC message, or a response to no request in
    /// flight: what was wrong with it (the line itself is not kept).
    Ignored(String),
}

/// The answer to one request: its result, or why there is none.
type Answer = Result<Value, McpError>;

/// The writing half of the connection.
type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// What a connection adds to the reason it closed, once the other side is
/// gone (the server's last stderr lines).
pub(crate) type WhyClosed = Box<dyn FnOnce() -> BoxFuture<'static, String> + Send>;

/// An open connection. Shared (`Arc`) by everything that sends on it; every
/// method may be called from any thread of the runtime.
pub struct Connection {
    output: tokio::sync::Mutex<Option<Output>>,
    pending: Mutex<Pending>,
    next_id: AtomicU64,
    notices: Mutex<Option<mpsc::UnboundedSender<ServerNotice>>>,
}

/// The requests in flight, by id; once the connection is closed, why.
#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, (String, oneshot::Sender<Answer>)>,
    closed: Option<String>,
}

impl Connection {
    /// Opens a connection on `input` and `output`, reading messages of at most
    /// `max_message_bytes`; `why_closed` gives what to add to the reason a
    /// closed connection gives (the server's last stderr lines).
    pub(crate) fn open(
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
        max_message_bytes: usize,
        why_closed: WhyClosed,
    ) -> Arc<Connection> {
        let connection = Arc::new(Connection {
            output: tokio::sync::Mutex::new(Some(Box::new(output))),
            pending: Mutex::new(Pending::default()),
            next_id: AtomicU64::new(1),
            notices: Mutex::new(None),
        });
        tokio::spawn(read_messages(Arc::downgrade(&connection), input, max_message_bytes, why_closed));
        connection
    }

    /// The server's notices from now on (one receiver: a second call replaces
    /// the first).
    pub fn notices(&self) -> mpsc::UnboundedReceiver<ServerNotice> {
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Ok(mut notices) = self.notices.lock() {
            *notices = Some(sender);
        }
        receiver
    }

    /// Sends the request `method` with `params` and waits at most `timeout`
    /// for its result. When the wait ends without one (timeout, or the future
    /// dropped), the server is told (`notifications/cancelled`) and a late
    /// answer is dropped.
    pub async fn request(self: &Arc<Self>, method: &str, params: Value, timeout: Duration) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut pending = self.pending.lock().map_err(|_| McpError::Closed("poisoned".into()))?;
            if let Some(why) = &pending.closed {
                return Err(McpError::Closed(why.clone()));
            }
            pending.waiting.insert(id, (method.to_owned(), sender));
        }
        let mut guard = InFlight { connection: Arc::clone(self), id, answered: false };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(unsent) = self.send(&message).await {
            guard.answered = true; // never sent: nothing to cancel
            return Err(unsent);
        }
        let answer = match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(McpError::Closed("the connection was dropped".into())),
            Err(_) => Err(McpError::TimedOut { method: method.to_owned(), millis: timeout.as_millis() }),
        };
        guard.answered = matches!(answer, Ok(_) | Err(McpError::Refused { .. } | McpError::Closed(_)));
        answer
    }

    /// Sends the notification `method` with `params`.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Closes the server's input (its stdin: a server ends at its end).
    pub(crate) async fn close_input(&self) {
        if let Some(mut output) = self.output.lock().await.take() {
            let _ = output.shutdown().await;
        }
    }

    /// Fails every request in flight, and every later one, with `why`.
    pub(crate) fn fail_all(&self, why: &str) {
        let waiting = match self.pending.lock() {
            Ok(mut pending) => {
                pending.closed.get_or_insert_with(|| why.to_owned());
                std::mem::take(&mut pending.waiting)
            }
            Err(_) => return,
        };
        for (_, (_, sender)) in waiting {
            let _ = sender.send(Err(McpError::Closed(why.to_owned())));
        }
    }

    /// Writes one message, on one line.
    async fn send(&self, message: &Value) -> Result<(), McpError> {
        let mut line = serde_json::to_vec(message).map_err(|e| McpError::Protocol(e.to_string()))?;
        line.push(b'\n');
        let mut output = self.output.lock().await;
        let Some(output) = output.as_mut() else {
            return Err(McpError::Closed("its input is closed".into()));
        };
        let written = async {
            output.write_all(&line).await?;
            output.flush().await
        };
        written.await.map_err(|e| McpError::Closed(format!("writing to it failed: {e}")))
    }

    /// Settles the response `message` to request `id`.
    fn answer(&self, id: u64, message: &Value) -> bool {
        let Some((method, sender)) = self.pending.lock().ok().and_then(|mut p| p.waiting.remove(&id)) else {
            return false;
        };
        let answer = match (message.get("result"), message.get("error")) {
            (Some(result), None) => Ok(result.clone()),
            (None, Some(error)) => Err(McpError::Refused {
                method,
                code: error["code"].as_i64().unwrap_or_default(),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            }),
            _ => Err(McpError::Protocol(format!("the answer to {method} has neither a result nor an error"))),
        };
        let _ = sender.send(answer);
        true
    }

    /// Passes `notice` to the holder, if it listens.
    fn tell(&self, notice: ServerNotice) {
        if let Some(sender) = self.notices.lock().ok().and_then(|n| n.clone()) {
            let _ = sender.send(notice);
        }
    }
}

/// A request in flight: dropped unanswered (timed out, or its future
/// dropped), it leaves the pending set and the server is told it was
/// cancelled, from a task of its own (a drop cannot wait).
struct InFlight {
    connection: Arc<Connection>,
    id: u64,
    answered: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if let Ok(mut pending) = self.connection.pending.lock() {
            pending.waiting.remove(&self.id);
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (connection, id) = (Arc::clone(&self.connection), self.id);
        runtime.spawn(async move {
            let params = json!({"requestId": id, "reason": "the request was cancelled"});
            let _ = connection.notify("notifications/cancelled", params).await;
        });
    }
}

/// Reads the server's messages until its output ends, then fails every
/// request in flight. Ends early when the connection is dropped.
async fn read_messages(
    connection: std::sync::Weak<Connection>,
    input: impl AsyncRead + Send + Unpin,
    max_message_bytes: usize,
    why_closed: WhyClosed,
) {
    let mut input = BufReader::new(input);
    let ending = loop {
        let frame = next_frame(&mut input, max_message_bytes).await;
        let Some(connection) = connection.upgrade() else {
            return;
        };
        match frame {
            Ok(Frame::Line(line)) if line.iter().all(u8::is_ascii_whitespace) => {}
            Ok(Frame::Line(line)) => received(&connection, &line).await,
            Ok(Frame::Oversized(length)) => {
                // The request it answered cannot be told: every request fails.
                break format!("it sent a message of {length} bytes, over the limit of {max_message_bytes}");
            }
            Ok(Frame::End) => break "its output ended".to_owned(),
            Err(e) => break format!("reading its output failed: {e}"),
        }
    };
    let why = why_closed().await;
    if let Some(connection) = connection.upgrade() {
        connection.fail_all(&format!("{ending}{why}"));
        connection.close_input().await;
    }
}

/// Handles one message from the server: a response, a request (a ping is
/// answered; others are refused as not offered), or a notification.
async fn received(connection: &Arc<Connection>, line: &[u8]) {
    let message: Value = match serde_json::from_slice(line) {
        Ok(message @ Value::Object(_)) => message,
        Ok(_) | Err(_) => {
            connection.tell(ServerNotice::Ignored("a line that is no JSON-RPC message".into()));
            return;
        }
    };
    let method = message.get("method").and_then(Value::as_str);
    match (method, message.get("id")) {
        (None, Some(id)) => {
            let known = id.as_u64().is_some_and(|id| connection.answer(id, &message));
            if !known {
                connection.tell(ServerNotice::Ignored(format!("an answer to no request in flight (id {id})")));
            }
        }
        (Some(method), Some(id)) => {
            let reply = match method {
                "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("ferrule does not offer {method}")}}),
            };
            let _ = connection.send(&reply).await;
        }
        (Some("notifications/tools/list_changed"), None) => connection.tell(ServerNotice::ToolsChanged),
        (Some("notifications/progress"), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            let token = match &params["progressToken"] {
                Value::String(token) => token.clone(),
                Value::Number(token) => token.to_string(),
                _ => return,
            };
            connection.tell(ServerNotice::Progress { token, params });
        }
        (Some(_), None) => {}
        (None, None) => connection.tell(ServerNotice::Ignored("a message with neither a method nor an id".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection to a server played by the test: its lines in, its lines out.
    fn played() -> (Arc<Connection>, impl tokio::io::AsyncBufRead + Unpin, impl AsyncWrite + Unpin) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client);
        let gone: WhyClosed = Box::new(|| Box::pin(async { "; it is gone".to_owned() }));
        let connection = Connection::open(client_read, client_write, 1 << 12, gone);
        let (server_read, server_write) = tokio::io::split(server);
        (connection, BufReader::new(server_read), server_write)
    }

    async fn read_line(input: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> Value {
        match next_frame(input, 1 << 16).await.unwrap() {
            Frame::Line(line) => serde_json::from_slice(&line).unwrap(),
            other => panic!("no line: {other:?}"),
        }
    }

    #[tokio::test]
    async fn hostile_lines_are_noticed_and_lose_nothing() {
        let (connection, mut from_client, mut to_client) = played();
        let mut notices = connection.notices();
        let asking = Arc::clone(&connection);
        let request =
            tokio::spawn(async move { asking.request("tools/list", json!({}), Duration::from_secs(30)).await });
        let sent = read_line(&mut from_client).await;
        assert_eq!((sent["method"].as_str(), sent["jsonrpc"].as_str()), (Some("tools/list"), Some("2.0")));
        let hostile = "not json\n[1,2]\n{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}\n\n\
            {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n\
            {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"sampling/createMessage\",\"params\":{}}\n\
            {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
        to_client.write_all(hostile.as_bytes()).await.unwrap();
        assert_eq!(read_line(&mut from_client).await, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
        let refused = read_line(&mut from_client).await;
        assert_eq!((refused["id"].clone(), refused["error"]["code"].clone()), (json!("s"), json!(-32601)));
        let answer = json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"tools": []}});
        to_client.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
        assert_eq!(request.await.unwrap().unwrap(), json!({"tools": []}), "the request got its answer");
        let mut seen = Vec::new();
        while seen.len() < 4 {
            seen.push(notices.recv().await.unwrap());
        }
        assert!(
            matches!(&seen[..3], [ServerNotice::Ignored(_), ServerNotice::Ignored(_), ServerNotice::Ignored(id)]
            if id.contains("999")),
            "{seen:?}"
        );
        assert_eq!(seen[3], ServerNotice::ToolsChanged);
        let error = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad cursor"}});
        let asking = Arc::clone(&connection);
        let refused =
            tokio::spawn(async move { asking.request("tools/list", json!({}), Duration::from_secs(30)).await });
        let _ = read_line(&mut from_client).await;
        to_client.write_all(format!("{error}\n").as_bytes()).await.unwrap();
        let refused = refused.await.unwrap();
        assert_eq!(
            refused,
            Err(McpError::Refused { method: "tools/list".into(), code: -32602, message: "bad cursor".into() })
        );
    }

    #[tokio::test]
    async fn the_end_of_the_servers_output_fails_what_waits_and_what_follows() {
        let (connection, mut from_client, to_client) = played();
        let asking = Arc::clone(&connection);
        let waiting =
            tokio::spawn(async move { asking.request("tools/call", json!({}), Duration::from_secs(30)).await });
        let _ = read_line(&mut from_client).await;
        drop((from_client, to_client));
        let closed = Err(McpError::Closed("its output ended; it is gone".into()));
        assert_eq!(waiting.await.unwrap(), closed);
        assert_eq!(connection.request("tools/list", json!({}), Duration::from_secs(30)).await, closed);
    }

    #[tokio::test]
    async fn a_request_given_up_is_cancelled_at_the_server() {
        let (connection, mut from_client, _to_client) = played();
        let given_up = connection.request("tools/call", json!({}), Duration::from_millis(10)).await;
        assert!(matches!(given_up, Err(McpError::TimedOut { .. })), "{given_up:?}");
        let sent = read_line(&mut from_client).await;
        let cancelled = read_line(&mut from_client).await;
        assert_eq!(cancelled["method"], "notifications/cancelled");
        assert_eq!(cancelled["params"]["requestId"], sent["id"]);
    }
}
