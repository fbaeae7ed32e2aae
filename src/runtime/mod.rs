//! ferrule's threads: the one global Tokio runtime, and two pools of threads of
//! ferrule's own for host code.
//!
//! - The **runtime** (`ferrule-N` threads) runs every run's loop, the providers'
//!   HTTP and timers. Host code never runs on it, except the callbacks of tools
//!   that promise to return at once (`nonblocking`). Its blocking pool only does
//!   ferrule's own file and process work (the built-in tools).
//! - The **tool callback pool** (`ferrule-cb-N`) runs host tool callbacks, cancel
//!   handlers and `free_user_data` functions that ferrule itself releases.
//! - The **event pool** (`ferrule-ev-N`) delivers events, so event delivery never
//!   waits behind a tool callback that blocks.
//!
//! Everything starts lazily on first use; the sizes may be set once, before that.
//! A process forked after the runtime started cannot use it (its threads did not
//! survive the fork), so every entry point refuses with `FORKED` there.

mod callback_pool;
mod callback_scope;
mod spin;

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

use once_cell::sync::OnceCell;
use serde::Deserialize;
use tokio::runtime::Runtime;

pub(crate) use callback_pool::CallbackPool;
pub(crate) use callback_scope::{CallbackKind, CallbackScope};
pub(crate) use spin::spin_until;

use crate::error::{Error, ErrorCode, Result};

/// Default bound on the threads of each callback pool.
const DEFAULT_MAX_CALLBACK_THREADS: usize = 4096;
/// Default stack size of a callback thread: what Rust gives its threads.
const DEFAULT_CALLBACK_STACK_SIZE: usize = 2 << 20;
/// Smallest callback stack accepted; below this even ferrule's own frames do not fit.
const MIN_CALLBACK_STACK_SIZE: usize = 64 << 10;

static RUNTIME: OnceCell<Runtime> = OnceCell::new();
static POOLS: OnceCell<Pools> = OnceCell::new();
static CONFIG: Mutex<ConfigSlot> = Mutex::new(ConfigSlot { config: None, frozen: false });
static FORKED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static ON_RUNTIME_THREAD: Cell<bool> = const { Cell::new(false) };
}

struct ConfigSlot {
    config: Option<RuntimeConfig>,
    /// Set once anything started with the configuration.
    frozen: bool,
}

struct Pools {
    tool_callbacks: CallbackPool,
    events: CallbackPool,
}

/// Thread sizes (`ferrule_runtime_configure`). Absent fields keep the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Async worker threads (default: one per core).
    #[serde(default)]
    pub worker_threads: Option<usize>,
    /// Most threads in Tokio's blocking pool, which only does ferrule's own file
    /// and process work (default 512).
    #[serde(default)]
    pub max_blocking_threads: Option<usize>,
    /// Most threads running host tool callbacks at once, across all runs
    /// (default 4096). Calls beyond it wait for a thread.
    #[serde(default)]
    pub max_callback_threads: Option<usize>,
    /// Most threads delivering events at once, across all runs (default 4096).
    #[serde(default)]
    pub max_event_threads: Option<usize>,
    /// Stack size in bytes of every callback and event thread (default 2 MiB,
    /// at least 64 KiB).
    #[serde(default)]
    pub callback_stack_size: Option<usize>,
}

impl RuntimeConfig {
    fn check(&self) -> Result<()> {
        let counts =
            [self.worker_threads, self.max_blocking_threads, self.max_callback_threads, self.max_event_threads];
        if counts.contains(&Some(0)) {
            return Err(Error::invalid_arg("runtime config: thread counts must be at least 1"));
        }
        if self.callback_stack_size.is_some_and(|size| size < MIN_CALLBACK_STACK_SIZE) {
            return Err(Error::invalid_arg(format!(
                "runtime config: callback_stack_size must be at least {MIN_CALLBACK_STACK_SIZE} bytes"
            )));
        }
        Ok(())
    }
}

