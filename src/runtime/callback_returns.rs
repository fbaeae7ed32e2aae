//! Host callbacks on the callback pool that answered their request and have
//! not returned yet, counted per run.
//!
//! A blocking tool's, hook's or model's callback may answer its request and go
//! on running for a while; until it returns, ferrule holds its user data. A run
//! ends only once such callbacks of its own have returned, so that when a wait
//! returns and the host frees the agent, the user data goes at once, on the
//! host's thread. Callbacks that had not answered when the run stopped waiting
//! (a timeout, a cancel) are not waited for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;

/// Callbacks still running after answering, by run serial.
static RUNNING: Mutex<Option<HashMap<u64, usize>>> = Mutex::new(None);
/// The sum of `RUNNING`'s counts: a run's end looks no further when it is zero.
static TOTAL: AtomicUsize = AtomicUsize::new(0);
/// Woken whenever a run's count drops to zero.
static RETURNED: Notify = Notify::const_new();

fn running() -> std::sync::MutexGuard<'static, Option<HashMap<u64, usize>>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// A callback of the run `run_serial` answered its request and is still
/// running. Called before the answer reaches the run; [`returned`] follows.
pub(crate) fn answered_before_return(run_serial: u64) {
    let mut running = running();
    *running.get_or_insert_with(HashMap::new).entry(run_serial).or_default() += 1;
    TOTAL.fetch_add(1, Ordering::SeqCst);
}

/// A callback counted by [`answered_before_return`] returned and let go of
/// its user data.
pub(crate) fn returned(run_serial: u64) {
    let mut running = running();
    let Some(counts) = running.as_mut() else { return };
    let Some(count) = counts.get_mut(&run_serial) else { return };
    *count -= 1;
    TOTAL.fetch_sub(1, Ordering::SeqCst);
    if *count == 0 {
        counts.remove(&run_serial);
        drop(running);
        RETURNED.notify_waiters();
    }
}

/// Resolves once every callback of the run `run_serial` that answered has
/// returned.
pub(crate) async fn all_returned(run_serial: u64) {
    loop {
        let notified = RETURNED.notified();
        if TOTAL.load(Ordering::SeqCst) == 0 || !is_counted(run_serial) {
            return;
        }
        notified.await;
    }
}

fn is_counted(run_serial: u64) -> bool {
    running().as_ref().is_some_and(|counts| counts.contains_key(&run_serial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_ends_after_its_answered_callbacks_return() {
        all_returned(u64::MAX).await;
        answered_before_return(u64::MAX);
        answered_before_return(u64::MAX);
        let waiting = tokio::spawn(all_returned(u64::MAX));
        tokio::task::yield_now().await;
        returned(u64::MAX);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        returned(u64::MAX);
        waiting.await.unwrap();
        assert!(!is_counted(u64::MAX));
    }
}
