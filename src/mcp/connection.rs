//! A JSON-RPC 2.0 connection to an MCP server over newline-delimited JSON:
//! requests matched to their responses by id, the server's notifications
//! passed on, its pings answered.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::bounded::{answerable_id, bounded, quoted, TEXT_BYTES};
use super::error::McpError;
use super::line_reader::{next_frame, Frame};
use super::notices::Notices;
use super::rpc::{reply_to, Answer, Exchange, Rpc, ServerNotice};
use crate::BoxFuture;

/// What a connection adds to the reason it closed, once the other side is
/// gone (the server's last stderr lines).
pub(crate) type WhyClosed = Box<dyn FnOnce() -> BoxFuture<'static, String> + Send>;

/// Lines waiting for the writer: a server that stops reading its input
/// fills them, and then a request waits (within its timeout) for room.
const QUEUED_LINES: usize = 64;

/// The requests given up unanswered that are remembered.
const ABANDONED_KEPT: usize = 64;
/// How long a cancellation waits for room in a full queue.
const CANCEL_PATIENCE: Duration = Duration::from_secs(5);

/// An open connection. Shared (`Arc`) by everything that sends on it; every
/// method may be called from any thread of the runtime. Lines are written
/// whole, in order, by a task of its own, so a request given up part-way
/// never tears one.
pub struct Connection {
    /// The writer's queue; `None` once the server's input is closed.
    lines: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    pending: Mutex<Pending>,
    next_id: AtomicU64,
    notices: Notices,
    /// Becomes true when the reader has read all the server wrote.
    read_all: watch::Sender<bool>,
    /// Why the connection closed, once it has.
    closed: watch::Sender<Option<String>>,
    /// The reader and the writer, ended by [`Connection::abandon_io`].
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// The requests in flight, by id; once the connection is closed, why.
#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, Waiting>,
    /// The last requests given up unanswered, whose late answers are no news.
    abandoned: std::collections::VecDeque<u64>,
    closed: Option<String>,
}

/// A request in flight: its method, where its progress goes, and where its
/// answer goes.
struct Waiting {
    method: String,
    progress: Option<ProgressRoute>,
    answer: oneshot::Sender<Answer>,
}

/// Where the progress of one request goes: the `progressToken` it gave (a
/// number as its digits) and the holder's queue for the notifications' params.
struct ProgressRoute {
    token: String,
    updates: mpsc::Sender<Value>,
}

impl Connection {
    /// Opens a connection on `input` and `output`, reading messages of at most
    /// `max_message_bytes`; `why_closed` gives what to add to the reason a
    /// closed connection gives (the server's last stderr lines). Must be
    /// called within the Tokio runtime.
    pub(crate) fn open(
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
        max_message_bytes: usize,
        why_closed: WhyClosed,
    ) -> Arc<Connection> {
        let (lines, queued) = mpsc::channel(QUEUED_LINES);
        let connection = Arc::new(Connection {
            lines: Mutex::new(Some(lines)),
            pending: Mutex::new(Pending::default()),
            next_id: AtomicU64::new(1),
            notices: Notices::default(),
            read_all: watch::Sender::new(false),
            closed: watch::Sender::new(None),
            tasks: Mutex::new(Vec::new()),
        });
        let writer = tokio::spawn(write_lines(output, queued));
        let reader = tokio::spawn(read_messages(Arc::downgrade(&connection), input, max_message_bytes, why_closed));
        if let Ok(mut tasks) = connection.tasks.lock() {
            tasks.extend([writer.abort_handle(), reader.abort_handle()]);
        }
        connection
    }

    /// The server's notices from now on (one receiver: a second call replaces
    /// the first).
    pub fn notices(&self) -> mpsc::Receiver<ServerNotice> {
        self.notices.subscribe()
    }

    /// Waits until everything the server wrote was read (its output ended,
    /// or the connection failed).
    pub(crate) async fn all_read(&self) {
        let mut read_all = self.read_all.subscribe();
        let _ = read_all.wait_for(|done| *done).await;
    }

    /// Waits until the connection closed (the server went away, or its
    /// output broke the protocol beyond repair); why.
    pub async fn closed(&self) -> String {
        let mut closed = self.closed.subscribe();
        let why = closed.wait_for(Option::is_some).await;
        why.map(|why| why.clone().unwrap_or_default()).unwrap_or_default()
    }

    /// How many notices were dropped because the holder did not read them.
    pub fn dropped_notices(&self) -> u64 {
        self.notices.dropped()
    }

