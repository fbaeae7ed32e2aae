//! Waiting for a batch's next result: poll briefly before sleeping.
//!
//! Most tools answer within microseconds (a host callback that completes at once,
//! a built-in reading a small file). Sleeping until woken costs more than that:
//! the runtime thread parks, and the thread that completes the call must wake it,
//! which on a virtual machine is an interrupt across processors. So the run first
//! polls the batch for a few microseconds, yielding its processor now and then,
//! and only then sleeps. The spin is bounded per wait, so a slow tool costs at
//! most that much processor time per result. Only a run that waits alone
//! spins: with many runs waiting at once, their spins would take the
//! processors from the callback threads that produce the results (a thousand
//! runs of a blocking host tool took 40 times as long). Every wait counts,
//! a slow tool's and a nested agent's caller's too: while one lasts, the
//! other runs pay a wake-up per result (a few microseconds) instead.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::Stream;

/// How long a run polls for its batch's next result before it sleeps.
const EAGER_WAIT: Duration = Duration::from_micros(20);

/// Runs waiting for a batch's next result in the process: the live
/// [`EagerNext`] futures.
static WAITING: AtomicUsize = AtomicUsize::new(0);

/// The next item of `stream`, polled eagerly for up to [`EAGER_WAIT`] first
/// when no other run waits.
pub(crate) fn eager_next<S: Stream + Unpin>(stream: &mut S) -> EagerNext<'_, S> {
    WAITING.fetch_add(1, Ordering::Relaxed);
    EagerNext(stream)
}

/// The future of [`eager_next`].
pub(crate) struct EagerNext<'a, S>(&'a mut S);

impl<S> Drop for EagerNext<'_, S> {
    fn drop(&mut self) {
        WAITING.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<S: Stream + Unpin> Future for EagerNext<'_, S> {
    type Output = Option<S::Item>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Polls with a waker that does nothing: the stream's items still wake the
        // stream's own bookkeeping, so a ready item is found on the next poll.
        let mut quiet = Context::from_waker(Waker::noop());
        let mut ready = None;
        let stream = &mut *self.0;
        // Once the task's cooperative budget is spent, tokio's budgeted
        // resources (a host's answer through a oneshot, a channel, a timer)
        // refuse every poll until the task yields, so spinning on them is for
        // nothing: the spin stops, and the poll below lets the task yield (a
        // refused resource has queued its wake-up). A call finishing through
        // something outside the budget (an agent tool's `Notify`) is then
        // slept on rather than spun on, which costs a wake, not a result.
        if WAITING.load(Ordering::Relaxed) == 1 {
            crate::runtime::spin_until(EAGER_WAIT, || match Pin::new(&mut *stream).poll_next(&mut quiet) {
                Poll::Ready(item) => {
                    ready = Some(item);
                    true
                }
                Poll::Pending => !tokio::task::coop::has_budget_remaining(),
            });
        }
        if let Some(item) = ready {
            return Poll::Ready(item);
        }
        Pin::new(&mut *self.0).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A stream that never has an item and counts how often it was polled.
    struct Counted<'a>(&'a AtomicUsize);

    impl Stream for Counted<'_> {
        type Item = ();

        fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<()>> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn a_run_that_waits_beside_another_does_not_spin() {
        let (mine, other) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let (mut stream, mut other_stream) = (Counted(&mine), Counted(&other));
        let _waiting = eager_next(&mut other_stream);
        let mut next = eager_next(&mut stream);
        let polled = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut next).poll(cx).is_pending())).await;
        assert!(polled, "no item");
        assert_eq!(mine.load(Ordering::Relaxed), 1, "polled once, not spun on");
    }
}
