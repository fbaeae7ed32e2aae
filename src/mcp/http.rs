//! An MCP server over streamable HTTP: every message its own POST, answered
//! with one JSON body or a stream of server-sent events that ends with the
//! answer (the request's progress and the server's notices before it).
//!
//! Both eras: a stateless (2026-07-28) request carries `MCP-Protocol-Version`,
//! `Mcp-Method` and, for `tools/call`, `Mcp-Name`; it is cancelled by closing
//! its exchange. A handshake-era request carries the version agreed and the
//! `Mcp-Session-Id` the `initialize` answer gave (only that answer's), is
//! cancelled with a posted `notifications/cancelled`, and the server's own
//! notices come on a GET stream, opened after `notifications/initialized`
//! and opened again while the session lasts. A 404 to a request of the
//! session ends it: the connection is closed, and the server is started
//! anew (a fresh `initialize`) when next needed. A session is ended with
//! DELETE when ferrule stops the server.
//!
//! Every body and event is bounded by the largest message; a redirect is
//! followed only within the endpoint's origin; the configured headers and the
//! bearer token are sent with every request and scrubbed from every error.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::bounded::{answerable_id, bounded, quoted, NAME_BYTES, TEXT_BYTES};
use super::client::MODERN_VERSION;
use super::config::McpServerConfig;
use super::error::McpError;
use super::log::{LogSource, ServerLog};
use super::notices::Notices;
use super::rpc::{reply_to, Answer, Exchange, Rpc, ServerNotice};
use crate::provider::http::{redirect_refusal, same_origin_redirects, Secret, SseParser};
use crate::BoxFuture;

/// The bytes of an error body read for its message.
const ERROR_BODY_BYTES: usize = 64 << 10;
/// The characters of a body that is no JSON-RPC answer kept in an error.
const QUOTED_CHARS: usize = 200;
/// How long ending a session (DELETE) may take.
const END_SESSION_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause before a GET stream is opened again, doubling up to the longest.
const FIRST_REOPEN_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_REOPEN_PAUSE: Duration = Duration::from_secs(30);

const SESSION_HEADER: &str = "mcp-session-id";
/// The shortest value of a credential's header scrubbed from what the server
/// says: shorter ones (`a`, `on`) would scrub ordinary words. Other headers'
/// values are secrets from eight characters, as `model.headers`' are.
const SECRET_CHARS: usize = 4;
/// Words that make a header's name a credential's.
const CREDENTIAL_WORDS: [&str; 9] =
    ["auth", "key", "token", "secret", "password", "cookie", "session", "credential", "signature"];
/// The posts made without waiting that may be under way at once, and how
/// long each may take.
const BACKGROUND_POSTS: usize = 8;
const BACKGROUND_POST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a cut stream is resumed, and the pause before a resumption
/// when the stream asked for none.
const MAX_RESUMPTIONS: usize = 2;
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// A server at a URL. Shared (`Arc`) by the client and the server's task;
/// any thread of the runtime.
pub struct HttpLink {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The configured header values and the token, scrubbed from errors.
    secrets: Vec<Secret>,
    max_message_bytes: usize,
    next_id: AtomicU64,
    /// The handshake era's session, once `initialize` gave one.
    session: Mutex<Option<HeaderValue>>,
    /// The version agreed in the handshake, for the GET stream.
    version: Mutex<Option<&'static str>>,
    notices: Notices,
    closed: watch::Sender<Option<String>>,
    log: Arc<ServerLog>,
    /// Ends the GET stream and the posts under way.
    background: CancellationToken,
    /// Bounds the posts made without waiting (replies, cancellations).
    background_posts: Arc<tokio::sync::Semaphore>,
}

