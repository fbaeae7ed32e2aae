//! The host's handle on a run: wait for it, cancel it.

use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::injection::mark_injected;
use super::result::RunResult;
use crate::error::{Error, ErrorCode, Result};
use crate::message::Message;
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
    /// Messages injected into the live run and not yet in its transcript; `None`
    /// once the run took the last of them.
    injections: Mutex<Option<Vec<Message>>>,
    result: Mutex<Option<Arc<RunResult>>>,
    finished: Condvar,
    finished_async: Notify,
}

impl RunShared {
    /// A run's shared part, cancelled with `cancel`; `injections` wait for its
    /// first request.
    pub(crate) fn new(id: Arc<str>, serial: u64, cancel: CancellationToken, injections: Vec<Message>) -> Self {
        RunShared {
            id,
            serial,
            cancel,
            injections: Mutex::new(Some(injections)),
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

    /// The injected messages waiting for the transcript, taken.
    pub(crate) fn take_injections(&self) -> Vec<Message> {
        let mut injections = self.injections.lock().unwrap_or_else(|e| e.into_inner());
        injections.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The last injected messages, taken: later injections fail.
    pub(crate) fn close_injections(&self) -> Vec<Message> {
        self.injections.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_default()
    }

    /// Whether injected messages wait for the transcript.
    pub(crate) fn has_injections(&self) -> bool {
        self.injections.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|queue| !queue.is_empty())
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

    /// Queues a user or system message into the live run. It enters the
    /// transcript before the next model request (never between a call and its
    /// result), marked `"origin": "injection"`, with a `message_injected` event; a
    /// message still waiting when the model answers keeps the run going for one
    /// more request. `INVALID_ARG` for another role or invalid parts,
    /// `ALREADY_COMPLETED` once the run is over. Any thread.
    pub fn inject(&self, mut message: Message) -> Result<()> {
        mark_injected(&mut message).map_err(|problem| Error::invalid_arg(format!("inject: {problem}")))?;
        let mut injections = self.shared.injections.lock().unwrap_or_else(|e| e.into_inner());
        match injections.as_mut() {
            Some(queue) => {
                queue.push(message);
                Ok(())
            }
            None => Err(Error::new(
                ErrorCode::AlreadyCompleted,
                format!("{} is over; nothing can be injected", self.shared.id),
            )),
        }
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
