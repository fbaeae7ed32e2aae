//! A pool of threads of ferrule's own, where host code runs and may block.
//!
//! Threads start on demand, up to a bound, and an idle one ends after a while;
//! the first one, started with the runtime, always stays, so a queued job always
//! has a thread that will get to it. The rule that keeps a job from being
//! stranded behind jobs that block: whenever a job is queued, some thread is
//! awake and about to look at the queue, or a new thread is started, or the pool
//! is at its bound (then the job waits for the next thread to finish what it is
//! doing). When the system refuses a new thread, the pool tries again every few
//! milliseconds for as long as jobs wait. A thread that takes a job while more
//! are queued wakes (or starts) another first, so a burst fans out without waking
//! a thread per job.
//!
//! Urgent jobs (cancel handlers, releasing user data) never wait behind other
//! jobs, which may block forever: they take an idle thread, or a thread of their
//! own outside the bound.
//!
//! After a job, one thread at a time spins briefly before sleeping: host tools
//! that complete at once then cost no sleep and wake-up per call.
//!
//! A patient pool (event delivery) starts a thread for waiting jobs only once
//! they have waited its patience without a thread coming free, one thread per
//! wait: when many runs end at once, their quick deliveries take turns on the
//! threads there are instead of starting a thread each (hundreds, each one more
//! for a host runtime to adopt at its first callback). A queued job still
//! always has a thread that will get to it, a patience later at worst.

use std::collections::VecDeque;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
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
/// How long the pool waits before asking again for a thread the system refused.
const RETRY_DELAY: Duration = Duration::from_millis(10);

/// A bounded, growing pool of named threads.
pub(crate) struct CallbackPool {
    name: &'static str,
    max_threads: usize,
    stack_size: usize,
    /// How long queued jobs wait for a busy thread before a new one starts;
    /// `None`: a new thread starts at once.
    patience: Option<Duration>,
    state: Mutex<PoolState>,
    wake: Condvar,
    /// Jobs waiting in either queue, readable without the lock by a spinning thread.
    queued: AtomicUsize,
    next_thread: AtomicUsize,
}

struct PoolState {
    /// Urgent jobs that found no thread; served before `queue`.
    urgent: VecDeque<Job>,
    queue: VecDeque<Job>,
    threads: usize,
    /// Threads awake that will look at the queues before they sleep.
    searching: usize,
    spinning: usize,
    sleeping: usize,
    /// Wake-ups granted to sleeping threads and not yet taken.
    wake_tokens: usize,
    /// A retry after a refused thread is due.
    retry_due: bool,
    /// A patient recruit is due.
    recruit_due: bool,
}

impl CallbackPool {
    pub(crate) fn new(name: &'static str, max_threads: usize, stack_size: usize) -> Self {
        CallbackPool {
            name,
            max_threads,
            stack_size,
            patience: None,
            state: Mutex::new(PoolState {
                urgent: VecDeque::new(),
                queue: VecDeque::new(),
                threads: 0,
                searching: 0,
                spinning: 0,
                sleeping: 0,
                wake_tokens: 0,
                retry_due: false,
                recruit_due: false,
            }),
            wake: Condvar::new(),
            queued: AtomicUsize::new(0),
            next_thread: AtomicUsize::new(1),
        }
    }

    /// The pool, patient: queued jobs wait up to `patience` for a busy thread
    /// before a thread is started for them.
    pub(crate) fn patient(self, patience: Duration) -> Self {
        CallbackPool { patience: Some(patience), ..self }
    }

    /// Whether the pool was made with these parameters.
    pub(crate) fn has_shape(&self, name: &str, max_threads: usize, stack_size: usize) -> bool {
        self.name == name && self.max_threads == max_threads && self.stack_size == stack_size
    }

    /// Starts the pool's first thread, which stays for good, unless it has one.
    pub(crate) fn start(&'static self) -> io::Result<()> {
        let mut state = self.lock();
        if state.threads > 0 {
            return Ok(());
        }
        state.threads = 1;
        state.searching = 1;
        self.spawn(None, move |_| self.serve(None)).map_err(|(_, error)| {
            state.threads = 0;
            state.searching = 0;
            error
        })
    }

