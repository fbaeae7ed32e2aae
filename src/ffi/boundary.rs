//! The panic boundary and argument conversion every `extern "C"` body goes through.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::error::ferrule_error;
use crate::error::{Error, ErrorCode, Result};

/// Runs a fallible body: `Ok` becomes NULL, an error or a panic becomes an owned
/// `ferrule_error`. Refuses with `FORKED` in a forked child.
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> *mut ferrule_error {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        crate::runtime::check_not_forked()?;
        body()
    }));
    match outcome {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(error)) => ferrule_error::into_raw(error),
        Err(payload) => ferrule_error::into_raw(panic_error(payload)),
    }
}

/// Runs an infallible body; a panic is swallowed (there is nowhere to report it).
pub(crate) fn guard_void(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}

fn panic_error(payload: Box<dyn Any + Send>) -> Error {
    Error::new(ErrorCode::Panic, format!("ferrule panicked: {}", crate::error::panic_text(payload.as_ref())))
}

fn null_arg(name: &str) -> Error {
    Error::new(ErrorCode::NullArg, format!("{name} must not be NULL"))
}

/// Borrows `(ptr, len)` as UTF-8. `ptr` may be NULL only when `len` is 0.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` readable bytes that outlive `'a`.
pub(crate) unsafe fn str_arg<'a>(ptr: *const std::ffi::c_char, len: usize, name: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return if len == 0 { Ok("") } else { Err(null_arg(name)) };
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| {
        Error::new(ErrorCode::InvalidUtf8, format!("{name} is not valid UTF-8 (at byte {})", e.valid_up_to()))
    })
}

/// Borrows a handle.
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` that outlives `'a`.
pub(crate) unsafe fn ref_arg<'a, T>(ptr: *const T, name: &str) -> Result<&'a T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` is live.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_arg(name))
}

/// Borrows an out-parameter.
///
/// # Safety
/// A non-NULL `ptr` must be valid for writes for `'a`.
pub(crate) unsafe fn out_arg<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` is writable.
    unsafe { ptr.as_mut() }.ok_or_else(|| null_arg(name))
}
