//! An outlet: what ferrule hands the host outside any run (log records,
//! finished spans), delivered on a thread of its own, in order, one at a time.
//!
//! Offering never blocks and never fails: the queue is bounded, and what does
//! not fit is counted and dropped, so a host receiver that stalls costs its
//! own records and never a run's progress. The receiver may be replaced or
//! removed at any time; each item goes to the receiver that was set when it
//! was offered, and a receiver is let go (its host data freed) once the last
//! item offered to it was delivered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorCode, Result};

/// How long an outlet's thread waits, after an item woke it, for more to
/// deliver in the same wake.
const LINGER: std::time::Duration = std::time::Duration::from_millis(5);

/// Takes the items of an outlet. Runs on the outlet's thread only.
pub(crate) type Receive<T> = dyn Fn(T) + Send + Sync;

/// One outlet. A `static`; offered to from any thread.
pub(crate) struct Outlet<T: Send + 'static> {
    /// The name of its thread.
    thread_name: &'static str,
    /// The items queued at most.
    capacity: usize,
    /// The item that tells the receiver how many were dropped before the next.
    on_dropped: fn(u64) -> Option<T>,
    state: Mutex<State<T>>,
    dropped: AtomicU64,
}

struct State<T> {
    receiver: Option<Arc<Receive<T>>>,
    /// The queue to the thread, once it started.
    queue: Option<SyncSender<Queued<T>>>,
}

/// An item, its receiver, and how many items were dropped just before it.
type Queued<T> = (Arc<Receive<T>>, T, u64);

