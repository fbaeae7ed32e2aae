//! A run's `run_timeout_ms`: a timer that cancels the run at the deadline (which
//! abandons a model request and cancels running tools), and says afterwards
//! whether it was the one that ended it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The deadline of one run.
pub(crate) struct RunDeadline {
    fired: Arc<AtomicBool>,
    timer: tokio::task::JoinHandle<()>,
}

impl RunDeadline {
    /// `None` without a timeout. `fired` is set when the deadline passes.
    pub(crate) fn start(timeout_ms: u64, cancel: &CancellationToken, fired: &Arc<AtomicBool>) -> Option<Self> {
        if timeout_ms == 0 {
            return None;
        }
        let fired = fired.clone();
        let (flag, cancel) = (fired.clone(), cancel.clone());
        let timer = tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(timeout_ms)) => {
                    flag.store(true, Ordering::SeqCst);
                    cancel.cancel();
                }
                // Cancelled by the host first: the deadline no longer matters.
                _ = cancel.cancelled() => {}
            }
        });
        Some(RunDeadline { fired, timer })
    }

    /// Stops the timer; whether the deadline had passed.
    pub(crate) fn finish(self) -> bool {
        self.timer.abort();
        self.fired.load(Ordering::SeqCst)
    }
}