    /// Runs `job` on a pool thread: at once when one is free or can be started,
    /// later when the pool is at its bound or the system refuses a thread.
    pub(crate) fn submit(&'static self, job: Job) {
        let mut state = self.lock();
        let patient = self.patience.is_some() && state.threads > 0;
        if patient || state.searching > 0 || state.sleeping > 0 || state.threads >= self.max_threads {
            self.enqueue(&mut state, job);
            if state.searching == 0 {
                self.recruit(&mut state);
            }
            return;
        }
        state.threads += 1;
        if let Err((job, _)) = self.spawn(Some(job), move |first| self.serve(first)) {
            state.threads -= 1;
            if let Some(job) = job {
                self.enqueue(&mut state, job);
            }
            self.retry_later(&mut state);
        }
    }

    /// Runs `job` promptly, never behind other jobs: on an idle pool thread when
    /// one is free and nothing waits, otherwise on a thread of its own outside the
    /// bound. When the system refuses that thread, the job goes first in line and
    /// the pool keeps asking for a thread. For short work that must not wait for
    /// tool callbacks, which may block forever (even waiting for a cancel handler).
    pub(crate) fn submit_urgent(&'static self, job: Job) {
        let mut state = self.lock();
        let waiting = state.queue.len() + state.urgent.len();
        if waiting == 0 && (state.searching > 0 || state.sleeping > 0) {
            self.enqueue_urgent(&mut state, job);
            if state.searching == 0 {
                self.recruit(&mut state);
            }
            return;
        }
        if let Err((Some(job), _)) = self.spawn(Some(job), |job| job.into_iter().for_each(run)) {
            self.enqueue_urgent(&mut state, job);
            self.retry_later(&mut state);
        }
    }

    /// [`CallbackPool::submit_urgent`], waiting for `work`'s value; `None` if it
    /// panicked.
    pub(crate) async fn run_urgent<R: Send + 'static>(
        &'static self,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> Option<R> {
        let (job, receiver) = reporting(work);
        self.submit_urgent(job);
        receiver.await.ok()
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enqueue(&self, state: &mut PoolState, job: Job) {
        state.queue.push_back(job);
        self.queued.fetch_add(1, Ordering::Release);
    }

    fn enqueue_urgent(&self, state: &mut PoolState, job: Job) {
        state.urgent.push_back(job);
        self.queued.fetch_add(1, Ordering::Release);
    }

    fn dequeue(&self, state: &mut PoolState) -> Option<Job> {
        let job = state.urgent.pop_front().or_else(|| state.queue.pop_front())?;
        self.queued.fetch_sub(1, Ordering::Release);
        Some(job)
    }

    fn has_waiting(state: &PoolState) -> bool {
        !state.queue.is_empty() || !state.urgent.is_empty()
    }

    /// Gets one more thread looking at the queues: a sleeping one, else a new one
    /// (in a patient pool, a patience later if the jobs still wait then). At the
    /// bound the queues wait for a busy thread; when the system refuses a thread
    /// the pool asks again later.
    fn recruit(&'static self, state: &mut PoolState) {
        match (self.patience, super::started()) {
            (Some(patience), Some(threads)) if state.sleeping == 0 && state.threads < self.max_threads => {
                self.recruit_after(patience, threads, state)
            }
            _ => self.recruit_now(state),
        }
    }

    /// Wakes a sleeping thread, else starts one (below the bound).
    fn recruit_now(&'static self, state: &mut PoolState) {
        if state.sleeping > 0 {
            state.sleeping -= 1;
            state.searching += 1;
            state.wake_tokens += 1;
            self.wake.notify_one();
        } else if state.threads < self.max_threads {
            self.start_searcher(state);
        }
    }

