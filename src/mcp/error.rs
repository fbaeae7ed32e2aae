//! What can go wrong talking to an MCP server.

/// A failure of one request to an MCP server, or of the server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The server's process could not be started.
    #[error("the MCP server could not start: {0}")]
    Spawn(String),
    /// The server went away (exited, or closed its output) before answering;
    /// the text says how, with the last lines of its stderr.
    #[error("the MCP server closed: {0}")]
    Closed(String),
    /// No answer within the time allowed.
    #[error("the MCP server did not answer {method} within {millis} ms")]
    TimedOut {
        /// The request's method.
        method: String,
        /// The time allowed, in milliseconds.
        millis: u128,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the MCP server refused {method}: {message} ({code})")]
    Refused {
        /// The request's method.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// The server broke the protocol (an answer of the wrong shape, a
    /// message over the size limit, a tool list that never ends).
    #[error("the MCP server broke the protocol: {0}")]
    Protocol(String),
}