impl HttpLink {
    /// A link to the server of `config` (its `url`, `headers` and the token
    /// its `bearer_token_env` names, read now); `max_message_bytes` bounds
    /// every body and event read, and notes go to `log`.
    pub fn new(config: &McpServerConfig, max_message_bytes: usize, log: Arc<ServerLog>) -> Result<HttpLink, McpError> {
        let url = config.url.as_deref().unwrap_or_default();
        let url = reqwest::Url::parse(url).map_err(|e| McpError::Spawn(format!("its url does not parse: {e}")))?;
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        for (name, value) in &config.headers {
            let credential = names_a_credential(name) && value.chars().count() >= SECRET_CHARS;
            secrets.extend(match credential {
                true => Some(Secret::new(value.clone())),
                false => Secret::header_value(value),
            });
            let (Ok(name), Ok(mut value)) =
                (HeaderName::try_from(name.as_str()), HeaderValue::try_from(value.as_str()))
            else {
                return Err(McpError::Spawn(format!("the header {name} is not a valid HTTP header")));
            };
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if let Some(variable) = &config.bearer_token_env {
            let token = std::env::var(variable).ok().filter(|token| !token.trim().is_empty()).ok_or_else(|| {
                McpError::Spawn(format!(
                    "the environment variable {variable} that should hold its bearer token is not set"
                ))
            })?;
            let mut value = HeaderValue::try_from(format!("Bearer {}", token.trim()))
                .map_err(|_| McpError::Spawn(format!("the token in {variable} is not a valid HTTP header value")))?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
            secrets.push(Secret::new(token.trim().to_owned()));
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        let client = reqwest::Client::builder()
            .user_agent(concat!("ferrule/", env!("CARGO_PKG_VERSION")))
            .redirect(same_origin_redirects())
            .default_headers(headers)
            .build()
            .map_err(|e| McpError::Spawn(format!("the HTTP client could not be built: {e}")))?;
        let inner = Inner {
            client,
            url,
            secrets,
            max_message_bytes,
            next_id: AtomicU64::new(1),
            session: Mutex::new(None),
            version: Mutex::new(None),
            notices: Notices::default(),
            closed: watch::Sender::new(None),
            log,
            background: CancellationToken::new(),
            background_posts: Arc::new(tokio::sync::Semaphore::new(BACKGROUND_POSTS)),
        };
        Ok(HttpLink { inner: Arc::new(inner) })
    }

    /// Ends the handshake era's session, if there is one (DELETE, within 5 s;
    /// a server may refuse it), and the GET stream.
    pub async fn end_session(&self) {
        self.inner.background.cancel();
        let session = self.inner.session.lock().ok().and_then(|mut session| session.take());
        if let Some(session) = session {
            let request =
                self.inner.client.request(Method::DELETE, self.inner.url.clone()).header(SESSION_HEADER, session);
            let _ = tokio::time::timeout(END_SESSION_TIMEOUT, request.send()).await;
        }
        self.inner.close("ferrule ended its session");
    }
}

impl Drop for HttpLink {
    fn drop(&mut self) {
        self.inner.background.cancel();
    }
}

impl Rpc for HttpLink {
    fn exchange<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        timeout: Duration,
        how: Exchange,
    ) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            // A handshake-era request given up is cancelled with a notice; a
            // stateless one by closing its exchange, which dropping it does.
            let legacy = how.version.is_some_and(|version| version != MODERN_VERSION);
            let mut guard =
                Unanswered { inner: &self.inner, id, version: how.version, armed: how.cancellable && legacy };
            let answer = match tokio::time::timeout(timeout, self.inner.post(method, &body, &how)).await {
                Ok(answer) => answer,
                Err(_) => Err(McpError::TimedOut { method: method.to_owned(), millis: timeout.as_millis() }),
            };
            guard.armed &= matches!(answer, Err(McpError::TimedOut { .. }));
            let answer = match answer {
                // What a call answers reaches the model and events; a server
                // that echoes headers has them scrubbed from it.
                Ok(result) if method == "tools/call" => Ok(self.inner.scrub_json(result)),
                Ok(result) => Ok(result),
                Err(error) => Err(self.inner.scrub(error)),
            };
            // A server that cannot be reached any more is gone: it is reached
            // anew (a fresh handshake) when next needed. An exchange that broke
            // midway (a proxy's idle timeout, a connection reset) fails alone.
            if let Err(McpError::Unreachable(why)) = &answer {
                self.inner.close(&format!("it could not be reached: {why}"));
            }
            answer
        })
    }

    fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        version: Option<&'static str>,
    ) -> BoxFuture<'a, Result<(), McpError>> {
        Box::pin(async move {
            let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
            let response = self.inner.send(Method::POST, Some(&body), method, version, &[]).await?;
            let status = response.status();
            if !status.is_success() {
                let text = body_start(&read_bounded(response, ERROR_BODY_BYTES).await.unwrap_or_default());
                return Err(self.inner.scrub(McpError::Status {
                    method: method.to_owned(),
                    status: status.as_u16(),
                    text,
                }));
            }
            if method == "notifications/initialized" {
                if let Ok(mut agreed) = self.inner.version.lock() {
                    *agreed = version;
                }
                // A server without sessions has no stream of its own notices.
                if self.inner.session.lock().is_ok_and(|session| session.is_some()) {
                    tokio::spawn(notice_stream(Arc::downgrade(&self.inner), self.inner.background.clone()));
                }
            }
            Ok(())
        })
    }

    fn notices(&self) -> mpsc::Receiver<ServerNotice> {
        self.inner.notices.subscribe()
    }

    fn take_tools_changed(&self) -> bool {
        self.inner.notices.take_tools_changed()
    }

    fn dropped_notices(&self) -> u64 {
        self.inner.notices.dropped()
    }

    fn closed(&self) -> BoxFuture<'_, String> {
        Box::pin(async move {
            let mut closed = self.inner.closed.subscribe();
            let why = closed.wait_for(Option::is_some).await;
            why.map(|why| why.clone().unwrap_or_default()).unwrap_or_default()
        })
    }
}

