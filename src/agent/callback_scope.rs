//! Which run's callback the current thread is inside.
//!
//! ferrule calls host code (event callbacks, tool functions) on its own threads.
//! Blocking there on the same run can never finish, so such a wait must fail with
//! `WOULD_DEADLOCK` instead; this marker is how ferrule tells.

use std::cell::Cell;

thread_local! {
    static CURRENT_RUN: Cell<u64> = const { Cell::new(0) };
}

/// Marks the current thread as running a callback of one run until dropped.
pub struct CallbackScope {
    previous: u64,
}

impl CallbackScope {
    /// Enters the scope of the run with `run_serial` (never 0).
    pub fn enter(run_serial: u64) -> Self {
        CallbackScope { previous: CURRENT_RUN.with(|c| c.replace(run_serial)) }
    }

    /// Whether the current thread is inside a callback of the run `run_serial`.
    pub fn is_inside(run_serial: u64) -> bool {
        CURRENT_RUN.with(|c| c.get()) == run_serial
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CURRENT_RUN.with(|c| c.set(self.previous));
    }
}
