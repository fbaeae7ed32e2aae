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

/// Told a panic's message as the panic starts.
type PanicReport = Box<dyn FnMut(String)>;

thread_local! {
    /// How many quiet zones this thread is in; ferrule's own threads are always in one.
    static QUIET_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last quiet panic on this thread happened.
    static LAST_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Told of a panic on this thread as it starts, before unwinding.
    static PANIC_REPORT: RefCell<Option<PanicReport>> = const { RefCell::new(None) };
}

/// Installs the hook, once per process. Cheap after the first call.
pub(crate) fn install_quiet_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANIC_REPORT.with(|report| {
                if let Some(report) = report.borrow_mut().as_mut() {
                    report(payload_text(info.payload()));
                }
            });
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

/// Tells `report` of every panic on the current thread as it starts, before the
/// unwinding (which can itself wait forever in code that is not ferrule's).
pub(crate) fn report_panics_to(report: impl FnMut(String) + 'static) {
    install_quiet_hook();
    PANIC_REPORT.with(|slot| *slot.borrow_mut() = Some(Box::new(report)));
}

/// Marks the current thread as one of ferrule's own for as long as it lives.
pub(crate) fn quiet_thread() {
    std::mem::forget(QuietZone::enter());
}

/// Describes a caught panic: its message and, when the hook saw it, where it
/// happened.
pub(crate) fn describe(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload_text(payload);
    match LAST_LOCATION.with(|last| last.borrow_mut().take()) {
        Some(location) => format!("{text} (at {location})"),
        None => text,
    }
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".to_owned())
}
