//! The one global Tokio runtime.
//!
//! Created lazily on first use, multi-threaded, with named threads. Its worker and
//! blocking-pool sizes may be set once, before first use. A process forked after
//! the runtime started cannot use it (its threads did not survive the fork), so
//! every entry point refuses with `FORKED` there.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use tokio::runtime::Runtime;

use crate::error::{Error, ErrorCode, Result};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static CONFIG: Mutex<Option<RuntimeConfig>> = Mutex::new(None);
static FORKED: AtomicBool = AtomicBool::new(false);

/// Runtime sizes (`ferrule_runtime_configure`). Absent fields keep Tokio's defaults
/// (one worker per core; 512 blocking threads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Async worker threads.
    #[serde(default)]
    pub worker_threads: Option<usize>,
    /// Most threads in the blocking pool, where tool callbacks and event delivery run.
    #[serde(default)]
    pub max_blocking_threads: Option<usize>,
}

/// Sets the runtime's sizes. Fails with `ALREADY_INITIALIZED` once the runtime has
/// started or after an earlier successful call.
pub fn configure(config: RuntimeConfig) -> Result<()> {
    if config.worker_threads == Some(0) || config.max_blocking_threads == Some(0) {
        return Err(Error::invalid_arg("runtime config: thread counts must be at least 1"));
    }
    let mut slot = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if RUNTIME.get().is_some() || slot.is_some() {
        return Err(Error::new(
            ErrorCode::AlreadyInitialized,
            "the runtime is already configured or running; configure it once, before any run starts",
        ));
    }
    *slot = Some(config);
    Ok(())
}

/// The runtime, started on first use.
pub fn get() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        let config = CONFIG.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(Default::default).clone();
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.enable_all().thread_name_fn(|| {
            static NEXT: AtomicUsize = AtomicUsize::new(1);
            format!("ferrule-{}", NEXT.fetch_add(1, Ordering::Relaxed))
        });
        if let Some(workers) = config.worker_threads {
            builder.worker_threads(workers);
        }
        if let Some(blocking) = config.max_blocking_threads {
            builder.max_blocking_threads(blocking);
        }
        let runtime = builder.build().expect("ferrule could not start its Tokio runtime");
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(mark_forked)) };
        runtime
    })
}

extern "C" fn mark_forked() {
    FORKED.store(true, Ordering::SeqCst);
}

/// Fails with `FORKED` in a child forked after the runtime started.
pub fn check_not_forked() -> Result<()> {
    if FORKED.load(Ordering::Relaxed) {
        return Err(Error::new(
            ErrorCode::Forked,
            "this process was forked after ferrule's runtime started; ferrule cannot be used in the child",
        ));
    }
    Ok(())
}