impl<T: Send + 'static> Outlet<T> {
    /// An outlet with no receiver and no thread yet. `on_dropped(n)` makes the
    /// item (if any) delivered first after `n` items were dropped.
    pub(crate) const fn new(thread_name: &'static str, capacity: usize, on_dropped: fn(u64) -> Option<T>) -> Self {
        Outlet {
            thread_name,
            capacity,
            on_dropped,
            state: Mutex::new(State { receiver: None, queue: None }),
            dropped: AtomicU64::new(0),
        }
    }

    /// Starts the thread, if it has not started. Fails with
    /// `RESOURCE_EXHAUSTED` when the system refuses it.
    pub(crate) fn open(&'static self) -> Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.queue.is_none() {
            state.queue = Some(self.start()?);
        }
        Ok(())
    }

    /// Sets the receiver (`None` removes it); items reach it once the outlet
    /// is [open](Self::open).
    pub(crate) fn set(&self, receiver: Option<Arc<Receive<T>>>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // The old receiver goes here unless items offered to it are queued:
        // then with the last of them, on the outlet's thread.
        let old = std::mem::replace(&mut state.receiver, receiver);
        drop(state);
        drop(old);
    }

    /// Queues `item` for the receiver; without one, or with the queue full,
    /// the item is dropped (the latter counted).
    pub(crate) fn offer(&self, item: T) {
        let Ok(state) = self.state.lock() else { return };
        let (Some(receiver), Some(queue)) = (&state.receiver, &state.queue) else { return };
        // Those dropped since the last item queued are told before this one.
        let before = self.dropped.swap(0, Ordering::Relaxed);
        if let Err(TrySendError::Full(_)) = queue.try_send((Arc::clone(receiver), item, before)) {
            self.dropped.fetch_add(before + 1, Ordering::Relaxed);
        }
    }

    fn start(&'static self) -> Result<SyncSender<Queued<T>>> {
        let (queue, items) = sync_channel(self.capacity);
        std::thread::Builder::new().name(self.thread_name.to_owned()).spawn(move || self.deliver(items)).map_err(
            |error| {
                Error::new(
                    ErrorCode::ResourceExhausted,
                    format!("ferrule could not start its thread {}: {error}", self.thread_name),
                )
            },
        )?;
        super::watch_for_fork();
        Ok(queue)
    }

    /// The thread: each item to its receiver, for as long as the process
    /// lives. Idle, it sleeps until an item comes; then it lingers a moment
    /// and takes what came meanwhile, so a busy outlet wakes its thread once
    /// per [`LINGER`] rather than once per item (each wake costs the offering
    /// thread a system call and the process a context switch).
    fn deliver(&self, items: Receiver<Queued<T>>) {
        crate::panic::quiet_thread();
        // A receiver that panics loses its item, not the thread.
        let hand = |receiver: &Receive<T>, item: T| {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| receiver(item)));
        };
        let deliver = |(receiver, item, dropped): Queued<T>| {
            if let Some(note) = (dropped > 0).then(|| (self.on_dropped)(dropped)).flatten() {
                hand(&*receiver, note);
            }
            hand(&*receiver, item);
        };
        while let Ok(first) = items.recv() {
            deliver(first);
            std::thread::sleep(LINGER);
            items.try_iter().for_each(deliver);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    const NOTE: u64 = u64::MAX;

    /// Items noted as dropped come as `NOTE` then the count.
    fn note(count: u64) -> Option<u64> {
        Some(NOTE - count)
    }

    #[test]
    fn items_arrive_in_order_and_what_did_not_fit_is_counted() {
        static OUTLET: Outlet<u64> = Outlet::new("ferrule-test-outlet", 4, note);
        OUTLET.offer(0); // No receiver: gone.
        OUTLET.open().unwrap();
        let (seen, arrived) = channel();
        let (release, held) = channel::<()>();
        let held = Mutex::new(held);
        OUTLET.set(Some(Arc::new(move |item| {
            if item == 1 {
                // The first waits until the test has filled the queue.
                let _ = held.lock().unwrap().recv();
            }
            seen.send(item).unwrap();
        })));
        OUTLET.offer(1);
        std::thread::sleep(Duration::from_millis(50));
        for item in 2..12 {
            OUTLET.offer(item);
        }
        release.send(()).unwrap();
        let got: Vec<u64> = (0..5).map(|_| arrived.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
        // 1 was taken; 2 to 5 fitted; 6 to 11 did not, and are told before the next.
        assert_eq!(got, [1, 2, 3, 4, 5]);
        assert!(arrived.recv_timeout(Duration::from_millis(50)).is_err(), "the note comes with an item, never alone");
        OUTLET.offer(12);
        let got: Vec<u64> = (0..2).map(|_| arrived.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
        assert_eq!(got, [NOTE - 6, 12]);
    }

    #[test]
    fn a_replaced_receiver_gets_what_was_offered_to_it_then_goes() {
        static OUTLET: Outlet<u64> = Outlet::new("ferrule-test-outlet", 64, note);
        struct Goes(std::sync::mpsc::Sender<&'static str>);
        impl Drop for Goes {
            fn drop(&mut self) {
                let _ = self.0.send("gone");
            }
        }
        OUTLET.open().unwrap();
        let (seen, arrived) = channel::<String>();
        let (gone_tx, gone) = channel();
        let goes = Goes(gone_tx);
        let first_seen = seen.clone();
        let receiver: Arc<Receive<u64>> = Arc::new(move |item: u64| {
            let _ = &goes;
            if item == 1 {
                std::thread::sleep(Duration::from_millis(50));
            }
            first_seen.send(format!("first {item}")).unwrap();
        });
        OUTLET.set(Some(receiver));
        OUTLET.offer(1);
        OUTLET.offer(2);
        OUTLET.set(Some(Arc::new(move |item: u64| {
            if item == 3 {
                panic!("a receiver that panics loses its item");
            }
            seen.send(format!("second {item}")).unwrap();
        })));
        OUTLET.offer(3);
        OUTLET.offer(4);
        let got: Vec<String> = (0..3).map(|_| arrived.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
        assert_eq!(got, ["first 1", "first 2", "second 4"]);
        assert_eq!(gone.recv_timeout(Duration::from_secs(10)), Ok("gone"), "the first receiver was let go");
        OUTLET.set(None);
        OUTLET.offer(5);
        assert!(arrived.recv_timeout(Duration::from_millis(50)).is_err());
    }
}
