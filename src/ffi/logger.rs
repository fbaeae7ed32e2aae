//! The host's logger: `ferrule_runtime_set_logger`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::boundary::guard;
use super::error::ferrule_error;
use super::foreign_data::{ferrule_free_fn, ForeignData};
use crate::error::Error;
use crate::log::{LogLevel, LogRecord};

/// Receives one log record: a JSON object (`level`, `target`, `message`,
/// `fields`, `time_unix_nano`), `len` bytes at `record_json` (NUL-terminated),
/// borrowed for the duration of the call. Called on ferrule's logger thread,
/// one record at a time, in the order they were made.
pub type ferrule_log_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, record_json: *const c_char, len: usize)>;

/// Sets the process's logger: `log` receives every record of `level`
/// (`FERRULE_LOG_LEVEL_ERROR` to `FERRULE_LOG_LEVEL_TRACE`) or more severe:
/// retried model requests, dropped tool calls, what MCP servers write on
/// stderr, cassettes that cannot be written. ferrule writes nothing to stdout
/// or stderr. Records wait in a bounded queue (4096): past that they are
/// dropped, and the next one delivered says how many were. A slow logger
/// never slows a run.
///
/// A NULL `log` removes the logger (`user_data`, `free_user_data` and `level`
/// are then ignored). A logger replaces the one before it, which still
/// receives the records made for it; `free_user_data(user_data)`, if not
/// NULL, runs once the logger was replaced or removed and its last call
/// returned (on the thread that replaced it, or on the logger thread).
/// `FERRULE_ERROR_INVALID_ARG` for a level out of range,
/// `FERRULE_ERROR_RESOURCE_EXHAUSTED` when the system refuses the logger's
/// thread; on error the host still owns `user_data`. Any thread, at any time,
/// also from inside the logger.
#[no_mangle]
pub unsafe extern "C" fn ferrule_runtime_set_logger(
    log: ferrule_log_fn,
    user_data: *mut c_void,
    free_user_data: ferrule_free_fn,
    level: u32,
) -> *mut ferrule_error {
    guard(|| {
        let Some(log) = log else {
            crate::log::remove_logger();
            return Ok(());
        };
        let level = LogLevel::from_number(level)
            .ok_or_else(|| Error::invalid_arg(format!("level: {level} is not a log level (1, error, to 5, trace)")))?;
        crate::log::set_logger_made(level, || {
            // Nothing can fail from here on: the user data belongs to ferrule.
            let host = ForeignData::new(user_data, free_user_data);
            Arc::new(move |record: LogRecord| {
                let host = &host;
                let mut json = serde_json::to_vec(&record).unwrap_or_default();
                let len = json.len();
                json.push(0);
                // SAFETY: the host gave `log` for `user_data`; the record is
                // borrowed for the call only.
                unsafe { log(host.data, json.as_ptr().cast(), len) };
            })
        })
    })
}
