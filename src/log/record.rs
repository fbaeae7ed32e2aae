//! A log record as the host's logger receives it.

use std::time::{SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// How much a record matters, from `Error` (most) to `Trace` (least). The
/// numbers are part of the C ABI (`FERRULE_LOG_LEVEL_*`); JSON names each
/// level in lower case (`"warn"`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Something failed that the host should look at: a cassette that could
    /// not be written, a server that cannot be started again.
    Error = 1,
    /// Something went wrong and ferrule carried on: a retried request, a
    /// dropped tool call, a server's notice ignored, records dropped.
    Warn = 2,
    /// What servers say on stderr, servers started and stopped.
    Info = 3,
    /// Detail for finding a fault.
    Debug = 4,
    /// More detail still.
    Trace = 5,
}

impl LogLevel {
    /// The level of `number` (1 to 5).
    pub fn from_number(number: u32) -> Option<LogLevel> {
        [LogLevel::Error, LogLevel::Warn, LogLevel::Info, LogLevel::Debug, LogLevel::Trace]
            .into_iter()
            .find(|level| *level as u32 == number)
    }
}

/// One record. Made on whatever thread noticed what it says; delivered on
/// ferrule's logger thread.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LogRecord {
    /// How much it matters.
    pub level: LogLevel,
    /// The part of ferrule it comes from: `ferrule::provider` (model
    /// requests), `ferrule::mcp` (MCP servers), `ferrule::recording`
    /// (cassettes), `ferrule::trace` (spans) or `ferrule::log` (the logger
    /// itself).
    pub target: String,
    /// What happened, in a sentence.
    pub message: String,
    /// The details as key-values: `run_id`, `server`, `attempt`, ... Never an
    /// API key or a header's value.
    pub fields: Map<String, Value>,
    /// When it was made, in nanoseconds since the Unix epoch.
    pub time_unix_nano: u64,
}

impl LogRecord {
    /// A record made now.
    pub fn new(level: LogLevel, target: &str, message: String, fields: Map<String, Value>) -> LogRecord {
        LogRecord { level, target: target.to_owned(), message, fields, time_unix_nano: unix_nanos(SystemTime::now()) }
    }
}

/// `time` in nanoseconds since the Unix epoch (0 before it).
pub(crate) fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)).unwrap_or(0)
}
