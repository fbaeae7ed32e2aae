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
//! All of it starts together on first use, each pool with one thread that stays;
//! the sizes may be set once, before that. A process forked after the threads
//! started cannot use them (they did not survive the fork), so every entry point
//! refuses with `FORKED` there.

mod callback_pool;
pub(crate) mod callback_returns;
mod callback_scope;
mod outlet;
mod spin;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex, Once};
use std::time::Duration;

use once_cell::sync::OnceCell;
use serde::Deserialize;
use tokio::runtime::Runtime;

pub(crate) use callback_pool::CallbackPool;
pub(crate) use callback_scope::{CallbackKind, CallbackScope};
pub(crate) use outlet::{Outlet, Receive};
pub(crate) use spin::spin_until;

use crate::error::{Error, ErrorCode, Result};

/// Default bound on the threads of each callback pool.
const DEFAULT_MAX_CALLBACK_THREADS: usize = 4096;
/// Default stack size of a callback thread: what Rust gives its threads.
const DEFAULT_CALLBACK_STACK_SIZE: usize = 2 << 20;
/// Smallest callback stack accepted; below this even ferrule's own frames do not fit.
const MIN_CALLBACK_STACK_SIZE: usize = 64 << 10;
/// Largest callback stack accepted: more is a mistake, and no thread would start.
const MAX_CALLBACK_STACK_SIZE: usize = 256 << 20;
/// Most runtime workers accepted; more only starves the machine.
const MAX_WORKER_THREADS: usize = 1024;
/// Most threads accepted for any pool.
const MAX_POOL_THREADS: usize = 65536;

static THREADS: OnceCell<Threads> = OnceCell::new();
/// Pools made by start attempts; one that failed later leaves its pools here for
/// the next attempt with the same sizes, instead of another set of threads.
static POOLS: Mutex<Vec<&'static CallbackPool>> = Mutex::new(Vec::new());
static CONFIG: Mutex<ConfigSlot> = Mutex::new(ConfigSlot { config: None, frozen: false });
static FORKED: AtomicBool = AtomicBool::new(false);

thread_local! {
    static ON_RUNTIME_THREAD: Cell<bool> = const { Cell::new(false) };
}

struct ConfigSlot {
    config: Option<RuntimeConfig>,
    /// Set once threads were started with the configuration.
    frozen: bool,
}

/// ferrule's threads, once started. They live as long as the process.
pub(crate) struct Threads {
    pub(crate) runtime: Runtime,
    pub(crate) tool_callbacks: &'static CallbackPool,
    pub(crate) events: &'static CallbackPool,
}

/// Thread sizes (`ferrule_runtime_configure`). Absent fields keep the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    /// Async worker threads (default: one per core; at most 1024).
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
    /// from 64 KiB to 256 MiB).
    #[serde(default)]
    pub callback_stack_size: Option<usize>,
}

impl RuntimeConfig {
    fn check(&self) -> Result<()> {
        let bounds = [
            ("worker_threads", self.worker_threads, MAX_WORKER_THREADS),
            ("max_blocking_threads", self.max_blocking_threads, MAX_POOL_THREADS),
            ("max_callback_threads", self.max_callback_threads, MAX_POOL_THREADS),
            ("max_event_threads", self.max_event_threads, MAX_POOL_THREADS),
        ];
        for (name, count, most) in bounds {
            if count.is_some_and(|n| n == 0 || n > most) {
                return Err(Error::invalid_arg(format!(
                    "runtime config: {name} must be at least 1 and at most {most}"
                )));
            }
        }
        if self
            .callback_stack_size
            .is_some_and(|size| !(MIN_CALLBACK_STACK_SIZE..=MAX_CALLBACK_STACK_SIZE).contains(&size))
        {
            return Err(Error::invalid_arg(format!(
                "runtime config: callback_stack_size must be at least {MIN_CALLBACK_STACK_SIZE} and at most {MAX_CALLBACK_STACK_SIZE} bytes"
            )));
        }
        Ok(())
    }
}

/// Sets the thread sizes. Fails with `ALREADY_INITIALIZED` once ferrule's threads
/// have started or after an earlier successful call.
pub fn configure(config: RuntimeConfig) -> Result<()> {
    config.check()?;
    let mut slot = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    if slot.frozen || slot.config.is_some() {
        return Err(Error::new(
            ErrorCode::AlreadyInitialized,
            "ferrule's threads are already configured or running; configure them once, before any run starts",
        ));
    }
    slot.config = Some(config);
    Ok(())
}

