//! Delivering a run's events.
//!
//! Each run has one dispatcher: events go through a bounded queue and reach the
//! host's [`EventSink`] one at a time, in order, on ferrule's event threads (a slow
//! host slows its own run; memory stays bounded; tool callbacks, which have threads
//! of their own, never hold delivery up). `run_end` is always the last event; the
//! sink is dropped right after it is delivered. A call's updates are delivered
//! only before its end event, whichever thread sent them and however late.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::call_progress::CallProgress;
use super::event::{Event, EventKind, EventSink};
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::{CallbackKind, CallbackPool, CallbackScope};

/// Events a run may have queued before its producer waits for the host.
const EVENT_QUEUE_CAPACITY: usize = 256;

/// An event on its way to the dispatcher, with the call it concerns when that
/// decides whether it is delivered.
struct Queued {
    event: Event,
    call: CallTag,
}

/// How an event relates to a call's progress.
enum CallTag {
    None,
    /// A progress update: delivered only while the call's end has not been.
    Update(Arc<CallProgress>),
    /// The call's end: later updates of the call are not delivered.
    End(Arc<CallProgress>),
}

/// The sending side of a run's event queue. Cheap to clone. A run without a sink
/// has a disabled emitter that builds no events.
#[derive(Clone)]
pub(crate) struct EventEmitter {
    run_id: Arc<str>,
    run_serial: u64,
    queue: Option<mpsc::Sender<Queued>>,
}

impl EventEmitter {
    /// Whether anyone listens; callers skip building costly events when not.
    pub(crate) fn is_enabled(&self) -> bool {
        self.queue.is_some()
    }

    /// Queues an event, waiting while the queue is full.
    pub(crate) async fn emit(&self, kind: EventKind) {
        self.queue_async(kind, CallTag::None).await
    }

    /// Queues the end of a call; its updates queued after this are not delivered.
    pub(crate) async fn emit_call_end(&self, kind: EventKind, progress: &Arc<CallProgress>) {
        self.queue_async(kind, CallTag::End(progress.clone())).await
    }

    /// Queues a progress update of a call, waiting while the queue is full.
    pub(crate) async fn emit_update(&self, kind: EventKind, progress: &Arc<CallProgress>) {
        self.queue_async(kind, CallTag::Update(progress.clone())).await
    }

    async fn queue_async(&self, kind: EventKind, call: CallTag) {
        if let Some(queue) = &self.queue {
            let _ = queue.send(Queued { event: Event { kind, run_id: self.run_id.clone() }, call }).await;
        }
    }

    /// Queues a progress update from a thread outside the runtime, waiting while
    /// the queue is full. Where that wait could never end (on a runtime thread,
    /// where a `nonblocking` tool's callback runs, or on the thread delivering this
    /// run's events) a full queue is `WOULD_DEADLOCK` instead.
    pub(crate) fn emit_update_blocking(&self, kind: EventKind, progress: &Arc<CallProgress>) -> Result<()> {
        let Some(queue) = &self.queue else { return Ok(()) };
        let queued =
            Queued { event: Event { kind, run_id: self.run_id.clone() }, call: CallTag::Update(progress.clone()) };
        if crate::runtime::on_runtime_thread() || CallbackScope::is_delivering_events_of(self.run_serial) {
            return match queue.try_send(queued) {
                Ok(()) | Err(TrySendError::Closed(_)) => Ok(()),
                Err(TrySendError::Full(_)) => Err(Error::new(
                    ErrorCode::WouldDeadlock,
                    format!(
                        "the event queue of {} is full and this thread is the one that would have to empty it; send updates from another thread",
                        self.run_id
                    ),
                )),
            };
        }
        let _ = queue.blocking_send(queued);
        Ok(())
    }
}

/// Creates a run's emitter and, when there is a sink, the dispatcher future that
/// delivers to it. The dispatcher ends after delivering `run_end`, or when every
/// emitter is gone.
pub(crate) fn channel(
    run_id: Arc<str>,
    run_serial: u64,
    sink: Option<Box<dyn EventSink>>,
    threads: &'static CallbackPool,
) -> (EventEmitter, Option<impl std::future::Future<Output = ()> + Send>) {
    let Some(sink) = sink else {
        return (EventEmitter { run_id, run_serial, queue: None }, None);
    };
    let (tx, rx) = mpsc::channel(EVENT_QUEUE_CAPACITY);
    (EventEmitter { run_id, run_serial, queue: Some(tx) }, Some(dispatch(rx, sink, run_serial, threads)))
}

/// Waits for events and hands them to an event thread. One trip delivers
/// everything queued by the time the host is done, so a busy run does not pay a
/// thread hand-off per event.
async fn dispatch(
    mut queue: mpsc::Receiver<Queued>,
    mut sink: Box<dyn EventSink>,
    run_serial: u64,
    threads: &'static CallbackPool,
) {
    while let Some(first) = queue.recv().await {
        let delivery = threads.run(move || deliver(first, sink, queue, run_serial));
        match delivery.await {
            Some(Some((returned_sink, returned_queue))) => {
                sink = returned_sink;
                queue = returned_queue;
            }
            // run_end was delivered, or the sink panicked: delivery for this run is over.
            _ => return,
        }
    }
}

/// Delivers `first` and whatever else is queued, on an event thread. After
/// `run_end` the sink is dropped here, inside the run's callback scope, so its
/// `free_user_data` sees it.
#[allow(clippy::type_complexity)]
fn deliver(
    first: Queued,
    mut sink: Box<dyn EventSink>,
    mut queue: mpsc::Receiver<Queued>,
    run_serial: u64,
) -> Option<(Box<dyn EventSink>, mpsc::Receiver<Queued>)> {
    let _scope = CallbackScope::enter(run_serial, CallbackKind::Event);
    let mut next = Some(first);
    while let Some(Queued { event, call }) = next {
        match call {
            CallTag::Update(progress) if progress.end_delivered() => {}
            CallTag::End(progress) => {
                sink.on_event(&event);
                progress.mark_end_delivered();
            }
            _ => sink.on_event(&event),
        }
        if matches!(event.kind, EventKind::RunEnd { .. }) {
            drop(sink);
            return None;
        }
        next = queue.try_recv().ok();
    }
    Some((sink, queue))
}
