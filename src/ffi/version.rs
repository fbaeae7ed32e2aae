//! Version and runtime entry points.

use std::ffi::{c_char, CStr};

use super::boundary::{arg_str, guard, guard_anywhere};
use super::error::ferrule_error;
use super::string::ferrule_str;
use crate::runtime::{self, RuntimeConfig};

/// The ABI version this library implements; it must equal the header's
/// `FERRULE_ABI_VERSION`.
pub const FERRULE_ABI_VERSION: u32 = 0;

/// Exported by a library of ABI 0 only. Every program compiled against a
/// header of ABI 0 refers to it (the header's last lines), so linking that
/// program with a library of another ABI fails at link time, not when it runs.
/// Renamed with `FERRULE_ABI_VERSION`, in the header's trailer too.
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static ferrule_abi_0: u8 = 0;

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

#[cfg(test)]
mod tests {
    use super::FERRULE_ABI_VERSION;

    /// The symbol, the header's reference to it and the version agree.
    #[test]
    fn the_header_refers_to_the_symbol_of_its_abi_version() {
        let header = include_str!("../../include/ferrule.h");
        let symbol = format!("ferrule_abi_{FERRULE_ABI_VERSION}");
        assert_eq!(symbol, "ferrule_abi_0", "rename the static with the version");
        assert!(header.contains(&format!("#define FERRULE_ABI_VERSION {FERRULE_ABI_VERSION}\n")));
        assert!(header.contains(&format!("extern const uint8_t {symbol};")), "make header");
        assert!(header.contains(&format!("= &{symbol};")), "the trailer of cbindgen.toml names {symbol}");
    }
}
