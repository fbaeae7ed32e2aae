//! The host's handle on a run: wait for it, cancel it.

use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::RunResult;
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::CallbackScope;

/// A run in progress or finished. Cloning adds a handle; when the last handle is
/// dropped the run is cancelled (it still ends properly, with a `run_end` event).
/// All methods may be called from any thread.
#[derive(Clone)]
pub struct Run {
    shared: Arc<RunShared>,
    _owner: Arc<CancelOnDrop>,
}

struct CancelOnDrop(CancellationToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// What the run task and the host handles share.
pub(crate) struct RunShared {
    pub(crate) id: Arc<str>,
    pub(crate) serial: u64,
    pub(crate) cancel: CancellationToken,
    result: Mutex<Option<Arc<RunResult>>>,
    finished: Condvar,
    finished_async: Notify,
}

impl RunShared {
    pub(crate) fn new(id: Arc<str>, serial: u64) -> Self {
        RunShared {
            id,
            serial,
            cancel: CancellationToken::new(),
            result: Mutex::new(None),
            finished: Condvar::new(),
            finished_async: Notify::new(),
        }
    }

    /// Publishes the result and wakes every waiter. Called once, after `run_end`
    /// was delivered.
    pub(crate) fn finish(&self, result: Arc<RunResult>) {
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        self.finished.notify_all();
        self.finished_async.notify_waiters();
    }

    fn result(&self) -> Option<Arc<RunResult>> {
        self.result.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Run {
    pub(crate) fn new(shared: Arc<RunShared>) -> Self {
        let owner = Arc::new(CancelOnDrop(shared.cancel.clone()));
        Run { shared, _owner: owner }
    }

    /// The run's id, as in its events (`"run-7"`).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Cancels the run: running tools see cancellation, nothing new is started, and
    /// the run ends with status `cancelled` (unless it already ended).
    pub fn cancel(&self) {
        self.shared.cancel.cancel();
    }

    /// The result, if the run has ended.
    pub fn try_result(&self) -> Option<Arc<RunResult>> {
        self.shared.result()
    }

    /// Blocks until the run has ended, every event was delivered and the run let go
    /// of everything of the host's. Fails with `WOULD_DEADLOCK` inside one of this
    /// run's own callbacks (or `free_user_data` functions), and on ferrule's
    /// runtime threads (inside a `nonblocking` tool's callback), where blocking
    /// would stall the runs it waits for.
    pub fn wait_blocking(&self) -> Result<Arc<RunResult>> {
        if CallbackScope::is_inside(self.shared.serial) {
            return Err(Error::new(
                ErrorCode::WouldDeadlock,
                format!("waiting for {} from inside one of its own callbacks would never return", self.shared.id),
            ));
        }
        if crate::runtime::on_runtime_thread() {
            return Err(Error::new(
                ErrorCode::WouldDeadlock,
                format!(
                    "waiting for {} on ferrule's runtime (inside a nonblocking tool's callback) could stall the runs it waits for",
                    self.shared.id
                ),
            ));
        }
        let mut result = self.shared.result.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(result) = result.as_ref() {
                return Ok(result.clone());
            }
            result = self.shared.finished.wait(result).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until the run has ended and every event was delivered.
    pub async fn wait(&self) -> Arc<RunResult> {
        loop {
            let notified = self.shared.finished_async.notified();
            if let Some(result) = self.shared.result() {
                return result;
            }
            notified.await;
        }
    }
}
