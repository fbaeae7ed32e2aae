//! Version and runtime entry points.

use std::ffi::{c_char, CStr};

use super::boundary::{arg_str, guard, guard_anywhere};
use super::error::ferrule_error;
use super::string::ferrule_str;
use crate::runtime::{self, RuntimeConfig};

/// The ABI version this library implements; it must equal the header's
/// `FERRULE_ABI_VERSION`.
pub const FERRULE_ABI_VERSION: u32 = 0;

/// The crate version from Cargo.toml, NUL-terminated.
const VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
    Ok(version) => version,
    Err(_) => panic!("the package version holds a NUL byte"),
};

/// The library version (for example `"0.1.0"`): a static string, valid forever.
/// Any thread; works in a forked child too.
#[no_mangle]
pub extern "C" fn ferrule_version() -> ferrule_str {
    guard_anywhere(ferrule_str::EMPTY, || ferrule_str::from_cstr(VERSION))
}

/// The ABI version of the loaded library. Bindings compare it with
/// `FERRULE_ABI_VERSION` from the header they were built against and refuse to run
/// on a mismatch. Any thread; works in a forked child too.
#[no_mangle]
pub extern "C" fn ferrule_abi_version() -> u32 {
    guard_anywhere(FERRULE_ABI_VERSION, || FERRULE_ABI_VERSION)
}

/// Sets ferrule's thread sizes before first use, from JSON such as
/// `{"worker_threads": 2, "max_callback_threads": 256, "callback_stack_size":
/// 1048576}`: `worker_threads` (the async runtime; default one per core),
/// `max_blocking_threads` (ferrule's own file and process work; default 512),
/// `max_callback_threads` (host tool callbacks across all runs; default 4096),
/// `max_event_threads` (event delivery across all runs; default 4096) and
/// `callback_stack_size` (bytes, for both; default 2 MiB, from 64 KiB to 256 MiB).
/// Unknown fields, zero counts, more than 1024 workers or 65536 threads in a pool
/// are `FERRULE_ERROR_INVALID_ARG`. Fails with `FERRULE_ERROR_ALREADY_INITIALIZED`
/// once the threads have started (the first successful `ferrule_agent_start`
/// starts them) or after an earlier successful call. Any thread.
#[no_mangle]
pub unsafe extern "C" fn ferrule_runtime_configure(json: *const c_char, len: usize) -> *mut ferrule_error {
    guard(|| {
        // SAFETY: the host passes `len` readable bytes.
        let json = unsafe { arg_str(json, len, "json") }?;
        let config: RuntimeConfig = crate::json::parse_document("runtime config", json)?;
        runtime::configure(config)
    })
}