    /// Sends the request `method` with `params` and waits at most `timeout`
    /// for its result (the wait for room to send it included). When the wait
    /// ends without one (timeout, or the future dropped) after the request
    /// was queued, a `notifications/cancelled` is queued after it (waiting up
    /// to 5 s for room) and a late answer is dropped.
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> Answer {
        self.exchange(method, params, timeout, Exchange::default()).await
    }

    /// [`request`](Self::request), as `how` says: whether a request given up
    /// is cancelled at the server (`initialize` must never be), and where the
    /// params of its progress notifications go (when `params` gives a
    /// `_meta.progressToken`; while the queue is full, progress is dropped).
    pub async fn exchange(&self, method: &str, params: Value, timeout: Duration, how: Exchange) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, answered) = oneshot::channel();
        let progress = token_of(&params["_meta"]["progressToken"])
            .zip(how.progress)
            .map(|(token, updates)| ProgressRoute { token, updates });
        {
            let mut pending = self.pending.lock().map_err(|_| McpError::Closed("poisoned".into()))?;
            if let Some(why) = &pending.closed {
                return Err(McpError::Closed(why.clone()));
            }
            pending.waiting.insert(id, Waiting { method: method.to_owned(), progress, answer });
        }
        let mut guard = InFlight { connection: self, id, settled: !how.cancellable, sent: false };
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let exchange = async {
            self.send(&message).await?;
            guard.sent = true;
            answered.await.unwrap_or_else(|_| Err(McpError::Closed("the connection was dropped".into())))
        };
        let answer = match tokio::time::timeout(timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(McpError::TimedOut { method: method.to_owned(), millis: timeout.as_millis() }),
        };
        guard.settled |= !matches!(answer, Err(McpError::TimedOut { .. }));
        answer
    }

    /// Sends the notification `method` with `params`, without waiting: when
    /// the server is not reading its input and the queue is full, an error.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        let line = notification_line(method, params)?;
        let sender = self.sender()?;
        sender.try_send(line).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => McpError::Closed("it is not reading its input".into()),
            mpsc::error::TrySendError::Closed(_) => McpError::Closed("its input is closed".into()),
        })
    }

    /// Closes the server's input (its stdin: a server ends at its end) once
    /// the lines queued are written.
    pub(crate) fn close_input(&self) {
        if let Ok(mut lines) = self.lines.lock() {
            lines.take();
        }
    }

    /// Ends the reader and the writer, whatever they wait for (a process the
    /// server started in a session of its own may hold its pipes open).
    pub(crate) fn abandon_io(&self) {
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.drain(..).for_each(|task| task.abort());
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
        self.closed.send_if_modified(|closed| match closed {
            Some(_) => false,
            None => {
                *closed = Some(why.to_owned());
                true
            }
        });
        for (_, waiting) in waiting {
            let _ = waiting.answer.send(Err(McpError::Closed(why.to_owned())));
        }
    }

    /// The writer's queue, while the server's input is open.
    fn sender(&self) -> Result<mpsc::Sender<Vec<u8>>, McpError> {
        let lines = self.lines.lock().map_err(|_| McpError::Closed("poisoned".into()))?;
        lines.clone().ok_or_else(|| McpError::Closed("its input is closed".into()))
    }

    /// Queues one message, waiting for room.
    async fn send(&self, message: &Value) -> Result<(), McpError> {
        let line = line_of(message)?;
        let sender = self.sender()?;
        sender.send(line).await.map_err(|_| McpError::Closed("its input is closed".into()))
    }

    /// Settles the response `message` to request `id`.
    fn answer(&self, id: u64, message: &Value) -> bool {
        self.settle(id, |method| match (message.get("result"), message.get("error")) {
            (Some(result), None) => Ok(result.clone()),
            (None, Some(error)) => Err(McpError::refused(method, error)),
            (Some(_), Some(_)) => {
                Err(McpError::Protocol(format!("the answer to {method} has both a result and an error")))
            }
            (None, None) => {
                Err(McpError::Protocol(format!("the answer to {method} has neither a result nor an error")))
            }
        })
    }

    /// Settles request `id` with the answer `answer` makes of its method;
    /// false when no such request is in flight.
    fn settle(&self, id: u64, answer: impl FnOnce(String) -> Answer) -> bool {
        let Some(waiting) = self.pending.lock().ok().and_then(|mut p| p.waiting.remove(&id)) else {
            return false;
        };
        let _ = waiting.answer.send(answer(waiting.method));
        true
    }

    /// Whether `id` is that of a request given up unanswered (which the
    /// server may still answer, or answer with a refusal): forgotten now.
    fn forgotten(&self, id: &Value) -> bool {
        let Some(id) = id.as_u64() else { return false };
        let Ok(mut pending) = self.pending.lock() else { return false };
        let found = pending.abandoned.iter().position(|&a| a == id);
        found.map(|at| pending.abandoned.remove(at)).is_some()
    }

    /// Passes progress `params` to the request in flight whose progress token
    /// is `token`; progress for no such request, or beyond its queue, is dropped.
    fn progress(&self, token: &str, params: Value) {
        let Ok(pending) = self.pending.lock() else { return };
        let route = pending.waiting.values().filter_map(|w| w.progress.as_ref()).find(|route| route.token == token);
        if let Some(route) = route {
            let _ = route.updates.try_send(params);
        }
    }

    /// Passes `notice` to the holder, if it listens.
    fn tell(&self, notice: ServerNotice) {
        self.notices.tell(notice)
    }
}