/// The runtime, started with the callback pools on first use. Fails with
/// `RESOURCE_EXHAUSTED` when the system refuses their threads (a thread or memory
/// limit); a later call tries again.
pub fn get() -> Result<&'static Runtime> {
    threads().map(|threads| &threads.runtime)
}

/// ferrule's threads, started on first use.
pub(crate) fn threads() -> Result<&'static Threads> {
    THREADS.get_or_try_init(start)
}

/// ferrule's threads, if they have started.
pub(crate) fn started() -> Option<&'static Threads> {
    THREADS.get()
}

/// Starts everything, or nothing that stays: the configuration is frozen only
/// when the runtime and both pools are up, so a host refused for lack of threads
/// may configure smaller sizes and try again.
fn start() -> Result<Threads> {
    crate::panic::install_quiet_hook();
    let config = CONFIG.lock().unwrap_or_else(|e| e.into_inner()).config.clone().unwrap_or_default();
    let stack_size = config.callback_stack_size.unwrap_or(DEFAULT_CALLBACK_STACK_SIZE);
    let tool_callbacks = started_pool("ferrule-cb", config.max_callback_threads, stack_size, None)?;
    let events = started_pool("ferrule-ev", config.max_event_threads, stack_size, Some(EVENT_PATIENCE))?;
    let runtime = build_runtime(&config)?;
    CONFIG.lock().unwrap_or_else(|e| e.into_inner()).frozen = true;
    watch_for_fork();
    Ok(Threads { runtime, tool_callbacks, events })
}

/// How long a run's events wait for a busy event thread before another starts
/// (see `CallbackPool::patient`): deliveries take microseconds, and a host that
/// blocks in its event callback slows its own run.
const EVENT_PATIENCE: Duration = Duration::from_millis(1);

/// A pool with its first thread running: one an earlier attempt made, or a new one.
fn started_pool(
    name: &'static str,
    bound: Option<usize>,
    stack_size: usize,
    patience: Option<Duration>,
) -> Result<&'static CallbackPool> {
    let max_threads = bound.unwrap_or(DEFAULT_MAX_CALLBACK_THREADS);
    let mut made = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let pool = match made.iter().find(|pool| pool.has_shape(name, max_threads, stack_size)) {
        Some(pool) => *pool,
        None => {
            let pool = CallbackPool::new(name, max_threads, stack_size);
            let pool = match patience {
                Some(patience) => pool.patient(patience),
                None => pool,
            };
            let pool: &'static CallbackPool = Box::leak(Box::new(pool));
            made.push(pool);
            pool
        }
    };
    pool.start().map_err(|e| threads_refused("its callback pools", &e.to_string()))?;
    Ok(pool)
}

/// Builds the runtime on a thread of its own. Tokio panics when the system
/// refuses a worker thread, and if it had started another one first, the
/// unwinding waits for that worker forever. The panic is reported as it starts,
/// so the caller gets its error while that thread stays stuck.
fn build_runtime(config: &RuntimeConfig) -> Result<Runtime> {
    let (report, outcome) = mpsc::channel::<std::result::Result<Runtime, String>>();
    let on_panic = report.clone();
    let config = config.clone();
    let builder = std::thread::Builder::new().name("ferrule-start".to_owned()).spawn(move || {
        crate::panic::quiet_thread();
        crate::panic::report_panics_to(move |reason| {
            let _ = on_panic.send(Err(reason));
        });
        let _ = report.send(runtime_builder(&config).build().map_err(|e| e.to_string()));
    });
    if let Err(error) = builder {
        return Err(threads_refused("its runtime", &error.to_string()));
    }
    match outcome.recv() {
        Ok(Ok(runtime)) => Ok(runtime),
        Ok(Err(reason)) => Err(threads_refused("its runtime", &reason)),
        Err(_) => Err(threads_refused("its runtime", "the thread building it ended early")),
    }
}

fn runtime_builder(config: &RuntimeConfig) -> tokio::runtime::Builder {
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
    builder
}

/// The error for threads the system would not start.
fn threads_refused(what: &str, reason: &str) -> Error {
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
