//! Where a running call is in its life, as its updates and its end event need to
//! know: an update is delivered only while the call is live, and never after its
//! end event.

use std::sync::atomic::{AtomicBool, Ordering};

/// Where a call is in its life, as its updates need to know.
#[derive(Default)]
pub(crate) struct CallProgress {
    /// The call's result was recorded; new updates are dropped.
    finished: AtomicBool,
    /// The call's end event was delivered (by the thread delivering the run's events).
    end_delivered: AtomicBool,
}

impl CallProgress {
    /// Marks the call's result as recorded.
    pub(crate) fn finish(&self) {
        self.finished.store(true, Ordering::Release);
    }

    /// Whether the call's end event was delivered.
    pub(crate) fn end_delivered(&self) -> bool {
        self.end_delivered.load(Ordering::Relaxed)
    }

    /// Marks the call's end event as delivered (by the thread delivering the
    /// run's events; the queue's lock orders it before the next delivery's reads).
    pub(crate) fn mark_end_delivered(&self) {
        self.end_delivered.store(true, Ordering::Relaxed);
    }

    /// Whether the call's result was recorded.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}