impl Inner {
    /// Sends one message (`body`; none for the GET stream) with the headers
    /// of its era.
    async fn send(
        &self,
        method_http: Method,
        body: Option<&Value>,
        method: &str,
        version: Option<&'static str>,
        headers: &[(String, String)],
    ) -> Result<reqwest::Response, McpError> {
        let mut request = self.client.request(method_http, self.url.clone());
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(version) = version {
            request = request.header("mcp-protocol-version", version);
        }
        match version {
            Some(MODERN_VERSION) => {
                request = request.header("mcp-method", method);
                if let Some(name) =
                    body.and_then(|body| body["params"]["name"].as_str()).filter(|_| method == "tools/call")
                {
                    request = request.header("mcp-name", header_text(name));
                }
            }
            // The handshake itself carries no session: only its answer's counts.
            Some(_) => {
                if let Some(session) = self.session.lock().ok().and_then(|s| s.clone()) {
                    request = request.header(SESSION_HEADER, session);
                }
            }
            None => {}
        }
        if let Some(body) = body {
            request = request.body(serde_json::to_vec(body).map_err(|e| McpError::Protocol(e.to_string()))?);
        } else {
            request = request.header(ACCEPT, "text/event-stream");
        }
        request.send().await.map_err(|e| match e.is_connect() {
            true => McpError::Unreachable(network_text(&e)),
            false => McpError::Network(network_text(&e)),
        })
    }

    /// Posts one request and reads its answer.
    async fn post(self: &Arc<Self>, method: &str, body: &Value, how: &Exchange) -> Answer {
        let had_session = self.session.lock().is_ok_and(|s| s.is_some());
        let response = self.send(Method::POST, Some(body), method, how.version, &how.headers).await?;
        let status = response.status();
        if method == "initialize" && status.is_success() {
            let session = response.headers().get(SESSION_HEADER).filter(|v| v.to_str().is_ok()).cloned();
            if let Ok(mut current) = self.session.lock() {
                *current = session;
            }
        }
        if !status.is_success() {
            if status == StatusCode::NOT_FOUND && had_session && how.version != Some(MODERN_VERSION) {
                let why = "its session ended (HTTP 404)";
                self.close(why);
                return Err(McpError::Closed(why.to_owned()));
            }
            let text = read_bounded(response, ERROR_BODY_BYTES).await.unwrap_or_default();
            return match serde_json::from_slice::<Value>(&text) {
                Ok(message) if message["error"].is_object() => Err(McpError::refused(method, &message["error"])),
                _ => Err(McpError::Status {
                    method: method.to_owned(),
                    status: status.as_u16(),
                    text: body_start(&text),
                }),
            };
        }
        let event_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        if event_stream {
            let progress = Progress::of(body, how);
            let asked = Some((method, &progress));
            let mut outcome = self.read_events(response, asked).await;
            // A handshake-era stream cut before its answer is resumed where it
            // was cut: a GET with its last event id, after the pause it asked for.
            let legacy = how.version.is_some_and(|version| version != MODERN_VERSION);
            let mut last_event_id = None;
            for _ in 0..MAX_RESUMPTIONS {
                let Err(cut) = &outcome else { break };
                last_event_id = cut.last_event_id.clone().or(last_event_id);
                let (true, Some(id)) = (legacy, last_event_id.clone()) else { break };
                tokio::time::sleep(cut.retry.unwrap_or(DEFAULT_RETRY)).await;
                let resume = [("last-event-id".to_owned(), id)];
                let response = self.send(Method::GET, None, method, how.version, &resume).await?;
                if !response.status().is_success() {
                    let status = response.status().as_u16();
                    return Err(McpError::Status {
                        method: method.to_owned(),
                        status,
                        text: " resuming its stream".into(),
                    });
                }
                outcome = self.read_events(response, asked).await;
            }
            return outcome.unwrap_or_else(|cut| Err(cut.why));
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Err(McpError::Protocol(format!("it accepted {method} without answering it")));
        }
        let text = read_bounded(response, self.max_message_bytes).await.map_err(|e| over_limit(method, e))?;
        let message: Value = serde_json::from_slice(&text)
            .map_err(|e| McpError::Protocol(format!("its answer to {method} is not JSON: {e}")))?;
        answer_of(method, &message)
    }