    /// Recruits a thread in `patience` if jobs still wait then and no thread
    /// is looking at the queues.
    fn recruit_after(&'static self, patience: Duration, threads: &'static super::Threads, state: &mut PoolState) {
        if state.recruit_due {
            return;
        }
        state.recruit_due = true;
        threads.runtime.spawn(async move {
            tokio::time::sleep(patience).await;
            let mut state = self.lock();
            state.recruit_due = false;
            if Self::has_waiting(&state) && state.searching == 0 {
                self.recruit_now(&mut state);
            }
        });
    }

    /// Starts a new thread that looks at the queues (or asks again later).
    fn start_searcher(&'static self, state: &mut PoolState) {
        state.threads += 1;
        state.searching += 1;
        if self.spawn(None, move |_| self.serve(None)).is_err() {
            state.threads -= 1;
            state.searching -= 1;
            self.retry_later(state);
        }
    }

    /// Asks for a thread again in `RETRY_DELAY`, on the runtime's timer.
    fn retry_later(&'static self, state: &mut PoolState) {
        if state.retry_due {
            return;
        }
        let Some(threads) = super::started() else { return };
        state.retry_due = true;
        threads.runtime.spawn(async move {
            tokio::time::sleep(RETRY_DELAY).await;
            self.retry();
        });
    }

    fn retry(&'static self) {
        let mut state = self.lock();
        state.retry_due = false;
        while let Some(job) = state.urgent.pop_front() {
            self.queued.fetch_sub(1, Ordering::Release);
            if let Err((Some(job), _)) = self.spawn(Some(job), |job| job.into_iter().for_each(run)) {
                self.enqueue_urgent(&mut state, job);
                self.retry_later(&mut state);
                return;
            }
        }
        if !state.queue.is_empty() && state.searching == 0 {
            self.recruit(&mut state);
        }
    }

    /// Starts one of this pool's named threads running `body(job)`; gives `job`
    /// back when the system refuses the thread.
    fn spawn(
        &'static self,
        job: Option<Job>,
        body: impl FnOnce(Option<Job>) + Send + 'static,
    ) -> Result<(), (Option<Job>, io::Error)> {
        let number = self.next_thread.fetch_add(1, Ordering::Relaxed);
        // The job comes back through this slot if the thread cannot start.
        let slot = Arc::new(Mutex::new(job));
        let handed = slot.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{}-{number}", self.name))
            .stack_size(self.stack_size)
            .spawn(move || {
                crate::panic::quiet_thread();
                body(handed.lock().unwrap_or_else(|e| e.into_inner()).take());
            });
        match spawned {
            Ok(_) => Ok(()),
            Err(error) => Err((slot.lock().unwrap_or_else(|e| e.into_inner()).take(), error)),
        }
    }

