//! Which run's callback the current thread is inside, and what kind.
//!
//! ferrule calls host code (event callbacks, tool functions, cancel handlers,
//! `free_user_data`) on its own threads. Some waits can never finish there: a
//! blocking wait for the same run, or an event callback waiting for room in its
//! own run's event queue. Such calls fail with `WOULD_DEADLOCK` instead; this
//! marker is how ferrule tells.

use std::cell::Cell;

thread_local! {
    static CURRENT: Cell<Option<(u64, CallbackKind)>> = const { Cell::new(None) };
}

/// What kind of host code the thread is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallbackKind {
    /// The run's event callback (or its `free_user_data`): the one thread that
    /// drains the run's event queue.
    Event,
    /// A tool callback, a cancel handler, or a tool's `free_user_data`.
    Tool,
}

/// Marks the current thread as running host code of one run until dropped.
pub(crate) struct CallbackScope {
    previous: Option<(u64, CallbackKind)>,
}

impl CallbackScope {
    /// Enters the scope of the run with `run_serial` (never 0).
    pub(crate) fn enter(run_serial: u64, kind: CallbackKind) -> Self {
        CallbackScope { previous: CURRENT.with(|c| c.replace(Some((run_serial, kind)))) }
    }

    /// Whether the current thread is inside a callback of the run `run_serial`.
    pub(crate) fn is_inside(run_serial: u64) -> bool {
        CURRENT.with(Cell::get).is_some_and(|(serial, _)| serial == run_serial)
    }

    /// Whether the current thread is delivering the events of the run `run_serial`.
    pub(crate) fn is_delivering_events_of(run_serial: u64) -> bool {
        CURRENT.with(Cell::get) == Some((run_serial, CallbackKind::Event))
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}