    /// Reads server-sent events: notices go to the holder, progress to the
    /// request `asked` (when there is one), the server's requests are
    /// answered; the answer to `asked` ends the reading. A stream that ends
    /// or breaks without it (a GET stream always does) is cut: why, and
    /// where it could be resumed.
    async fn read_events(
        self: &Arc<Self>,
        mut response: reqwest::Response,
        asked: Option<(&str, &Progress)>,
    ) -> Result<Answer, StreamCut> {
        let mut parser = SseParser::new(self.max_message_bytes);
        let mut events = Vec::new();
        let method = asked.map_or("", |(method, _)| method);
        let cut = |parser: &SseParser, why: McpError| StreamCut {
            why,
            last_event_id: parser.last_event_id().map(str::to_owned),
            retry: parser.retry_ms().map(Duration::from_millis),
        };
        loop {
            let chunk = response.chunk().await;
            let ended = matches!(chunk, Ok(None));
            let fed = match chunk {
                Ok(Some(chunk)) => parser.feed(&chunk, &mut events),
                Ok(None) => parser.finish(&mut events),
                Err(e) => {
                    let why = format!("its stream for {method} broke: {}", network_text(&e));
                    return Err(cut(&parser, McpError::Network(why)));
                }
            };
            if let Err(error) = fed {
                let why = format!("its stream for {method} broke the protocol: {}", error.message);
                return Err(cut(&parser, McpError::Protocol(why)));
            }
            for event in events.drain(..) {
                if event.data.trim().is_empty() {
                    continue;
                }
                let Ok(message @ Value::Object(_)) = serde_json::from_str::<Value>(&event.data) else {
                    self.note("ignored an event that is no JSON-RPC message".into());
                    continue;
                };
                if let Some(answer) = self.received(&message, asked) {
                    return Ok(answer);
                }
            }
            if ended {
                let why = McpError::Closed(format!("its stream for {method} ended without an answer"));
                return Err(cut(&parser, why));
            }
        }
    }

