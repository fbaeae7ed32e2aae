//! Host user data with its finalizer: `free_user_data` runs exactly once, when the
//! last owner drops it, because it runs in `Drop`.
//!
//! It runs on the thread that drops the last owner, unless that is one of
//! ferrule's runtime threads, where host code must not run, or a host thread
//! inside a call that must not run it ([`releasing_later`]): then it runs on a
//! tool callback thread.

use std::cell::Cell;
use std::ffi::c_void;

thread_local! {
    /// Set while this thread runs a call whose releases go to a callback thread.
    static RELEASING_LATER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `body` with every `free_user_data` it sets off moved to a tool callback
/// thread: for a hold on user data that may be let go inside a host's call into
/// ferrule (a late answer to a model request of a freed agent), where the
/// host's thread may hold what its finalizer takes, or be the thread it joins.
pub(crate) fn releasing_later<R>(body: impl FnOnce() -> R) -> R {
    let outer = RELEASING_LATER.with(|flag| flag.replace(true));
    let result = body();
    RELEASING_LATER.with(|flag| flag.set(outer));
    result
}

/// A host's `free_user_data` callback.
pub type ferrule_free_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// `user_data` plus the function that frees it.
pub(crate) struct ForeignData {
    pub(crate) data: *mut c_void,
    finalizer: ferrule_free_fn,
}

// SAFETY: the C contract (DESIGN 2.8 and 2.9) requires user data to be usable, and
// freeable, from any thread.
unsafe impl Send for ForeignData {}
// SAFETY: as above; ferrule only passes the pointer back to the host's callbacks.
unsafe impl Sync for ForeignData {}

impl ForeignData {
    pub(crate) fn new(data: *mut c_void, finalizer: ferrule_free_fn) -> Self {
        ForeignData { data, finalizer }
    }
}

impl Drop for ForeignData {
    fn drop(&mut self) {
        let Some(finalizer) = self.finalizer.take() else { return };
        let release = Release { data: self.data, finalizer };
        let deferred = crate::runtime::on_runtime_thread() || RELEASING_LATER.with(Cell::get);
        match crate::runtime::started().filter(|_| deferred) {
            Some(threads) => threads.tool_callbacks.submit_urgent(Box::new(move || release.run())),
            None => release.run(),
        }
    }
}

/// One pending `free_user_data` call.
struct Release {
    data: *mut c_void,
    finalizer: unsafe extern "C" fn(*mut c_void),
}

// SAFETY: as for `ForeignData`.
unsafe impl Send for Release {}

impl Release {
    fn run(self) {
        // SAFETY: the host gave this finalizer for this pointer; `ForeignData`
        // took it out of its slot, so it runs once.
        unsafe { (self.finalizer)(self.data) };
    }
}