/// A progress token as text (a number as its digits); none for anything else.
fn token_of(token: &Value) -> Option<String> {
    match token {
        Value::String(token) => Some(token.clone()),
        Value::Number(token) => Some(token.to_string()),
        _ => None,
    }
}

/// The notification `method` with `params` as a line of the wire.
fn notification_line(method: &str, params: Value) -> Result<Vec<u8>, McpError> {
    line_of(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// One message as a line of the wire.
fn line_of(message: &Value) -> Result<Vec<u8>, McpError> {
    let mut line = serde_json::to_vec(message).map_err(|e| McpError::Protocol(e.to_string()))?;
    line.push(b'\n');
    Ok(line)
}

/// A request in flight: dropped unsettled (timed out, or its future
/// dropped), it leaves the pending set and, once it was queued, a
/// cancellation is queued after it.
struct InFlight<'a> {
    connection: &'a Connection,
    id: u64,
    settled: bool,
    sent: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.connection.pending.lock() {
            // A request given up unanswered: its late answer is dropped quietly.
            if pending.waiting.remove(&self.id).is_some() && self.sent {
                if pending.abandoned.len() == ABANDONED_KEPT {
                    pending.abandoned.pop_front();
                }
                pending.abandoned.push_back(self.id);
            }
        }
        if self.settled || !self.sent {
            return;
        }
        let params = json!({"requestId": self.id, "reason": "the request was cancelled"});
        let (Ok(sender), Ok(line)) = (self.connection.sender(), notification_line("notifications/cancelled", params))
        else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(line)) = sender.try_send(line) {
            // Timeouts come when the server reads slowly: wait for room on a
            // task of its own, for a while.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(CANCEL_PATIENCE, sender.send(line)).await;
                });
            }
        }
    }
}

/// Writes the queued lines, each whole, until the queue closes (then closes
/// the output) or a write fails (the server's input is gone).
async fn write_lines(mut output: impl AsyncWrite + Send + Unpin, mut queued: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = queued.recv().await {
        let written = async {
            output.write_all(&line).await?;
            output.flush().await
        };
        if written.await.is_err() {
            return;
        }
    }
    let _ = output.shutdown().await;
}

impl Rpc for Connection {
    fn exchange<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        timeout: Duration,
        how: Exchange,
    ) -> BoxFuture<'a, Answer> {
        Box::pin(Connection::exchange(self, method, params, timeout, how))
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        _: Option<&'static str>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(std::future::ready(Connection::notify(self, method, params)))
    }

    fn notices(&self) -> mpsc::Receiver<ServerNotice> {
        Connection::notices(self)
    }

    fn take_tools_changed(&self) -> bool {
        self.notices.take_tools_changed()
    }

    fn dropped_notices(&self) -> u64 {
        Connection::dropped_notices(self)
    }

    fn closed(&self) -> BoxFuture<'_, String> {
        Box::pin(Connection::closed(self))
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
            Ok(Frame::Oversized { length, head, tail }) => {
                let over = format!("a message of {length} bytes, over the limit of {max_message_bytes}");
                match oversized(&head, &tail) {
                    // The answer to one request: that one fails.
                    Oversized::Answer(id) => {
                        let failed = |method| Err(McpError::Protocol(format!("its answer to {method} was {over}")));
                        if !connection.settle(id, failed) && !connection.forgotten(&Value::from(id)) {
                            connection
                                .tell(ServerNotice::Ignored(format!("{over}, to no request in flight (id {id})")));
                        }
                    }
                    Oversized::Servers => connection.tell(ServerNotice::Ignored(format!("{over}, dropped unread"))),
                    // Which request it answered cannot be told: every request fails.
                    Oversized::Unknown => break format!("it sent {over}"),
                }
            }
            Ok(Frame::End) => break "its output ended".to_owned(),
            Err(e) => break format!("reading its output failed: {e}"),
        }
    };
    if let Some(connection) = connection.upgrade() {
        let _ = connection.read_all.send(true);
    }
    let why = why_closed().await;
    if let Some(connection) = connection.upgrade() {
        connection.fail_all(&format!("{ending}{why}"));
        connection.close_input();
    }
}

