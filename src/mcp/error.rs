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
    /// An HTTP server could not be reached (no connection could be made).
    #[error("the MCP server could not be reached: {0}")]
    Unreachable(String),
    /// An exchange with an HTTP server broke after it began.
    #[error("the exchange with the MCP server broke: {0}")]
    Network(String),
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
        /// The error's `data`, null when it gave none.
        data: serde_json::Value,
    },
    /// An HTTP server answered with a status and no JSON-RPC answer.
    #[error("the MCP server answered {method} with HTTP {status}{text}")]
    Status {
        /// The request's method.
        method: String,
        /// The HTTP status.
        status: u16,
        /// The start of the body, after ": " (empty when there is none).
        text: String,
    },
    /// The server broke the protocol (an answer of the wrong shape, a
    /// message over the size limit, a tool list that never ends).
    #[error("the MCP server broke the protocol: {0}")]
    Protocol(String),
}

impl McpError {
    /// The error a JSON-RPC `error` object answering `method` makes.
    pub(crate) fn refused(method: impl Into<String>, error: &serde_json::Value) -> McpError {
        McpError::Refused {
            method: method.into(),
            code: error["code"].as_i64().unwrap_or_default(),
            message: super::bounded::bounded(error["message"].as_str().unwrap_or_default(), super::bounded::TEXT_BYTES),
            data: super::bounded::small_data(error.get("data")),
        }
    }

    /// The JSON-RPC error code, when the server answered with one.
    pub fn code(&self) -> Option<i64> {
        match self {
            McpError::Refused { code, .. } => Some(*code),
            _ => None,
        }
    }
}