    /// A pool thread's life: run the first job (if any), then take queued jobs
    /// until idle for `KEEP_ALIVE`. A thread without a first job was counted as
    /// searching when it was started.
    fn serve(&'static self, first: Option<Job>) {
        let mut state = match first {
            Some(job) => {
                run(job);
                self.lock()
            }
            None => {
                let mut state = self.lock();
                state.searching -= 1;
                state
            }
        };
        loop {
            if let Some(job) = self.dequeue(&mut state) {
                if Self::has_waiting(&state) && state.searching == 0 {
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
                if Self::has_waiting(&state) {
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

/// A job that sends `work`'s value to the returned receiver.
fn reporting<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> (Job, oneshot::Receiver<R>) {
    let (sender, receiver) = oneshot::channel();
    (
        Box::new(move || {
            let _ = sender.send(work());
        }),
        receiver,
    )
}

/// Runs a job; a panic (only Rust code can panic here) ends the job, not the thread.
fn run(job: Job) {
    let _ = catch_unwind(AssertUnwindSafe(job));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn pool(max_threads: usize) -> &'static CallbackPool {
        started(CallbackPool::new("test-pool", max_threads, 256 << 10))
    }

    /// `pool`, for good, with its first thread running.
    fn started(pool: CallbackPool) -> &'static CallbackPool {
        let pool: &'static CallbackPool = Box::leak(Box::new(pool));
        pool.start().unwrap();
        pool
    }

    fn gate() -> (mpsc::Sender<()>, Arc<Mutex<mpsc::Receiver<()>>>) {
        let (release, gate) = mpsc::channel::<()>();
        (release, Arc::new(Mutex::new(gate)))
    }

    #[test]
    fn every_job_runs_once() {
        let pool = pool(8);
        let (done, finished) = mpsc::channel();
        for i in 0..1000 {
            let done = done.clone();
            pool.submit(Box::new(move || done.send(i).unwrap()));
        }
        let mut seen: Vec<i32> = (0..1000).map(|_| finished.recv().unwrap()).collect();
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_blocked_job_does_not_hold_up_the_next_while_the_bound_allows() {
        let pool = pool(4);
        let (release, gate) = gate();
        pool.submit(Box::new(move || gate.lock().unwrap().recv().unwrap()));
        let (done, finished) = mpsc::channel();
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv().unwrap();
        release.send(()).unwrap();
    }

    #[test]
    fn at_the_bound_jobs_wait_and_urgent_ones_do_not() {
        let pool = pool(2);
        let (release, gate) = gate();
        let (started, starts) = mpsc::channel();
        for _ in 0..2 {
            let (gate, started) = (gate.clone(), started.clone());
            pool.submit(Box::new(move || {
                started.send(()).unwrap();
                gate.lock().unwrap().recv().unwrap();
            }));
        }
        starts.recv().unwrap();
        starts.recv().unwrap();
        let (done, finished) = mpsc::channel();
        let waiting = done.clone();
        pool.submit(Box::new(move || waiting.send("queued").unwrap()));
        assert!(finished.try_recv().is_err());
        assert_eq!(pool.lock().queue.len(), 1);
        // An urgent job gets a thread of its own while both are blocked.
        pool.submit_urgent(Box::new(move || done.send("urgent").unwrap()));
        assert_eq!(finished.recv().unwrap(), "urgent");
        release.send(()).unwrap();
        assert_eq!(finished.recv().unwrap(), "queued");
        release.send(()).unwrap();
    }

    fn patient_pool(max_threads: usize, patience: Duration) -> &'static CallbackPool {
        crate::runtime::threads().unwrap(); // the timer patient recruits wait on
        started(CallbackPool::new("test-pool", max_threads, 256 << 10).patient(patience))
    }

    #[test]
    fn a_patient_pool_serves_a_burst_of_quick_jobs_on_few_threads() {
        let pool = patient_pool(64, Duration::from_millis(20));
        let (release, gate) = gate();
        pool.submit(Box::new(move || gate.lock().unwrap().recv().unwrap()));
        let (done, finished) = mpsc::channel();
        for i in 0..1000 {
            let done = done.clone();
            pool.submit(Box::new(move || done.send(i).unwrap()));
        }
        let mut seen: Vec<i32> = (0..1000).map(|_| finished.recv().unwrap()).collect();
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        // The blocked thread, and the one started a patience after the burst.
        assert!(pool.lock().threads <= 3, "{} threads", pool.lock().threads);
        release.send(()).unwrap();
    }

    #[test]
    fn a_patient_pool_still_starts_threads_for_jobs_behind_blocked_ones() {
        let pool = patient_pool(8, Duration::from_millis(1));
        let (release, gate) = gate();
        let (started, starts) = mpsc::channel();
        for _ in 0..4 {
            let (gate, started) = (gate.clone(), started.clone());
            pool.submit(Box::new(move || {
                started.send(()).unwrap();
                gate.lock().unwrap().recv().unwrap();
            }));
        }
        for _ in 0..4 {
            starts.recv_timeout(Duration::from_secs(10)).expect("each blocking job got a thread");
        }
        let (done, finished) = mpsc::channel();
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv_timeout(Duration::from_secs(10)).expect("the job behind them ran");
        for _ in 0..4 {
            release.send(()).unwrap();
        }
    }

    #[test]
    fn a_panicking_job_leaves_the_thread_serving() {
        let pool = pool(1);
        pool.submit(Box::new(|| panic!("job failed")));
        let (done, finished) = mpsc::channel();
        pool.submit(Box::new(move || done.send(()).unwrap()));
        finished.recv().unwrap();
    }
}
