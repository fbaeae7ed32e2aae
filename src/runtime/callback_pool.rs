//! A pool of threads of ferrule's own, where host code runs and may block.
//!
//! Threads start on demand, up to a bound, and an idle one ends after a while
//! (one always stays). The rule that keeps a job from being stranded: whenever a
//! job is queued, some thread is awake and about to look at the queue, or a new
//! thread is started, or the pool is at its bound (then the job waits for the next
//! thread to finish what it is doing). A thread that takes a job while more are
//! queued wakes (or starts) another first, so a burst fans out without waking
//! a thread per job, and a job that blocks forever never holds up the ones
//! behind it while the bound allows another thread.
//!
//! After a job, one thread at a time spins briefly before sleeping: host tools
//! that complete at once then cost no sleep and wake-up per call.

use std::collections::VecDeque;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

/// Work for a pool thread.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long an idle thread waits for work before it ends.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// How long a thread spins for the next job before it sleeps.
const SPIN: Duration = Duration::from_micros(50);
/// Threads spinning at once.
const MAX_SPINNERS: usize = 1;
/// How long a job waits before asking again for a thread the system refused.
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// A bounded, growing pool of named threads.
pub(crate) struct CallbackPool {
    name: &'static str,
    max_threads: usize,
    stack_size: usize,
    state: Mutex<PoolState>,
    wake: Condvar,
    /// Jobs in the queue, readable without the lock by a spinning thread.
    queued: AtomicUsize,
    next_thread: AtomicUsize,
}

struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    /// Threads awake that will look at the queue before they sleep.
    searching: usize,
    spinning: usize,
    sleeping: usize,
    /// Wake-ups granted to sleeping threads and not yet taken.
    wake_tokens: usize,
}

/// A job the pool could not take: it has no thread and the system refused a new
/// one.
pub(crate) struct Refused {
    pub(crate) job: Job,
    pub(crate) error: io::Error,
}

impl CallbackPool {
    pub(crate) fn new(name: &'static str, max_threads: usize, stack_size: usize) -> Self {
        CallbackPool {
            name,
            max_threads,
            stack_size,
            state: Mutex::new(PoolState {
                queue: VecDeque::new(),
                threads: 0,
                searching: 0,
                spinning: 0,
                sleeping: 0,
                wake_tokens: 0,
            }),
            wake: Condvar::new(),
            queued: AtomicUsize::new(0),
            next_thread: AtomicUsize::new(1),
        }
    }

    /// Runs `job` on a pool thread: at once when one is free or can be started,
    /// later when the pool is at its bound. Fails only when the pool has no
    /// thread at all and the system refuses to start one.
    pub(crate) fn submit(&'static self, job: Job) -> Result<(), Refused> {
        let mut state = self.lock();
        if state.searching > 0 || state.sleeping > 0 || state.threads >= self.max_threads {
            self.enqueue(&mut state, job);
            if state.searching == 0 {
                self.recruit(&mut state);
            }
            return Ok(());
        }
        state.threads += 1;
        match self.start_thread(Some(job)) {
            Ok(()) => Ok(()),
            Err((job, error)) => {
                state.threads -= 1;
                // The thread never ran, so the job came back.
                let Some(job) = job else { return Ok(()) };
                if state.threads == 0 {
                    return Err(Refused { job, error });
                }
                // A running thread takes it when it is done.
                self.enqueue(&mut state, job);
                Ok(())
            }
        }
    }

    /// Runs `job` on a pool thread, or on this thread when the pool has none and
    /// can start none. For short work that must happen either way (releasing user
    /// data, a cancel handler).
    pub(crate) fn submit_or_run_here(&'static self, job: Job) {
        if let Err(refused) = self.submit(job) {
            run(refused.job);
        }
    }

