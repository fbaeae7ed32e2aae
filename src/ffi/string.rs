//! Strings across the boundary: borrowed `ferrule_str` out, owned `char *` out.

use std::ffi::{c_char, CStr, CString};

use super::boundary::guard_anywhere;
use crate::error::{Error, ErrorCode, Result};

/// A borrowed UTF-8 string: `len` bytes at `ptr`, followed by a NUL at `ptr[len]`.
/// The function that returns it says how long it stays valid.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ferrule_str {
    /// The first byte; never NULL.
    pub ptr: *const c_char,
    /// The length in bytes, without the NUL.
    pub len: usize,
}

impl ferrule_str {
    pub(crate) const EMPTY: ferrule_str = ferrule_str { ptr: c"".as_ptr(), len: 0 };

    pub(crate) fn from_cstr(text: &CStr) -> ferrule_str {
        ferrule_str { ptr: text.as_ptr(), len: text.count_bytes() }
    }
}

/// Text kept with a NUL after it, so it can be lent out as a `ferrule_str` even when
/// it holds NUL bytes itself (the length is what counts).
pub(crate) struct NulTerminated(Box<[u8]>);

impl NulTerminated {
    pub(crate) fn new(text: &str) -> Self {
        NulTerminated::from_string(text.to_owned())
    }

    /// Takes `text`'s buffer, growing it by the NUL (usually in place).
    pub(crate) fn from_string(text: String) -> Self {
        let mut bytes = text.into_bytes();
        bytes.reserve_exact(1);
        bytes.push(0);
        NulTerminated(bytes.into_boxed_slice())
    }

    pub(crate) fn as_ferrule_str(&self) -> ferrule_str {
        ferrule_str { ptr: self.0.as_ptr().cast(), len: self.0.len() - 1 }
    }
}

/// Hands `text` to the host as an owned string (freed with `ferrule_string_free`).
pub(crate) fn give_string(text: String, out: &mut *mut c_char, out_len: &mut usize) -> Result<()> {
    let len = text.len();
    let owned =
        CString::new(text).map_err(|_| Error::new(ErrorCode::InvalidArg, "the string to return holds a NUL byte"))?;
    *out = owned.into_raw();
    *out_len = len;
    Ok(())
}

/// Hands `value`'s JSON to the host as an owned string, as [`give_string`];
/// `what` names it in the error of a value that does not serialise.
pub(crate) fn give_json(
    value: &impl serde::Serialize,
    what: &str,
    out: &mut *mut c_char,
    out_len: &mut usize,
) -> Result<()> {
    let json = serde_json::to_string(value)
        .map_err(|e| Error::new(ErrorCode::Panic, format!("{what} did not serialise: {e}")))?;
    give_string(json, out, out_len)
}

/// Frees a string ferrule returned through a `char **` out-parameter. NULL is a
/// no-op. Any thread; works in a forked child too.
#[no_mangle]
pub unsafe extern "C" fn ferrule_string_free(text: *mut c_char) {
    guard_anywhere((), || {
        if !text.is_null() {
            // SAFETY: the host passes a string from `give_string` exactly once.
            drop(unsafe { CString::from_raw(text) });
        }
    })
}