/// What a line over the size limit is, told from its first and last bytes.
enum Oversized {
    /// The answer to the request with this id: a response names its id
    /// before its result or error (`{"jsonrpc":"2.0","id":7,"result":...`)
    /// or after it, last (`...,"jsonrpc":"2.0","id":7}`).
    Answer(u64),
    /// A request or notification of the server's: its first bytes show a
    /// `"method"` key before any result or error.
    Servers,
    /// Neither can be told.
    Unknown,
}

fn oversized(head: &[u8], tail: &[u8]) -> Oversized {
    let head = String::from_utf8_lossy(head);
    let body = ["\"result\"", "\"error\""].iter().filter_map(|key| head.find(key)).min();
    // A "method" key before the body makes it a message of the server's; one
    // inside the body (a result that holds such a key) does not.
    match (head.find("\"method\""), body) {
        (Some(method), body) if body.is_none_or(|body| method < body) => Oversized::Servers,
        (_, None) => Oversized::Unknown,
        (_, Some(body)) => answered_id(&head[..body], tail).map_or(Oversized::Unknown, Oversized::Answer),
    }
}

/// The id of an oversized answer (see [`Oversized::Answer`]) from what comes
/// before its body, or else from its last bytes.
fn answered_id(before_body: &str, tail: &[u8]) -> Option<u64> {
    let number = |text: &str| -> Option<(u64, usize)> {
        let digits = text.trim_start();
        let skipped = text.len() - digits.len();
        let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
        digits[..end].parse().ok().map(|id| (id, skipped + end))
    };
    if let Some(key) = before_body.find("\"id\":") {
        return number(&before_body[key + 5..]).map(|(id, _)| id);
    }
    let tail = String::from_utf8_lossy(tail);
    let tail = tail.trim_end();
    let key = tail.rfind("\"id\":")?;
    let (id, used) = number(&tail[key + 5..])?;
    (tail[key + 5 + used..].trim() == "}").then_some(id)
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
            if !known && !connection.forgotten(id) {
                let id = quoted(id);
                connection.tell(ServerNotice::Ignored(format!("an answer to no request in flight (id {id})")));
            }
        }
        (Some(_), Some(id)) if !answerable_id(id) => {
            connection.tell(ServerNotice::Ignored(format!("a request with the id {}, left unanswered", quoted(id))));
        }
        (Some(method), Some(id)) => {
            let reply = reply_to(method, id);
            // Without waiting: the reader must go on reading whatever happens.
            if let (Ok(line), Ok(sender)) = (line_of(&reply), connection.sender()) {
                let _ = sender.try_send(line);
            }
        }
        (Some("notifications/tools/list_changed"), None) => connection.tell(ServerNotice::ToolsChanged),
        (Some("notifications/subscriptions/acknowledged"), None) => connection.tell(ServerNotice::Subscribed),
        // The server ended a request of ours (a subscription): it fails.
        (Some("notifications/cancelled"), None) => {
            let params = message.get("params").unwrap_or(&Value::Null);
            let reason = bounded(params["reason"].as_str().unwrap_or("no reason given"), TEXT_BYTES);
            if let Some(id) = params["requestId"].as_u64() {
                connection.settle(id, |method| Err(McpError::Closed(format!("it ended {method}: {reason}"))));
            }
        }
        (Some("notifications/progress"), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            if let Some(token) = token_of(&params["progressToken"]) {
                connection.progress(&token, params);
            }
        }
        (Some(_), None) => {}
        (None, None) => connection.tell(ServerNotice::Ignored("a message with neither a method nor an id".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_line_is_told_by_its_ends() {
        let kind = |head: &str, tail: &str| match oversized(head.as_bytes(), tail.as_bytes()) {
            Oversized::Answer(id) => format!("answer {id}"),
            Oversized::Servers => "servers".to_owned(),
            Oversized::Unknown => "unknown".to_owned(),
        };
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":7,"result":{"method":"#, "}}"), "answer 7");
        assert_eq!(kind(r#"{"result":{"content":[{"text":"xx"#, r#"x"}]},"jsonrpc":"2.0","id":12}"#), "answer 12");
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"xx"#, "x\"}}"),
            "servers"
        );
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params""#, "}}"), "servers");
        assert_eq!(kind(r#"{"jsonrpc":"2.0","result":{"text":"xx"#, r#"x"},"id":"7"}"#), "unknown");
        assert_eq!(kind(r#"["xx"#, "x]"), "unknown");
    }

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
            Err(McpError::Refused {
                method: "tools/list".into(),
                code: -32602,
                message: "bad cursor".into(),
                data: Value::Null
            })
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

    #[tokio::test]
    async fn a_notice_flood_is_bounded_and_stray_progress_is_not_passed_on() {
        let (connection, mut from_client, mut to_client) = played();
        let mut notices = connection.notices();
        let garbage = "not json\n".repeat(3000);
        let changed = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n".repeat(3000);
        let stray = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"x\",\"progress\":1}}\n";
        to_client.write_all(format!("{stray}{changed}{garbage}").as_bytes()).await.unwrap();
        // A ping after the flood: its answer shows the flood was read.
        to_client.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n").await.unwrap();
        assert_eq!(read_line(&mut from_client).await["id"], 1);
        let queued = crate::mcp::notices::QUEUED_NOTICES;
        assert_eq!(connection.dropped_notices(), 3000 + 1 - queued as u64);
        let mut seen = Vec::new();
        while let Ok(notice) = notices.try_recv() {
            seen.push(notice);
        }
        assert_eq!(seen.len(), queued);
        assert_eq!(seen[0], ServerNotice::ToolsChanged, "a storm of changes is one notice; stray progress none");
        assert!(seen[1..].iter().all(|notice| matches!(notice, ServerNotice::Ignored(_))));
        assert!(connection.notices.take_tools_changed() && !connection.notices.take_tools_changed());
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_fails_its_request_alone() {
        let (connection, mut from_client, mut to_client) = played();
        let ask = |connection: &Arc<Connection>| {
            let connection = Arc::clone(connection);
            tokio::spawn(async move { connection.request("tools/call", json!({}), Duration::from_secs(30)).await })
        };
        let (first, second, third) = (ask(&connection), ask(&connection), ask(&connection));
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(read_line(&mut from_client).await["id"].as_u64().unwrap());
        }
        ids.sort();
        let big = "w".repeat(1 << 13);
        let id_first = format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"text\":\"{big}\"}}}}\n", ids[0]);
        let id_last = format!("{{\"result\":{{\"id\":99,\"t\":\"{big}\"}},\"jsonrpc\":\"2.0\",\"id\": {} }}\n", ids[1]);
        let fine = format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{}}}}\n", ids[2]);
        to_client.write_all(format!("{id_first}{id_last}{fine}").as_bytes()).await.unwrap();
        let over = |answer: Answer| matches!(answer, Err(McpError::Protocol(why)) if why.contains("over the limit"));
        let (first, second, third) = (first.await.unwrap(), second.await.unwrap(), third.await.unwrap());
        assert!(over(first.clone()) && over(second.clone()), "{first:?} {second:?}");
        assert_eq!(third, Ok(json!({})), "the other request got its answer");
        // A message of the server's is dropped, and the request goes on.
        let notice = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{big}\"}}\n");
        let waiting = ask(&connection);
        let id = read_line(&mut from_client).await["id"].clone();
        to_client.write_all(notice.as_bytes()).await.unwrap();
        to_client
            .write_all(format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "result": {}})).as_bytes())
            .await
            .unwrap();
        assert_eq!(waiting.await.unwrap(), Ok(json!({})));
        // A line that cannot be told fails every request.
        let anonymous = format!("{{\"jsonrpc\":\"2.0\",\"params\":\"{big}\"}}\n");
        let waiting = ask(&connection);
        let _ = read_line(&mut from_client).await;
        to_client.write_all(anonymous.as_bytes()).await.unwrap();
        assert!(matches!(waiting.await.unwrap(), Err(McpError::Closed(why)) if why.contains("over the limit")));
    }
}
