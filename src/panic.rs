//! Panics inside ferrule are caught where they happen (the C boundary, a run, a
//! callback thread) and reported in an error; they are never printed to the
//! host's stderr.
//!
//! A process-wide panic hook, installed once, stays silent for panics on
//! ferrule's own threads and inside the C boundary, and keeps where the panic
//! happened so the error can say it. Any other panic goes to the hook that was
//! installed before, so a Rust host's own panics print as usual.

use std::cell::{Cell, RefCell};
use std::sync::Once;

thread_local! {
    /// How many quiet zones this thread is in; ferrule's own threads are always in one.
    static QUIET_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last quiet panic on this thread happened.
    static LAST_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the hook, once per process. Cheap after the first call.
pub(crate) fn install_quiet_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET_DEPTH.with(Cell::get) > 0 {
                let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
                LAST_LOCATION.with(|last| *last.borrow_mut() = location);
            } else {
                previous(info);
            }
        }));
    });
}

/// Keeps panics on this thread quiet until dropped (the C boundary).
pub(crate) struct QuietZone(());

impl QuietZone {
    pub(crate) fn enter() -> Self {
        install_quiet_hook();
        QUIET_DEPTH.with(|depth| depth.set(depth.get() + 1));
        QuietZone(())
    }
}

impl Drop for QuietZone {
    fn drop(&mut self) {
        QUIET_DEPTH.with(|depth| depth.set(depth.get() - 1));
    }
}

/// Marks the current thread as one of ferrule's own for as long as it lives.
pub(crate) fn quiet_thread() {
    std::mem::forget(QuietZone::enter());
}

/// Describes a caught panic: its message and, when the hook saw it, where it
/// happened.
pub(crate) fn describe(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".to_owned());
    match LAST_LOCATION.with(|last| last.borrow_mut().take()) {
        Some(location) => format!("{text} (at {location})"),
        None => text,
    }
}
