//! The client side of the Model Context Protocol, from which ferrule is to
//! offer a server's tools to the model (not yet reachable from the agent
//! configuration).
//!
//! This module speaks the protocol's 2025-11-25 version (the `initialize`
//! handshake) to a server started as a child process, over newline-delimited
//! JSON-RPC on its stdin and stdout ([`StdioServer`]): listing its tools
//! (every page) and calling them, with the names the model sees for them
//! ([`model_name`]) and their results as ferrule's ([`tool_result`]).
//! [`Connection`] correlates requests and responses, answers the server's
//! pings, and fails every request in flight at once when the server goes
//! away. Everything it reads is bounded: a message beyond the connection's
//! limit is refused without being parsed (an answer fails its request alone
//! when its id shows in its first or last bytes, as the SDKs write it;
//! otherwise the connection fails), the notices kept for the holder are
//! bounded, and the server's stderr is drained into a bounded tail of lines.

mod client;
mod connection;
mod error;
mod line_reader;
mod naming;
mod result;
mod stdio;

pub use client::{McpClient, McpTool, ToolList};
pub use connection::{Connection, ServerNotice};
pub use error::McpError;
pub use naming::model_name;
pub use result::tool_result;
pub use stdio::{StdioCommand, StdioServer};

/// The protocol version this client asks for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
