//! Delivering a run's events.
//!
//! Each run has one dispatcher: events go through a bounded queue (a slot, for
//! a run that selected `run_end` alone) and reach the host's [`EventSink`] one
//! at a time, in order, on ferrule's event threads (a slow host slows its own
//! run; memory stays bounded; tool callbacks, which have threads of their own,
//! never hold delivery up). `run_end` is always the last event; the
//! sink is dropped right after it is delivered. A call's updates are delivered
//! only before its end event, whichever thread sent them and however late.
//!
//! A run nested in another (an agent called as a tool) has no queue of its
//! own: its events go, wrapped as `agent_event`s of the call that started it,
//! into the queue of the run the host started, and like updates they are
//! delivered only before that call's end event.

use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};

use super::call_progress::CallProgress;
use super::event::{Event, EventKind, EventSink};
use super::input::EventSelection;
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::{CallbackKind, CallbackPool, CallbackScope};

/// Events a run may have queued before its producer waits for the host.
const EVENT_QUEUE_CAPACITY: usize = 256;

/// An event on its way to the dispatcher, with the call it concerns when that
/// decides whether it is delivered, and for a nested run's event the calls it
/// is nested in.
struct Queued {
    event: Event,
    call: CallTag,
    within: Option<Arc<Enclosing>>,
}

/// The agent call a nested run's events are wrapped in, and those around it.
struct Enclosing {
    /// The id of the run that made the call.
    run_id: Arc<str>,
    call_id: String,
    /// The name the calling agent knows the nested one by.
    agent: Arc<str>,
    /// The nested run's depth (1 inside a run the host started).
    depth: u32,
    /// The call's progress: once its end was delivered, the nested run's
    /// events are not.
    progress: Arc<CallProgress>,
    outer: Option<Arc<Enclosing>>,
}

impl Enclosing {
    /// Whether the end of this call, or of one around it, was delivered.
    fn ended(&self) -> bool {
        self.progress.end_delivered() || self.outer.as_ref().is_some_and(|outer| outer.ended())
    }

    /// `event` of the nested run, wrapped as the runs around it see it.
    fn wrap(&self, event: Event) -> Event {
        let kind = EventKind::AgentEvent {
            call_id: self.call_id.clone(),
            agent: self.agent.clone(),
            depth: self.depth,
            event: Box::new(event),
        };
        let wrapped = Event { kind, run_id: self.run_id.clone() };
        match &self.outer {
            Some(outer) => outer.wrap(wrapped),
            None => wrapped,
        }
    }
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
/// has a disabled emitter that builds no events; one whose host asked for
/// `run_end` alone queues nothing else.
#[derive(Clone)]
pub(crate) struct EventEmitter {
    run_id: Arc<str>,
    /// The serial of the run whose dispatcher delivers the events (the run the
    /// host started, for a nested run).
    run_serial: u64,
    queue: Option<Queue>,
    /// For a nested run: the call its events are wrapped in.
    within: Option<Arc<Enclosing>>,
}

impl EventEmitter {
    /// An emitter that queues nothing.
    fn disabled(run_id: Arc<str>, run_serial: u64) -> EventEmitter {
        EventEmitter { run_id, run_serial, queue: None, within: None }
    }

    /// Whether anyone listens to events other than `run_end`; callers skip
    /// building costly events when not.
    pub(crate) fn is_enabled(&self) -> bool {
        matches!(self.queue, Some(Queue::Events(_)))
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
        match &self.queue {
            Some(Queue::Events(queue)) => {
                let _ = queue.send(self.queued(kind, call)).await;
            }
            Some(Queue::End(slot)) if matches!(kind, EventKind::RunEnd { .. }) => {
                let sender = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some(sender) = sender {
                    let _ = sender.send(self.queued(kind, call));
                }
            }
            _ => {}
        }
    }

    fn queued(&self, kind: EventKind, call: CallTag) -> Queued {
        let event = Event { kind, run_id: self.run_id.clone() };
        let event = match &self.within {
            Some(enclosing) => enclosing.wrap(event),
            None => event,
        };
        Queued { event, call, within: self.within.clone() }
    }

    /// The emitter of run `run_id`, nested in this emitter's run by the call
    /// `call_id` of the agent known as `agent`: its events go into this run's
    /// queue, wrapped, while the call's end (or the end of a call around it)
    /// was not delivered. Disabled when this one is.
    pub(crate) fn nested(
        &self,
        run_id: Arc<str>,
        call_id: &str,
        agent: Arc<str>,
        depth: u32,
        progress: Option<Arc<CallProgress>>,
    ) -> EventEmitter {
        let (Some(Queue::Events(queue)), Some(progress)) = (&self.queue, progress) else {
            return EventEmitter::disabled(run_id, self.run_serial);
        };
        let enclosing = Enclosing {
            run_id: self.run_id.clone(),
            call_id: call_id.to_owned(),
            agent,
            depth,
            progress,
            outer: self.within.clone(),
        };
        EventEmitter {
            run_id,
            run_serial: self.run_serial,
            queue: Some(Queue::Events(queue.clone())),
            within: Some(Arc::new(enclosing)),
        }
    }

