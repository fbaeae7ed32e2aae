//! A scripted HTTP/1.1 server on 127.0.0.1 for provider tests: it answers each
//! request with the next reply from its list, records what it received, and stops
//! when dropped. Connections are kept alive between requests unless a reply says
//! `connection: close` (or ends abnormally). When it stops, every Chat Completions and Responses request body
//! it received is checked against OpenAI's specification (see `openai_spec.rs`), and
//! every Gemini body against Google's description (`gemini_spec.rs`).
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a reply's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The body is complete.
    Complete,
    /// The connection is closed in the middle of the body.
    Cut,
    /// The server stops sending but keeps the connection open.
    Stall,
    /// The server reads the request and never answers at all.
    Silent,
}

/// One scripted reply.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Vec<u8>>,
    pub ending: Ending,
}

/// Bytes per chunk when a stream is replayed: small and odd, so events and
/// line breaks straddle chunks.
const REPLAY_CHUNK: usize = 37;

impl Reply {
    /// A `text/event-stream` body sent in small chunks.
    pub fn sse(body: &[u8]) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: body.chunks(REPLAY_CHUNK).map(<[u8]>::to_vec).collect(),
            ending: Ending::Complete,
        }
    }

    /// A JSON body with `status`.
    pub fn json(status: u16, body: &[u8]) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![body.to_vec()],
            ending: Ending::Complete,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn ending(mut self, ending: Ending) -> Reply {
        self.ending = ending;
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

pub struct MockServer {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    connections: Arc<AtomicUsize>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockServer {
    /// Starts a server that gives `replies` in order (then HTTP 500).
    pub fn start(replies: Vec<Reply>) -> MockServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let recorded = requests.clone();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted_count = connections.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).unwrap();
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            let Ok((socket, _)) = accepted else { continue };
                            // Replies go out in many small writes: without this,
                            // Nagle's algorithm holds the last one for the
                            // client's delayed ACK (40 ms a request).
                            let _ = socket.set_nodelay(true);
                            accepted_count.fetch_add(1, Ordering::SeqCst);
                            tokio::spawn(serve(socket, replies.clone(), recorded.clone()));
                        }
                    }
                }
            });
        });
        MockServer { url, requests, connections, stop: Some(stop), thread: Some(thread) }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if std::thread::panicking() {
            return;
        }
        for request in self.requests() {
            let Ok(body) = serde_json::from_slice::<serde_json::Value>(&request.body) else { continue };
            if let Err(problems) = super::openai_spec::check(&request.path, &body) {
                panic!("the body sent to {} breaks OpenAI's specification:\n{problems}\n{body:#}", request.path);
            }
            if let Err(problems) = super::gemini_spec::check(&request.path, &body) {
                panic!("the body sent to {} breaks Google's description:\n{problems}\n{body:#}", request.path);
            }
        }
    }
}

async fn serve(mut socket: TcpStream, replies: Arc<Mutex<VecDeque<Reply>>>, requests: Arc<Mutex<Vec<Recorded>>>) {
    while let Some(request) = read_request(&mut socket).await {
        requests.lock().unwrap().push(request);
        let reply =
            replies.lock().unwrap().pop_front().unwrap_or_else(|| Reply::json(500, b"{\"error\": \"no reply left\"}"));
        let closing = reply.headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("connection") && v == "close");
        if !answer(&mut socket, &reply).await || closing {
            return;
        }
    }
}

/// Sends `reply`; whether the connection can carry another request.
async fn answer(socket: &mut TcpStream, reply: &Reply) -> bool {
    if reply.ending == Ending::Silent {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return false;
    }
    let mut head = format!("HTTP/1.1 {} Scripted\r\ntransfer-encoding: chunked\r\n", reply.status);
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let count = reply.chunks.len();
    for (i, chunk) in reply.chunks.iter().enumerate() {
        if reply.ending == Ending::Cut && i == count / 2 {
            // Half a chunk, then the connection goes.
            let _ = socket.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await;
            let _ = socket.write_all(&chunk[..chunk.len() / 2]).await;
            return false;
        }
        let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk.clone(), b"\r\n".to_vec()].concat();
        if socket.write_all(&framed).await.is_err() {
            return false;
        }
        let _ = socket.flush().await;
    }
    match reply.ending {
        Ending::Stall => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            false
        }
        _ => socket.write_all(b"0\r\n\r\n").await.is_ok(),
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded { method, path, headers, body })
}
