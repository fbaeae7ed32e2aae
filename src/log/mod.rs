//! ferrule's logs, to the host's logger and nowhere else.
//!
//! ferrule never writes to stdout or stderr. What it has to say outside a
//! run's events (a retried request, a dropped tool call, what an MCP server
//! writes on stderr) becomes a [`LogRecord`], given to the logger the host set
//! with [`set_logger`] (C: `ferrule_runtime_set_logger`) when the record's
//! level passes the logger's. Without a logger nothing is made: the cost is one
//! atomic load.
//!
//! Records are delivered on one thread of ferrule's (`ferrule-log`), in the
//! order they were made, one at a time. At most 4096 wait; past
//! that they are dropped, and the next record delivered is a `warn` saying how
//! many were.

mod record;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use serde_json::{Map, Value};

pub(crate) use record::unix_nanos;
pub use record::{LogLevel, LogRecord};

use crate::error::Result;
use crate::runtime::Outlet;

/// Records waiting for the logger at most.
pub(crate) const QUEUED_RECORDS: usize = 4096;

/// The most detailed level passed on; 0 when there is no logger.
static LEVEL: AtomicU32 = AtomicU32::new(0);
static OUTLET: Outlet<LogRecord> = Outlet::new("ferrule-log", QUEUED_RECORDS, dropped_note);

/// A host's logger: takes each record on ferrule's logger thread.
pub type Logger = Arc<dyn Fn(LogRecord) + Send + Sync>;

/// Sets the process's logger, receiving records of `level` and more severe.
/// The previous logger receives what was made for it and is then dropped.
/// Fails with `RESOURCE_EXHAUSTED`, changing nothing, when the system refuses
/// the logger's thread. Any thread.
pub fn set_logger(level: LogLevel, logger: impl Fn(LogRecord) + Send + Sync + 'static) -> Result<()> {
    set_logger_made(level, move || Arc::new(logger))
}

/// Removes the process's logger, which receives what was made for it and is
/// then dropped. Any thread.
pub fn remove_logger() {
    let _one_at_a_time = SETTING.lock().unwrap_or_else(|e| e.into_inner());
    LEVEL.store(0, Ordering::SeqCst);
    OUTLET.set(None);
}

/// Setting and removing the logger take turns, so the level passed is always
/// the logger's.
static SETTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Sets the logger `make` gives, made once nothing can fail.
pub(crate) fn set_logger_made(level: LogLevel, make: impl FnOnce() -> Logger) -> Result<()> {
    let _one_at_a_time = SETTING.lock().unwrap_or_else(|e| e.into_inner());
    OUTLET.open()?;
    // Records of a level no longer passed stop first; records of a newly
    // passed level only once the logger that wants them is set.
    LEVEL.fetch_min(level as u32, Ordering::SeqCst);
    OUTLET.set(Some(make()));
    LEVEL.store(level as u32, Ordering::SeqCst);
    Ok(())
}

/// Whether records of `level` reach a logger.
#[inline]
pub(crate) fn enabled(level: LogLevel) -> bool {
    level as u32 <= LEVEL.load(Ordering::Relaxed)
}

/// Hands a record to the logger; see [`log!`] for the usual way.
pub(crate) fn emit(level: LogLevel, target: &str, message: String, fields: Vec<(&str, Value)>) {
    let fields: Map<String, Value> = fields.into_iter().map(|(key, value)| (key.to_owned(), value)).collect();
    OUTLET.offer(LogRecord::new(level, target, message, fields));
}

/// The record delivered after `count` were dropped.
fn dropped_note(count: u64) -> Option<LogRecord> {
    let message = format!("{count} log records were dropped: the logger did not keep up");
    let fields = Map::from_iter([("dropped".to_owned(), Value::from(count))]);
    Some(LogRecord::new(LogLevel::Warn, "ferrule::log", message, fields))
}

/// Logs a record when its level reaches a logger; the message and fields are
/// made only then:
/// `log!(Warn, "ferrule::provider", format!("..."), "attempt" => attempt)`.
macro_rules! log {
    ($level:ident, $target:literal, $message:expr $(, $key:literal => $value:expr)* $(,)?) => {
        if $crate::log::enabled($crate::log::LogLevel::$level) {
            $crate::log::emit(
                $crate::log::LogLevel::$level,
                $target,
                ::std::string::String::from($message),
                vec![$(($key, ::serde_json::json!($value))),*],
            );
        }
    };
}
pub(crate) use log;