    /// Queues a progress update from a thread outside the runtime, waiting while
    /// the queue is full. Where that wait could never end (on a runtime thread,
    /// where a `nonblocking` tool's callback runs, or on the thread delivering this
    /// run's events) a full queue is `WOULD_DEADLOCK` instead.
    pub(crate) fn emit_update_blocking(&self, kind: EventKind, progress: &Arc<CallProgress>) -> Result<()> {
        let Some(Queue::Events(queue)) = &self.queue else { return Ok(()) };
        let queued = self.queued(kind, CallTag::Update(progress.clone()));
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

/// Creates a run's emitter of the `selected` events and, when there is a sink,
/// the dispatcher future that delivers them to it. The dispatcher ends after
/// delivering `run_end`, or when every emitter is gone.
pub(crate) fn channel(
    run_id: Arc<str>,
    run_serial: u64,
    sink: Option<Box<dyn EventSink>>,
    selected: EventSelection,
    threads: &'static CallbackPool,
) -> (EventEmitter, Option<impl std::future::Future<Output = ()> + Send>) {
    let Some(sink) = sink else {
        return (EventEmitter::disabled(run_id, run_serial), None);
    };
    let (queue, incoming) = if selected == EventSelection::RunEnd {
        let (tx, rx) = oneshot::channel();
        (Queue::End(Arc::new(Mutex::new(Some(tx)))), Incoming::End(rx))
    } else {
        let (tx, rx) = mpsc::channel(EVENT_QUEUE_CAPACITY);
        (Queue::Events(tx), Incoming::Events(rx))
    };
    let emitter = EventEmitter { run_id, run_serial, queue: Some(queue), within: None };
    (emitter, Some(dispatch(incoming, sink, run_serial, threads)))
}

/// Where an emitter queues a run's events. A run that selected `run_end` alone
/// has a slot for it instead of a queue: a queue makes room for 32 events as
/// it is made, 9 KB a run.
#[derive(Clone)]
enum Queue {
    Events(mpsc::Sender<Queued>),
    End(Arc<Mutex<Option<oneshot::Sender<Queued>>>>),
}

/// Where the dispatcher takes a run's events from: [`Queue`]'s other end.
enum Incoming {
    Events(mpsc::Receiver<Queued>),
    End(oneshot::Receiver<Queued>),
}

/// Waits for events and hands them to an event thread. One trip delivers
/// everything queued by the time the host is done, so a busy run does not pay a
/// thread hand-off per event.
async fn dispatch(incoming: Incoming, mut sink: Box<dyn EventSink>, run_serial: u64, threads: &'static CallbackPool) {
    let mut queue = match incoming {
        Incoming::Events(queue) => queue,
        Incoming::End(end) => {
            if let Ok(end) = end.await {
                threads.run(move || deliver_end(end, sink, run_serial)).await;
            }
            return;
        }
    };
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

/// Delivers the `run_end` of a run that selected it alone, on an event thread,
/// and drops the sink after it inside the run's callback scope, as [`deliver`]
/// does.
fn deliver_end(end: Queued, mut sink: Box<dyn EventSink>, run_serial: u64) {
    let _scope = CallbackScope::enter(run_serial, CallbackKind::Event);
    sink.on_events(std::slice::from_ref(&end.event));
    drop(sink);
}

/// Delivers `first` and whatever else is queued, on an event thread, in bursts
/// of up to the sink's [`EventSink::burst`]. After `run_end` the sink is dropped
/// here, inside the run's callback scope, so its `free_user_data` sees it.
#[allow(clippy::type_complexity)]
fn deliver(
    first: Queued,
    mut sink: Box<dyn EventSink>,
    mut queue: mpsc::Receiver<Queued>,
    run_serial: u64,
) -> Option<(Box<dyn EventSink>, mpsc::Receiver<Queued>)> {
    let _scope = CallbackScope::enter(run_serial, CallbackKind::Event);
    let burst = sink.burst().max(1);
    let mut events = Vec::with_capacity(burst.min(EVENT_QUEUE_CAPACITY));
    let mut next = Some(first);
    while next.is_some() {
        let mut ended = false;
        while let Some(Queued { event, call, within }) = next.take() {
            if !within.is_some_and(|enclosing| enclosing.ended()) {
                match call {
                    CallTag::Update(progress) if progress.end_delivered() => {}
                    // Later updates of the call are not delivered: not even in
                    // this burst, after the end.
                    CallTag::End(progress) => {
                        progress.mark_end_delivered();
                        events.push(event);
                    }
                    _ => events.push(event),
                }
            }
            ended = events.last().is_some_and(|event| matches!(event.kind, EventKind::RunEnd { .. }));
            if ended || events.len() >= burst {
                break;
            }
            next = queue.try_recv().ok();
        }
        if !events.is_empty() {
            sink.on_events(&events);
        }
        if ended {
            drop(sink);
            return None;
        }
        events.clear();
        next = next.or_else(|| queue.try_recv().ok());
    }
    Some((sink, queue))
}