/// Sets the thread sizes. Fails with `ALREADY_INITIALIZED` once anything has
/// started or after an earlier successful call.
pub fn configure(config: RuntimeConfig) -> Result<()> {
    config.check()?;
    let mut slot = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if slot.frozen || slot.config.is_some() {
        return Err(Error::new(
            ErrorCode::AlreadyInitialized,
            "the runtime is already configured or running; configure it once, before any run starts",
        ));
    }
    slot.config = Some(config);
    Ok(())
}

/// The configuration, frozen: `configure` fails from now on.
fn frozen_config() -> RuntimeConfig {
    let mut slot = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    slot.frozen = true;
    slot.config.clone().unwrap_or_default()
}

/// The runtime, started on first use. Fails with `RESOURCE_EXHAUSTED` when the
/// system refuses its threads (a thread or memory limit); a later call tries again.
pub fn get() -> Result<&'static Runtime> {
    RUNTIME.get_or_try_init(start_runtime)
}

fn start_runtime() -> Result<Runtime> {
    crate::panic::install_quiet_hook();
    let config = frozen_config();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .enable_all()
        .thread_name_fn(|| {
            static NEXT: AtomicUsize = AtomicUsize::new(1);
            format!("ferrule-{}", NEXT.fetch_add(1, Ordering::Relaxed))
        })
        .on_thread_start(|| {
            ON_RUNTIME_THREAD.with(|flag| flag.set(true));
            crate::panic::quiet_thread();
        });
    if let Some(workers) = config.worker_threads {
        builder.worker_threads(workers);
    }
    if let Some(blocking) = config.max_blocking_threads {
        builder.max_blocking_threads(blocking);
    }
    // Tokio panics when it cannot start a worker thread; that is a resource
    // limit, not a bug, so it becomes an error here.
    let _quiet = crate::panic::QuietZone::enter();
    let built = catch_unwind(AssertUnwindSafe(|| builder.build()));
    let runtime = match built {
        Ok(Ok(runtime)) => runtime,
        Ok(Err(error)) => return Err(threads_refused("its runtime", &error.to_string())),
        Err(payload) => return Err(threads_refused("its runtime", &crate::panic::describe(payload.as_ref()))),
    };
    watch_for_fork();
    Ok(runtime)
}

/// The pool that runs host tool callbacks, cancel handlers and released user data.
pub(crate) fn tool_callbacks() -> &'static CallbackPool {
    &pools().tool_callbacks
}

/// The pool that delivers events.
pub(crate) fn event_delivery() -> &'static CallbackPool {
    &pools().events
}

fn pools() -> &'static Pools {
    POOLS.get_or_init(|| {
        let config = frozen_config();
        let stack_size = config.callback_stack_size.unwrap_or(DEFAULT_CALLBACK_STACK_SIZE);
        watch_for_fork();
        Pools {
            tool_callbacks: CallbackPool::new(
                "ferrule-cb",
                config.max_callback_threads.unwrap_or(DEFAULT_MAX_CALLBACK_THREADS),
                stack_size,
            ),
            events: CallbackPool::new(
                "ferrule-ev",
                config.max_event_threads.unwrap_or(DEFAULT_MAX_CALLBACK_THREADS),
                stack_size,
            ),
        }
    })
}

/// The error for threads the system would not start.
pub(crate) fn threads_refused(what: &str, reason: &str) -> Error {
    Error::new(
        ErrorCode::ResourceExhausted,
        format!("ferrule could not start the threads of {what} (a thread or memory limit?): {reason}"),
    )
}

/// Whether the current thread belongs to ferrule's Tokio runtime, where nothing
/// may block.
pub(crate) fn on_runtime_thread() -> bool {
    ON_RUNTIME_THREAD.with(Cell::get)
}

fn watch_for_fork() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::pthread_atfork(None, None, Some(mark_forked)) };
    });
}

extern "C" fn mark_forked() {
    FORKED.store(true, Ordering::SeqCst);
}

/// Whether this is a child forked after ferrule's threads started.
pub(crate) fn is_forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// Fails with `FORKED` in a child forked after ferrule's threads started.
pub fn check_not_forked() -> Result<()> {
    if is_forked() {
        return Err(Error::new(
            ErrorCode::Forked,
            "this process was forked after ferrule's threads started; ferrule cannot be used in the child",
        ));
    }
    Ok(())
}
