//! The panic boundary and argument unpacking every `extern "C"` body goes through.
//!
//! Three guards, by what a function returns: [`guard`] for fallible functions
//! (`ferrule_error *`), [`guard_or`] for everything else, and [`guard_anywhere`]
//! for the few functions a forked child still needs (errors, strings, versions).
//! Each catches panics, which never print to the host's stderr, and each but the
//! last answers a forked child as DESIGN 2.11 says: `FORKED` errors, fallback
//! values, no effect.
//!
//! The `arg_*` helpers turn pointer arguments into references, with the
//! `NULL_ARG` error that names the argument, so no function body checks NULL or
//! calls `Box::from_raw` itself.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::error::ferrule_error;
use crate::error::{Error, ErrorCode, Result};
use crate::panic::QuietZone;

/// Runs a fallible body: `Ok` becomes NULL, an error or a panic becomes an owned
/// `ferrule_error`. Refuses with `FORKED` in a forked child.
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> *mut ferrule_error {
    let _quiet = QuietZone::enter();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        crate::runtime::check_not_forked()?;
        body()
    }));
    match outcome {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(error)) => ferrule_error::into_raw(error),
        Err(payload) => ferrule_error::into_raw(Error::new(
            ErrorCode::Panic,
            format!("ferrule panicked: {}", crate::panic::describe(payload.as_ref())),
        )),
    }
}

/// Runs a body that cannot fail; a panic, or a call in a forked child, returns
/// `fallback` instead (for `_free` and `_cancel` functions, `()`: nothing happens).
pub(crate) fn guard_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    if crate::runtime::is_forked() {
        return fallback;
    }
    guard_anywhere(fallback, body)
}

/// Like [`guard_or`], but also runs in a forked child: for functions that touch
/// nothing but their arguments, which a child needs to read and free the `FORKED`
/// errors it gets.
pub(crate) fn guard_anywhere<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    let _quiet = QuietZone::enter();
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

pub(crate) fn null_arg(name: &str) -> Error {
    Error::new(ErrorCode::NullArg, format!("{name} must not be NULL"))
}

/// Borrows `(ptr, len)` as UTF-8. `ptr` may be NULL only when `len` is 0.
///
/// # Safety
/// A non-NULL `ptr` must point to `len` readable bytes that outlive `'a`.
pub(crate) unsafe fn arg_str<'a>(ptr: *const std::ffi::c_char, len: usize, name: &str) -> Result<&'a str> {
    if ptr.is_null() {
        return if len == 0 { Ok("") } else { Err(null_arg(name)) };
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes).map_err(|e| {
        Error::new(ErrorCode::InvalidUtf8, format!("{name} is not valid UTF-8 (at byte {})", e.valid_up_to()))
    })
}

/// Borrows an object.
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` that outlives `'a`.
pub(crate) unsafe fn arg_ref<'a, T>(ptr: *const T, name: &str) -> Result<&'a T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` is live.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_arg(name))
}

/// Borrows an object the host may pass as NULL (for functions whose answer to
/// NULL is a fallback value, not an error).
///
/// # Safety
/// A non-NULL `ptr` must point to a live `T` that outlives `'a`.
pub(crate) unsafe fn arg_opt<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` is live.
    unsafe { ptr.as_ref() }
}

/// Borrows an object or an out-parameter mutably.
///
/// # Safety
/// A non-NULL `ptr` must be valid for reads and writes for `'a`, and not aliased.
pub(crate) unsafe fn arg_mut<'a, T>(ptr: *mut T, name: &str) -> Result<&'a mut T> {
    // SAFETY: the caller guarantees a non-NULL `ptr` is valid and unaliased.
    unsafe { ptr.as_mut() }.ok_or_else(|| null_arg(name))
}

/// Takes ownership of an object the host hands over (it came from [`give_box`]).
///
/// # Safety
/// A non-NULL `ptr` must come from [`give_box`] and not be used by the host again.
pub(crate) unsafe fn arg_take<T>(ptr: *mut T, name: &str) -> Result<Box<T>> {
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: as the caller guarantees, `ptr` came from `Box::into_raw`, once.
    Ok(unsafe { Box::from_raw(ptr) })
}

/// Hands an object to the host, which gives it back to [`arg_take`] or [`free_box`].
pub(crate) fn give_box<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Drops an object the host frees; NULL is a no-op.
///
/// # Safety
/// A non-NULL `ptr` must come from [`give_box`] and not be used by the host again.
pub(crate) unsafe fn free_box<T>(ptr: *mut T) {
    if !ptr.is_null() {
        // SAFETY: as the caller guarantees, `ptr` came from `Box::into_raw`, once.
        drop(unsafe { Box::from_raw(ptr) });
    }
}

/// `INVALID_ARG` unless `struct_size` is the size of this library's `T`
/// (the C struct the host calls `name`).
pub(crate) fn check_struct_size<T>(struct_size: u32, name: &str) -> Result<()> {
    let size = std::mem::size_of::<T>();
    if struct_size as usize != size {
        return Err(Error::invalid_arg(format!(
            "spec->struct_size is {struct_size}, but this library's {name} has {size} bytes; set it to sizeof({name})"
        )));
    }
    Ok(())
}
