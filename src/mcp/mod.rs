//! The client side of the Model Context Protocol: the tools of the agent's
//! MCP servers (`mcp_servers` in the agent configuration), offered to the
//! model beside its own.
//!
//! Each server is reached over stdio ([`StdioServer`]: a child process in a
//! process group of its own, newline-delimited JSON-RPC on its stdin and
//! stdout, its stderr drained into a bounded [`ServerLog`]) or streamable
//! HTTP ([`HttpLink`]), behind one transport trait ([`Rpc`]). [`McpClient`]
//! finds which era of the protocol the server speaks (the stateless
//! 2026-07-28 version, or the `initialize` handshake of 2025-11-25) and
//! lists and calls its tools. [`McpServers`] keeps an agent's servers
//! running (started in the background when the agent is built, started
//! again when a run needs one that failed, stopped when the agent goes) and
//! gives their tools to each turn as one [`McpSnapshot`]: named for the model
//! ([`model_name`]), their schemas compiled in the dialect they declare, their
//! results as ferrule's ([`tool_result`]). Everything read from a server is
//! bounded: a message beyond the limit is refused without being parsed (an
//! answer fails its request alone when its id shows in its first or last
//! bytes, a message of the server's is dropped; otherwise the connection
//! fails), notices and progress are queued
//! within bounds, and the log keeps its last lines.

mod bounded;
mod client;
mod config;
mod connection;
mod error;
mod http;
mod line_reader;
mod log;
mod naming;
pub(crate) mod notices;
mod param_headers;
mod relisting;
mod report;
mod result;
mod rpc;
mod server;
mod servers;
mod stdio;
mod tool;

pub use client::{McpClient, McpTool, ToolList, HANDSHAKE_VERSION, MODERN_VERSION};
pub use config::{McpServerConfig, NeedsApproval, Transport};
pub use connection::Connection;
pub use error::McpError;
pub use http::HttpLink;
pub use log::{LogSource, NewLines, ServerLog};
pub use naming::{may_name, model_name};
pub use report::{LeftOutTool, McpServerStatus, ServerReport};
pub use result::tool_result;
pub use rpc::{Answer, Exchange, Rpc, ServerNotice};
pub use servers::{McpServers, McpSnapshot};
pub use stdio::{StdioCommand, StdioServer};
