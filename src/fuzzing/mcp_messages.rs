//! What an MCP server writes to ferrule's client, over a connection's pipes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::mcp::{Connection, McpError};

/// The limit on one message the connection reads with, small enough that
/// inputs reach it.
const MAX_MESSAGE_BYTES: usize = 1 << 10;

/// Longer than any input takes to be read; a request still waiting then was lost.
const PATIENCE: Duration = Duration::from_secs(5);

/// Input: the server's output, bytes as they come, after which it closes.
/// Holds: the request in flight when the output ends is answered or failed,
/// never left waiting; an answer can only come from a message that holds a
/// result; after the end, a new request fails at once as closed; nothing
/// panics, whatever lines, sizes and ids arrive.
pub fn mcp_messages(data: &[u8]) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client);
        let gone = Box::new(|| Box::pin(async { "; it is gone".to_owned() }) as crate::BoxFuture<'static, String>);
        let connection = Connection::open(client_read, client_write, MAX_MESSAGE_BYTES, gone);
        let _notices = connection.notices();
        let (mut server_read, mut server_write) = tokio::io::split(server);
        // The server reads whatever the client writes, so that the client never waits on it.
        tokio::spawn(async move {
            let mut sink = vec![0; 4096];
            while matches!(server_read.read(&mut sink).await, Ok(n) if n > 0) {}
        });
        let asking = Arc::clone(&connection);
        let request = tokio::spawn(async move { asking.request("tools/list", json!({}), PATIENCE).await });
        tokio::task::yield_now().await;
        let _ = server_write.write_all(data).await;
        let _ = server_write.shutdown().await;
        match request.await.expect("the request's task") {
            Ok(_) => assert!(holds_a_result(data), "an answer from no result"),
            Err(McpError::TimedOut { .. }) => panic!("the request was left waiting after the server's output ended"),
            Err(_) => {}
        }
        let after = tokio::time::timeout(PATIENCE, connection.request("ping", json!({}), PATIENCE)).await;
        assert!(matches!(after, Ok(Err(McpError::Closed(_)))), "a request after the end: {after:?}");
    });
}

/// Whether a line of `data` is a JSON object with a `result`.
fn holds_a_result(data: &[u8]) -> bool {
    data.split(|&b| b == b'\n').any(|line| {
        serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|message| message.get("result").is_some())
    })
}
