//! A diagnostic entry point that panics inside the boundary.

use std::ffi::c_char;

use super::boundary::{arg_str, guard};
use super::error::ferrule_error;

/// Panics with `message` inside ferrule's panic boundary and returns the resulting
/// `FERRULE_ERROR_PANIC` error. Exists so hosts and bindings can test how they
/// handle that code; it has no other effect. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_debug_panic(message: *const c_char, len: usize) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes `len` readable bytes.
        let message = unsafe { arg_str(message, len, "message") }?;
        panic!("{message}");
    })
}