    /// Handles one message of a stream; the answer to `asked`, when it is one.
    fn received(self: &Arc<Self>, message: &Value, asked: Option<(&str, &Progress)>) -> Option<Answer> {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (None, Some(_)) => match asked {
                Some((method, _)) => Some(answer_of(method, message)),
                None => {
                    self.note("ignored an answer on its notice stream".into());
                    None
                }
            },
            (Some(method), Some(id)) => {
                self.reply(method, id.clone());
                None
            }
            (Some("notifications/tools/list_changed"), None) => {
                self.notices.tell(ServerNotice::ToolsChanged);
                None
            }
            (Some("notifications/subscriptions/acknowledged"), None) => {
                self.notices.tell(ServerNotice::Subscribed);
                None
            }
            (Some("notifications/progress"), None) => {
                if let Some((_, progress)) = asked {
                    progress.pass(self.scrub_json(message.get("params").cloned().unwrap_or_default()));
                }
                None
            }
            // A subscription the server ended.
            (Some("notifications/cancelled"), None) => asked.map(|(method, _)| {
                let reason = bounded(message["params"]["reason"].as_str().unwrap_or("no reason given"), TEXT_BYTES);
                Err(McpError::Closed(format!("it ended {method}: {reason}")))
            }),
            (Some(_), None) | (None, None) => None,
        }
    }

    /// Answers a request of the server's on a stream (a handshake-era server
    /// may ping): a ping with `{}`, anything else as not offered.
    fn reply(self: &Arc<Self>, method: &str, id: Value) {
        // Only a handshake-era server asks ferrule anything; a stateless one may not.
        let Some(version) = self.version.lock().ok().and_then(|v| *v) else {
            self.note(format!("ignored a request of the server's ({})", bounded(method, NAME_BYTES)));
            return;
        };
        if !answerable_id(&id) {
            return self.note(format!("a request with the id {}, left unanswered", quoted(&id)));
        }
        self.post_in_background(reply_to(method, &id), "", Some(version));
    }

    /// Posts `body` without waiting (the stream being read must go on): at
    /// most a few such posts at once, each within a few seconds; past them,
    /// the post is dropped and noted.
    fn post_in_background(self: &Arc<Self>, body: Value, method: &'static str, version: Option<&'static str>) {
        let Ok(permit) = Arc::clone(&self.background_posts).try_acquire_owned() else {
            return self.note(format!(
                "dropped a {}: too many are under way",
                if method.is_empty() { "reply" } else { method }
            ));
        };
        let (inner, stop) = (Arc::downgrade(self), self.background.clone());
        tokio::spawn(async move {
            let Some(link) = inner.upgrade() else { return };
            let send = link.send(Method::POST, Some(&body), method, version, &[]);
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::timeout(BACKGROUND_POST_TIMEOUT, send) => {}
            }
            drop(permit);
        });
    }

    /// Adds a note of ferrule's to the server's log, scrubbed of secrets.
    fn note(&self, text: String) {
        self.log.push(LogSource::Ferrule, self.clean(text));
    }

    /// `text` with every configured secret scrubbed from it.
    fn clean(&self, text: String) -> String {
        self.secrets.iter().fold(text, |text, secret| secret.scrub(&text))
    }

    /// Closes the connection for good: `why`.
    fn close(&self, why: &str) {
        self.closed.send_if_modified(|closed| match closed {
            Some(_) => false,
            None => {
                *closed = Some(why.to_owned());
                true
            }
        });
    }

    /// `value` with every configured secret scrubbed from its strings (what a
    /// server that echoes headers answers).
    fn scrub_json(&self, value: Value) -> Value {
        match self.secrets.is_empty() {
            true => value,
            false => scrub_value(value, &|text| self.clean(text)),
        }
    }

    /// `error` with every configured secret scrubbed from the server's words.
    fn scrub(&self, error: McpError) -> McpError {
        let clean = |text| self.clean(text);
        match error {
            McpError::Refused { method, code, message, data } => {
                McpError::Refused { method, code, message: clean(message), data: scrub_value(data, &clean) }
            }
            McpError::Status { method, status, text } => McpError::Status { method, status, text: clean(text) },
            McpError::Closed(why) => McpError::Closed(clean(why)),
            McpError::Unreachable(why) => McpError::Unreachable(clean(why)),
            McpError::Network(why) => McpError::Network(clean(why)),
            McpError::Protocol(why) => McpError::Protocol(clean(why)),
            other => other,
        }
    }
}

/// A stream that ended or broke before its answer: why, its last event id
/// and the pause it asked for before a reader resumes it.
struct StreamCut {
    why: McpError,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

/// A handshake-era request given up before its answer: dropped armed, it
/// posts `notifications/cancelled` for it, in the background.
struct Unanswered<'a> {
    inner: &'a Arc<Inner>,
    id: u64,
    version: Option<&'static str>,
    armed: bool,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": self.id, "reason": "the request was cancelled"}});
        self.inner.post_in_background(body, "notifications/cancelled", self.version);
    }
}

