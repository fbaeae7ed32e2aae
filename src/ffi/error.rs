//! `ferrule_error`: a code and a message, owned by the host until freed.

use std::ffi::CString;

use super::boundary::{arg_opt, free_box, give_box, guard_anywhere};
use super::string::ferrule_str;
use crate::error::Error;

/// An error returned by a fallible function. Owned by the caller; free it with
/// `ferrule_error_free`. Safe to read from any thread.
pub struct ferrule_error {
    code: u32,
    message: CString,
}

impl ferrule_error {
    /// Boxes `error` for the host.
    pub(crate) fn into_raw(error: Error) -> *mut ferrule_error {
        let text = error.message.replace('\0', "\\0");
        let message = CString::new(text).unwrap_or_default();
        give_box(ferrule_error { code: error.code as u32, message })
    }
}

/// The error's stable code, one of `FERRULE_ERROR_*`. Returns 0 for NULL. Any
/// thread; works in a forked child too.
#[no_mangle]
pub unsafe extern "C" fn ferrule_error_code(error: *const ferrule_error) -> u32 {
    guard_anywhere(0, || {
        // SAFETY: the host passes NULL or an error it has not freed.
        unsafe { arg_opt(error) }.map_or(0, |e| e.code)
    })
}

/// The error's message: UTF-8, NUL-terminated at `ptr[len]`, borrowed from `error`
/// and valid until `ferrule_error_free(error)`. Empty for NULL. Any thread; works
/// in a forked child too.
#[no_mangle]
pub unsafe extern "C" fn ferrule_error_message(error: *const ferrule_error) -> ferrule_str {
    guard_anywhere(ferrule_str::EMPTY, || {
        // SAFETY: the host passes NULL or an error it has not freed.
        unsafe { arg_opt(error) }.map_or(ferrule_str::EMPTY, |e| ferrule_str::from_cstr(&e.message))
    })
}

/// Frees an error. NULL is a no-op. Any thread; works in a forked child too.
#[no_mangle]
pub unsafe extern "C" fn ferrule_error_free(error: *mut ferrule_error) {
    // SAFETY: the host passes NULL or an error from ferrule, once.
    guard_anywhere((), || unsafe { free_box(error) })
}
