//! Errors with stable codes.
//!
//! Every failure ferrule reports carries an [`ErrorCode`]: a small, named set that
//! hosts and bindings switch on. Codes are never renumbered; new ones are appended.

use std::fmt;

/// A stable error code. The numeric values are part of the C ABI
/// (`FERRULE_ERROR_*` in `ferrule.h`) and never change; JSON names each code
/// (`"INVALID_ARG"`), and the schema gives each name its number
/// (`x-ferrule-code`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schemars(transform = number_the_codes)]
pub enum ErrorCode {
    // Core failures: 1 to 31. None has been retired yet; a retired number stays
    // here as a comment and is never reused.
    /// A required pointer argument was NULL.
    NullArg = 1,
    /// A string argument was not valid UTF-8.
    InvalidUtf8 = 2,
    /// A JSON argument did not parse.
    InvalidJson = 3,
    /// An argument was well-formed but wrong: an unknown field, a bad value.
    InvalidArg = 4,
    /// A tool's input schema was rejected.
    InvalidSchema = 5,
    /// Two tools share a name.
    DuplicateTool = 6,
    /// ferrule panicked; the panic was caught at the boundary.
    Panic = 7,
    /// The operation was cancelled.
    Cancelled = 8,
    /// The operation ran out of time.
    Timeout = 9,
    /// A blocking wait was called from a thread the awaited work needs.
    WouldDeadlock = 10,
    /// A tool call was completed twice.
    AlreadyCompleted = 11,
    /// The runtime was already started or configured.
    AlreadyInitialized = 12,
    /// The call came from a process forked after the runtime started.
    Forked = 13,
    /// The runtime is shutting down.
    Shutdown = 14,
    /// A tool whose `on_error` is `fatal` failed, ending the run.
    ToolFailed = 15,
    /// The scripted model was asked for more turns than its script holds.
    ScriptExhausted = 16,
    /// The system refused ferrule a thread (a thread or memory limit).
    ResourceExhausted = 17,
    /// The model's final answer did not satisfy the agent's `output_schema`, also
    /// after `output_retries` corrections.
    InvalidOutput = 18,
    /// A hook aborted the run (`{"abort": "reason"}`).
    HookAborted = 19,
    /// An MCP server the agent configuration marks `required` was not ready
    /// by its startup timeout, or could not be started again.
    McpUnavailable = 20,
    // Model request failures: 32 to 63.
    /// The provider rejected the credentials (HTTP 401, 403).
    ProviderAuth = 32,
    /// The provider rejected the request (HTTP 400, 413, 422).
    ProviderInvalidRequest = 33,
    /// The provider does not know the model or endpoint (HTTP 404).
    ProviderNotFound = 34,
    /// The provider is rate limiting this key (HTTP 429).
    ProviderRateLimited = 35,
    /// The provider is overloaded (HTTP 503, 529).
    ProviderOverloaded = 36,
    /// The provider failed (other HTTP 5xx).
    ProviderServer = 37,
    /// The connection failed or broke.
    ProviderNetwork = 38,
    /// The provider's stream could not be parsed.
    ProviderMalformedStream = 39,
    /// Replaying a cassette (`model.record`), a model request matched no
    /// recorded exchange that was still unused.
    ReplayMismatch = 40,
}

impl ErrorCode {
    /// The code's stable name, as it appears in JSON (`"error": {"code": ...}`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::NullArg => "NULL_ARG",
            ErrorCode::InvalidUtf8 => "INVALID_UTF8",
            ErrorCode::InvalidJson => "INVALID_JSON",
            ErrorCode::InvalidArg => "INVALID_ARG",
            ErrorCode::InvalidSchema => "INVALID_SCHEMA",
            ErrorCode::DuplicateTool => "DUPLICATE_TOOL",
            ErrorCode::Panic => "PANIC",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::WouldDeadlock => "WOULD_DEADLOCK",
            ErrorCode::AlreadyCompleted => "ALREADY_COMPLETED",
            ErrorCode::AlreadyInitialized => "ALREADY_INITIALIZED",
            ErrorCode::Forked => "FORKED",
            ErrorCode::Shutdown => "SHUTDOWN",
            ErrorCode::ToolFailed => "TOOL_FAILED",
            ErrorCode::ScriptExhausted => "SCRIPT_EXHAUSTED",
            ErrorCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            ErrorCode::InvalidOutput => "INVALID_OUTPUT",
            ErrorCode::HookAborted => "HOOK_ABORTED",
            ErrorCode::McpUnavailable => "MCP_UNAVAILABLE",
            ErrorCode::ProviderAuth => "PROVIDER_AUTH",
            ErrorCode::ProviderInvalidRequest => "PROVIDER_INVALID_REQUEST",
            ErrorCode::ProviderNotFound => "PROVIDER_NOT_FOUND",
            ErrorCode::ProviderRateLimited => "PROVIDER_RATE_LIMITED",
            ErrorCode::ProviderOverloaded => "PROVIDER_OVERLOADED",
            ErrorCode::ProviderServer => "PROVIDER_SERVER",
            ErrorCode::ProviderNetwork => "PROVIDER_NETWORK",
            ErrorCode::ProviderMalformedStream => "PROVIDER_MALFORMED_STREAM",
            ErrorCode::ReplayMismatch => "REPLAY_MISMATCH",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Gives each code's name in the schema its number (`x-ferrule-code`), which
/// bindings and the C header use.
fn number_the_codes(schema: &mut schemars::Schema) {
    let branches = schema.get_mut("oneOf").and_then(serde_json::Value::as_array_mut).into_iter().flatten();
    for branch in branches {
        let code = branch.get("const").cloned().and_then(|name| serde_json::from_value::<ErrorCode>(name).ok());
        if let (Some(code), Some(branch)) = (code, branch.as_object_mut()) {
            branch.insert("x-ferrule-code".to_owned(), (code as u32).into());
        }
    }
}

/// A failure: a stable code and a message written for the person (or model) who
/// has to act on it. Messages never contain API keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, schemars::JsonSchema)]
#[error("{code}: {message}")]
pub struct Error {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// What went wrong, in words.
    pub message: String,
}

impl Error {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into() }
    }

    /// An `INVALID_ARG` error.
    pub fn invalid_arg(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidArg, message)
    }
}

/// `Result` with ferrule's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
