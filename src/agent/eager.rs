//! Waiting for a batch's next result: poll briefly before sleeping.
//!
//! Most tools answer within microseconds (a host callback that completes at once,
//! a built-in reading a small file). Sleeping until woken costs more than that:
//! the runtime thread parks, and the thread that completes the call must wake it,
//! which on a virtual machine is an interrupt across processors. So the run first
//! polls the batch for a few microseconds, yielding its processor now and then,
//! and only then sleeps. The spin is bounded per wait, so a slow tool costs at
//! most that much processor time per result.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::Stream;

/// How long a run polls for its batch's next result before it sleeps.
const EAGER_WAIT: Duration = Duration::from_micros(20);

/// The next item of `stream`, polled eagerly for up to [`EAGER_WAIT`] first.
pub(crate) fn eager_next<S: Stream + Unpin>(stream: &mut S) -> EagerNext<'_, S> {
    EagerNext(stream)
}

/// The future of [`eager_next`].
pub(crate) struct EagerNext<'a, S>(&'a mut S);

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
        crate::runtime::spin_until(EAGER_WAIT, || match Pin::new(&mut *stream).poll_next(&mut quiet) {
            Poll::Ready(item) => {
                ready = Some(item);
                true
            }
            Poll::Pending => !tokio::task::coop::has_budget_remaining(),
        });
        if let Some(item) = ready {
            return Poll::Ready(item);
        }
        Pin::new(&mut *self.0).poll_next(cx)
    }
}
