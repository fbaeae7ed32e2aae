//! Host user data with its finalizer: `free_user_data` runs exactly once, when the
//! last owner drops it, because it runs in `Drop`.

use std::ffi::c_void;

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
        if let Some(finalizer) = self.finalizer {
            // SAFETY: the host gave this finalizer for this pointer; it runs once.
            unsafe { finalizer(self.data) };
        }
    }
}
