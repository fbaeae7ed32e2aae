//! Version and runtime entry points.

use std::ffi::c_char;

use super::boundary::{guard, str_arg};
use super::error::ferrule_error;
use super::string::ferrule_str;
use crate::error::Error;
use crate::runtime::{self, RuntimeConfig};

/// The ABI version this library implements; it must equal the header's
/// `FERRULE_ABI_VERSION`.
pub const FERRULE_ABI_VERSION: u32 = 0;

/// The library version (`"0.1.0"`): a static string, valid forever.
#[no_mangle]
pub extern "C" fn ferrule_version() -> ferrule_str {
    ferrule_str::from_cstr(c"0.1.0")
}

/// The ABI version of the loaded library. Bindings compare it with
/// `FERRULE_ABI_VERSION` from the header they were built against and refuse to run
/// on a mismatch.
#[no_mangle]
pub extern "C" fn ferrule_abi_version() -> u32 {
    FERRULE_ABI_VERSION
}

/// Sets the runtime's sizes before first use, from JSON such as
/// `{"worker_threads": 2, "max_blocking_threads": 64}` (unknown fields are an
/// error). Fails with `FERRULE_ERROR_ALREADY_INITIALIZED` once the runtime has
/// started (the first run starts it) or after an earlier successful call.
/// Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_runtime_configure(json: *const c_char, len: usize) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes `len` readable bytes.
        let json = unsafe { str_arg(json, len, "json") }?;
        let config: RuntimeConfig = serde_json::from_str(json).map_err(|e| Error::from_json("runtime config", e))?;
        runtime::configure(config)
    })
}