    /// Runs `work` on a pool thread and waits for its value; `None` if it
    /// panicked. While the system refuses every thread, asks again every few
    /// milliseconds.
    pub(crate) async fn run<R: Send + 'static>(&'static self, work: impl FnOnce() -> R + Send + 'static) -> Option<R> {
        let (sender, receiver) = oneshot::channel();
        let mut job: Job = Box::new(move || {
            let _ = sender.send(work());
        });
        loop {
            match self.submit(job) {
                Ok(()) => return receiver.await.ok(),
                Err(refused) => {
                    job = refused.job;
                    tokio::time::sleep(RETRY_DELAY).await;
                }
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enqueue(&self, state: &mut PoolState, job: Job) {
        state.queue.push_back(job);
        self.queued.fetch_add(1, Ordering::Release);
    }

    fn dequeue(&self, state: &mut PoolState) -> Option<Job> {
        let job = state.queue.pop_front()?;
        self.queued.fetch_sub(1, Ordering::Release);
        Some(job)
    }

    /// Gets one more thread looking at the queue: a sleeping one, else a new one.
    /// When neither is possible the queue waits for a busy thread.
    fn recruit(&'static self, state: &mut PoolState) {
        if state.sleeping > 0 {
            state.sleeping -= 1;
            state.searching += 1;
            state.wake_tokens += 1;
            self.wake.notify_one();
        } else if state.threads < self.max_threads {
            state.threads += 1;
            state.searching += 1;
            if self.start_thread(None).is_err() {
                state.threads -= 1;
                state.searching -= 1;
            }
        }
    }

    /// Starts a thread, counted by the caller, that runs `first` (if any) and then
    /// serves the queue. Called with the state locked.
    fn start_thread(&'static self, first: Option<Job>) -> Result<(), (Option<Job>, io::Error)> {
        let number = self.next_thread.fetch_add(1, Ordering::Relaxed);
        // The job comes back through this slot if the thread cannot start.
        let slot = std::sync::Arc::new(Mutex::new(first));
        let handed = slot.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{}-{number}", self.name))
            .stack_size(self.stack_size)
            .spawn(move || {
                crate::panic::quiet_thread();
                let first = handed.lock().unwrap_or_else(|e| e.into_inner()).take();
                self.serve(first);
            });
        match spawned {
            Ok(_) => Ok(()),
            Err(error) => Err((slot.lock().unwrap_or_else(|e| e.into_inner()).take(), error)),
        }
    }

    /// A pool thread's life: run the first job, then take queued jobs until idle
    /// for `KEEP_ALIVE`.
    fn serve(&'static self, first: Option<Job>) {
        let mut state = match first {
            Some(job) => {
                run(job);
                self.lock()
            }
            None => {
                // Started by `recruit`, which counted this thread as searching.
                let mut state = self.lock();
                state.searching -= 1;
                state
            }
        };
        loop {
            if let Some(job) = self.dequeue(&mut state) {
                if !state.queue.is_empty() && state.searching == 0 {
                    self.recruit(&mut state);
                }
                drop(state);
                run(job);
                state = self.lock();
                continue;
            }
            if state.spinning < MAX_SPINNERS {
                state.spinning += 1;
                state.searching += 1;
                drop(state);
                super::spin_until(SPIN, || self.queued.load(Ordering::Acquire) > 0);
                state = self.lock();
                state.spinning -= 1;
                state.searching -= 1;
                if !state.queue.is_empty() {
                    continue;
                }
            }
            state.sleeping += 1;
            let (guard, _) = self
                .wake
                .wait_timeout_while(state, KEEP_ALIVE, |s| s.wake_tokens == 0)
                .unwrap_or_else(|e| e.into_inner());
            state = guard;
            if state.wake_tokens > 0 {
                // `recruit` moved this thread from sleeping to searching.
                state.wake_tokens -= 1;
                state.searching -= 1;
                continue;
            }
            state.sleeping -= 1;
            if state.threads > 1 {
                state.threads -= 1;
                return;
            }
        }
    }
}

/// Runs a job; a panic (only Rust code can panic here) ends the job, not the thread.
fn run(job: Job) {
    let _ = catch_unwind(AssertUnwindSafe(job));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;

    fn pool(max_threads: usize) -> &'static CallbackPool {
        Box::leak(Box::new(CallbackPool::new("test-pool", max_threads, 256 << 10)))
    }

    #[test]
    fn every_job_runs_once() {
        let pool = pool(8);
        let (done, finished) = mpsc::channel();
        for i in 0..1000 {
            let done = done.clone();
            pool.submit(Box::new(move || done.send(i).unwrap())).ok().unwrap();
        }
        let mut seen: Vec<i32> = (0..1000).map(|_| finished.recv().unwrap()).collect();
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_blocked_job_does_not_hold_up_the_next_while_the_bound_allows() {
        let pool = pool(4);
        let (release, gate) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let blocked = gate.clone();
        pool.submit(Box::new(move || blocked.lock().unwrap().recv().unwrap())).ok().unwrap();
        let (done, finished) = mpsc::channel();
        pool.submit(Box::new(move || done.send(()).unwrap())).ok().unwrap();
        finished.recv().unwrap();
        release.send(()).unwrap();
    }

    #[test]
    fn at_the_bound_jobs_wait_for_a_thread() {
        let pool = pool(2);
        let (release, gate) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let (started, starts) = mpsc::channel();
        for _ in 0..2 {
            let (gate, started) = (gate.clone(), started.clone());
            pool.submit(Box::new(move || {
                started.send(()).unwrap();
                gate.lock().unwrap().recv().unwrap();
            }))
            .ok()
            .unwrap();
        }
        starts.recv().unwrap();
        starts.recv().unwrap();
        let (done, finished) = mpsc::channel();
        pool.submit(Box::new(move || done.send(()).unwrap())).ok().unwrap();
        assert!(finished.try_recv().is_err());
        assert_eq!(pool.lock().queue.len(), 1);
        release.send(()).unwrap();
        finished.recv().unwrap();
        release.send(()).unwrap();
    }

    #[test]
    fn a_panicking_job_leaves_the_thread_serving() {
        let pool = pool(1);
        pool.submit(Box::new(|| panic!("job failed"))).ok().unwrap();
        let (done, finished) = mpsc::channel();
        pool.submit(Box::new(move || done.send(()).unwrap())).ok().unwrap();
        finished.recv().unwrap();
    }
}