/// Where the progress of one request goes.
struct Progress {
    token: Option<Value>,
    updates: Option<mpsc::Sender<Value>>,
}

impl Progress {
    fn of(body: &Value, how: &Exchange) -> Progress {
        let token = body["params"]["_meta"].get("progressToken").cloned();
        Progress { token, updates: how.progress.clone() }
    }

    /// Passes on the params of a progress notification for this request.
    fn pass(&self, params: Value) {
        if let (Some(token), Some(updates)) = (&self.token, &self.updates) {
            if params.get("progressToken") == Some(token) {
                let _ = updates.try_send(params);
            }
        }
    }
}

/// The handshake era's GET stream of the server's own notices: opened, read
/// to its end, and opened again after a pause, until the server refuses it
/// (405), the session ends or the link goes.
async fn notice_stream(inner: Weak<Inner>, stop: CancellationToken) {
    let mut pause = FIRST_REOPEN_PAUSE;
    loop {
        let Some(link) = inner.upgrade() else { return };
        let version = link.version.lock().ok().and_then(|v| *v);
        let opened = tokio::select! {
            _ = stop.cancelled() => return,
            opened = link.send(Method::GET, None, "", version, &[]) => opened,
        };
        match opened {
            Ok(response) if response.status().is_success() => {
                pause = FIRST_REOPEN_PAUSE;
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = link.read_events(response, None) => {}
                }
            }
            Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => return,
            Ok(response) if response.status() == StatusCode::NOT_FOUND => {
                link.close("its session ended (HTTP 404)");
                return;
            }
            Ok(response) => link.note(format!("its notice stream was refused (HTTP {})", response.status())),
            Err(error) => link.note(format!("its notice stream failed: {error}")),
        }
        drop(link);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(LONGEST_REOPEN_PAUSE);
    }
}

/// The answer a JSON-RPC response to `method` gives.
fn answer_of(method: &str, message: &Value) -> Answer {
    match (message.get("result"), message.get("error")) {
        (Some(result), None) => Ok(result.clone()),
        (None, Some(error)) => Err(McpError::refused(method, error)),
        _ => Err(McpError::Protocol(format!("its answer to {method} has neither a result nor an error alone"))),
    }
}

/// At most `limit` bytes of a body; more is an error saying how much.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() > limit => {
                return Err(format!("a body of more than {limit} bytes"));
            }
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => return Ok(body),
            Err(e) => return Err(network_text(&e)),
        }
    }
}

fn over_limit(method: &str, problem: String) -> McpError {
    McpError::Protocol(format!("its answer to {method} was refused unread: {problem}"))
}

/// The start of a body, for an error: ": " and its first characters.
fn body_start(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.is_empty() {
        true => String::new(),
        false => format!(": {}", text.chars().take(QUOTED_CHARS).collect::<String>()),
    }
}

/// What went wrong with an exchange, without its URL (which may hold
/// credentials).
fn network_text(error: &reqwest::Error) -> String {
    if let Some(refused) = redirect_refusal(error) {
        return refused;
    }
    let mut text = match (error.is_connect(), error.is_timeout()) {
        (true, _) => "could not connect".to_owned(),
        (false, true) => "timed out".to_owned(),
        (false, false) => "the exchange failed".to_owned(),
    };
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text.push_str(&format!(": {inner}"));
        source = inner.source();
    }
    text
}

/// A value for `Mcp-Name`: as it is when it is plain visible ASCII, else
/// `=?base64?...?=` of its UTF-8 bytes.
pub(crate) fn header_text(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    match plain {
        true => value.to_owned(),
        false => {
            use base64::Engine;
            format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value))
        }
    }
}

/// Whether the header `name` carries a credential, by its name
/// (`Authorization`, `X-Api-Key`, `Cookie`...).
fn names_a_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_WORDS.iter().any(|word| name.contains(word))
}

/// `value` with every string scrubbed.
fn scrub_value(value: Value, clean: &impl Fn(String) -> String) -> Value {
    match value {
        Value::String(text) => Value::String(clean(text)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| scrub_value(v, clean)).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, scrub_value(v, clean))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sent_plain_or_in_base64() {
        assert_eq!(header_text("execute_sql"), "execute_sql");
        assert_eq!(header_text("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(header_text(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_text("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }
}
