//! Delivering a run's events.
//!
//! Each run the host started has one bounded queue: its events reach the host's
//! [`EventSink`] in order, on ferrule's event threads, one thread at a time (a
//! slow host slows its own run; memory stays bounded; tool callbacks, which
//! have threads of their own, never hold delivery up). No task sits between
//! the run and the host: an idle queue is handed to an event thread, which
//! delivers everything queued until it finds the queue empty. An event queued
//! during the poll of a run's task hands the queue over when that poll ends
//! (so what one poll queues goes out as one burst, and a busy run pays one
//! hand-off per burst, not per event), or at once when the queue holds
//! `HAND_OVER_AT` events; one queued anywhere else (a tool's own thread
//! sending updates) hands it over at once. `run_end` is always the last event;
//! the sink is dropped right after it is delivered. A call's updates are
//! delivered only before its end event, whichever thread sent them and however
//! late.
//!
//! A run nested in another (an agent called as a tool) has no queue of its
//! own: its events go, wrapped as `agent_event`s of the call that started it,
//! into the queue of the run the host started, and like updates they are
//! delivered only before that call's end event.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::sync::{oneshot, Notify};

use super::call_progress::CallProgress;
use super::event::{Event, EventKind, EventSink};
use super::input::EventSelection;
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::{CallbackKind, CallbackPool, CallbackScope};

/// Events a run may have queued and not yet delivered before its producer
/// waits for the host.
const EVENT_QUEUE_CAPACITY: usize = 256;
/// Events in a queue from which an event thread starts on them without
/// waiting for the end of the poll that queued them.
const HAND_OVER_AT: usize = 64;
/// Events an idle queue keeps room for.
const ROOM_KEPT: usize = 32;
/// Events an event thread takes from the queue at once, at most.
const TAKEN_AT_ONCE: usize = EVENT_QUEUE_CAPACITY / 2;

/// An event on its way to the host, with the call it concerns when that
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
    /// The queue of the run the host started (this one, or the run this one
    /// is nested in); `None`: no sink.
    delivery: Option<Arc<Delivery>>,
    /// Whether events other than `run_end` are queued.
    every_event: bool,
    /// For a nested run: the call its events are wrapped in.
    within: Option<Arc<Enclosing>>,
}

impl EventEmitter {
    /// An emitter that queues nothing.
    fn disabled(run_id: Arc<str>) -> EventEmitter {
        EventEmitter { run_id, delivery: None, every_event: false, within: None }
    }

    /// Whether anyone listens to events other than `run_end`; callers skip
    /// building costly events when not.
    pub(crate) fn is_enabled(&self) -> bool {
        self.every_event
    }

    /// Queues an event, waiting while the queue is full. The event is queued
    /// when this is called; the future only waits for room, if there was none.
    /// So it is awaited at once: as a losing branch of a `select!` the event
    /// would be queued all the same (wrap it in an `async` block to make it
    /// wait for its first poll).
    pub(crate) fn emit(&self, kind: EventKind) -> impl Future<Output = ()> + Send + '_ {
        self.queue_async(kind, CallTag::None)
    }

    /// Queues the end of a call. When the call was launched, with its
    /// `progress`: its updates queued after this are not delivered.
    pub(crate) fn emit_call_end(
        &self,
        kind: EventKind,
        progress: Option<&Arc<CallProgress>>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.queue_async(kind, progress.map_or(CallTag::None, |progress| CallTag::End(progress.clone())))
    }

    /// Queues a progress update of a call, waiting while the queue is full.
    pub(crate) fn emit_update(
        &self,
        kind: EventKind,
        progress: &Arc<CallProgress>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.queue_async(kind, CallTag::Update(progress.clone()))
    }

    /// Queues at once when the queue has room. Every run's future holds the
    /// future of an emit at many of its awaits, so that future is kept small: an
    /// event that must wait is boxed, instead of being held by each layer of
    /// nested async functions (which made it 1.2 KB, whether it waited or not).
    fn queue_async(&self, kind: EventKind, call: CallTag) -> impl Future<Output = ()> + Send + '_ {
        let waiting = match &self.delivery {
            Some(delivery) if self.every_event || matches!(kind, EventKind::RunEnd { .. }) => {
                delivery.try_push(self.queued(kind, call)).map(|full| (delivery, Box::new(Some(full))))
            }
            _ => None,
        };
        async move {
            if let Some((delivery, queued)) = waiting {
                delivery.push_when_room(queued).await;
            }
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
        let (Some(delivery), true, Some(progress)) = (&self.delivery, self.every_event, progress) else {
            return EventEmitter::disabled(run_id);
        };
        let enclosing = Enclosing {
            run_id: self.run_id.clone(),
            call_id: call_id.to_owned(),
            agent,
            depth,
            progress,
            outer: self.within.clone(),
        };
        EventEmitter { run_id, delivery: Some(delivery.clone()), every_event: true, within: Some(Arc::new(enclosing)) }
    }

    /// Queues a progress update from a thread outside the runtime, waiting while
    /// the queue is full. Where that wait could never end (on a runtime thread,
    /// where a `nonblocking` tool's callback runs, or on the thread delivering this
    /// run's events) a full queue is `WOULD_DEADLOCK` instead.
    pub(crate) fn emit_update_blocking(&self, kind: EventKind, progress: &Arc<CallProgress>) -> Result<()> {
        let (Some(delivery), true) = (&self.delivery, self.every_event) else { return Ok(()) };
        let queued = self.queued(kind, CallTag::Update(progress.clone()));
        if crate::runtime::on_runtime_thread() || CallbackScope::is_delivering_events_of(delivery.run_serial) {
            return match delivery.try_push(queued) {
                None => Ok(()),
                Some(_) => Err(Error::new(
                    ErrorCode::WouldDeadlock,
                    format!(
                        "the event queue of {} is full and this thread is the one that would have to empty it; send updates from another thread",
                        self.run_id
                    ),
                )),
            };
        }
        delivery.push_blocking(queued);
        Ok(())
    }
}

/// Creates a run's emitter of the `selected` events and, when there is a sink,
/// the receiver told once the sink is gone: after `run_end` was delivered, or
/// when every emitter is gone.
pub(crate) fn channel(
    run_id: Arc<str>,
    run_serial: u64,
    sink: Option<Box<dyn EventSink>>,
    selected: EventSelection,
    threads: &'static CallbackPool,
) -> (EventEmitter, Option<oneshot::Receiver<()>>) {
    let Some(sink) = sink else {
        return (EventEmitter::disabled(run_id), None);
    };
    let (done, sink_gone) = oneshot::channel();
    let delivery = Delivery::new(sink, run_serial, threads, done);
    let every_event = selected == EventSelection::All;
    (EventEmitter { run_id, delivery: Some(Arc::new(delivery)), every_event, within: None }, Some(sink_gone))
}

/// A run's queue of events and the sink they go to, shared by the run's
/// emitters and the event thread delivering them.
struct Delivery {
    state: Mutex<DeliveryState>,
    /// Events queued and not yet delivered (or dropped), those being delivered
    /// included. Grows under the lock; shrinks as the sink takes events.
    undelivered: AtomicUsize,
    /// Told when a full queue has room again, for tasks waiting to queue.
    room: Notify,
    /// [`Delivery::room`] for threads outside the runtime.
    room_for_threads: Condvar,
    run_serial: u64,
    threads: &'static CallbackPool,
}

struct DeliveryState {
    queue: VecDeque<Queued>,
    /// What delivers the queue, while no event thread is doing so; `None` while
    /// one is, and for good once the sink is gone.
    idle: Option<Deliverer>,
    /// The sink is gone (after `run_end`, or a panic): nothing more is queued.
    closed: bool,
    /// The poll of a run's task under way will hand the queue over as it ends.
    handed_at_poll_end: bool,
    /// Told when the sink is gone.
    done: Option<oneshot::Sender<()>>,
}

/// The sink, with the buffers an event thread delivers through: kept from one
/// delivery to the next.
struct Deliverer {
    sink: Box<dyn EventSink>,
    /// The events taken from the queue, being delivered.
    taken: VecDeque<Queued>,
    /// The burst handed to the sink.
    burst: Vec<Event>,
}

impl Delivery {
    fn new(
        sink: Box<dyn EventSink>,
        run_serial: u64,
        threads: &'static CallbackPool,
        done: oneshot::Sender<()>,
    ) -> Self {
        let deliverer = Deliverer { sink, taken: VecDeque::new(), burst: Vec::new() };
        Delivery {
            state: Mutex::new(DeliveryState {
                queue: VecDeque::new(),
                idle: Some(deliverer),
                closed: false,
                handed_at_poll_end: false,
                done: Some(done),
            }),
            undelivered: AtomicUsize::new(0),
            room: Notify::new(),
            room_for_threads: Condvar::new(),
            run_serial,
            threads,
        }
    }

    fn lock(&self) -> MutexGuard<'_, DeliveryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `queued`, which found the queue full, once it has room.
    async fn push_when_room(self: &Arc<Self>, mut queued: Box<Option<Queued>>) {
        loop {
            // Made before the queue is looked at, so no room made after that is missed.
            let room = self.room.notified();
            // No binding of the event lives across the await: it would be kept
            // in this future, unboxed.
            *queued = queued.take().and_then(|event| self.try_push(event));
            if queued.is_none() {
                return;
            }
            room.await;
        }
    }

    /// Queues `queued`, blocking this thread while the queue is full.
    fn push_blocking(self: &Arc<Self>, queued: Queued) {
        let mut state = self.lock();
        while self.must_wait(&state) {
            state = self.room_for_threads.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        self.queue_locked(state, queued);
    }

    /// Queues `queued` unless the queue is full, and then gives it back. Once
    /// the sink is gone the event is dropped.
    #[must_use]
    fn try_push(self: &Arc<Self>, queued: Queued) -> Option<Queued> {
        let state = self.lock();
        if self.must_wait(&state) {
            return Some(queued);
        }
        self.queue_locked(state, queued);
        None
    }

    /// Queues `queued` (the queue has room) and, when no event thread is
    /// delivering, hands the queue to one.
    fn queue_locked(self: &Arc<Self>, mut state: MutexGuard<'_, DeliveryState>, queued: Queued) {
        if state.closed {
            drop(state);
            return;
        }
        self.undelivered.fetch_add(1, Ordering::Relaxed);
        state.queue.push_back(queued);
        if state.idle.is_none() || (state.queue.len() < HAND_OVER_AT && self.left_to_poll_end(&mut state)) {
            return;
        }
        self.start_idle(state);
    }

    /// Whether the end of a poll of a run's task hands the queue over: the
    /// poll under way on this thread, if any (unless another poll already
    /// will). `false` outside such a poll.
    fn left_to_poll_end(self: &Arc<Self>, state: &mut DeliveryState) -> bool {
        if !in_poll_of_run() {
            return false;
        }
        if !state.handed_at_poll_end {
            state.handed_at_poll_end = true;
            hand_over_at_poll_end(self.clone());
        }
        true
    }

    /// At the end of a poll that queued into it: hands the queue over unless
    /// an event thread has it already.
    fn hand_over(self: &Arc<Self>) {
        let mut state = self.lock();
        state.handed_at_poll_end = false;
        if !state.queue.is_empty() {
            self.start_idle(state);
        }
    }

    /// Has an event thread deliver the queue, unless one is already.
    fn start_idle(self: &Arc<Self>, mut state: MutexGuard<'_, DeliveryState>) {
        let Some(deliverer) = state.idle.take() else { return };
        drop(state);
        let delivery = self.clone();
        self.threads.submit(Box::new(move || delivery.deliver(deliverer)));
    }

    /// Delivers what is queued until the queue is empty, on an event thread,
    /// inside the run's callback scope. A sink that panics ends delivery for
    /// the run.
    fn deliver(&self, deliverer: Deliverer) {
        let _scope = CallbackScope::enter(self.run_serial, CallbackKind::Event);
        if catch_unwind(AssertUnwindSafe(|| self.drain(deliverer))).is_err() {
            self.close();
        }
    }

    /// Hands the queue to the sink in bursts of up to its
    /// [`EventSink::burst`] until it is empty, then puts `deliverer` back for
    /// the next event to start. After `run_end` the sink is dropped here, so
    /// its `free_user_data` runs inside the run's callback scope.
    fn drain(&self, deliverer: Deliverer) {
        let Deliverer { mut sink, mut taken, mut burst } = deliverer;
        let most = sink.burst().max(1);
        let mut state = self.lock();
        while !state.queue.is_empty() {
            // At most half the queue's room at a time: the run fills the
            // other half while this part is delivered.
            if state.queue.len() <= TAKEN_AT_ONCE {
                std::mem::swap(&mut state.queue, &mut taken);
            } else {
                taken.extend(state.queue.drain(..TAKEN_AT_ONCE));
            }
            drop(state);
            // Events taken from the queue and not yet counted as delivered.
            let mut consumed = 0;
            let mut ended = false;
            for Queued { event, call, within } in taken.drain(..) {
                consumed += 1;
                if !admitted(&call, within.as_deref()) {
                    continue;
                }
                ended = matches!(event.kind, EventKind::RunEnd { .. });
                burst.push(event);
                if ended {
                    break;
                }
                if burst.len() >= most {
                    sink.on_events(&burst);
                    burst.clear();
                    self.delivered(std::mem::take(&mut consumed));
                }
            }
            if !burst.is_empty() {
                sink.on_events(&burst);
                burst.clear();
            }
            if ended {
                // Nothing of the run's events outlives its end for whoever waits for it.
                drop((sink, taken, burst));
                self.close();
                return;
            }
            self.delivered(consumed);
            state = self.lock();
        }
        // A busy spell's room is not kept while the run waits.
        for spare in [&mut state.queue, &mut taken] {
            spare.shrink_to(ROOM_KEPT);
        }
        burst.shrink_to(ROOM_KEPT);
        state.idle = Some(Deliverer { sink, taken, burst });
    }

    /// Whether an event must wait before it is queued: the queue holds as many
    /// undelivered events as it may, and the sink is not gone (then events are
    /// dropped at once).
    fn must_wait(&self, state: &DeliveryState) -> bool {
        self.undelivered.load(Ordering::Relaxed) >= EVENT_QUEUE_CAPACITY && !state.closed
    }

    /// Counts `count` events as out of the queue; when that makes room in a
    /// full queue, tells whoever waits for it.
    fn delivered(&self, count: usize) {
        let before = self.undelivered.fetch_sub(count, Ordering::Relaxed);
        if before >= EVENT_QUEUE_CAPACITY && before - count < EVENT_QUEUE_CAPACITY {
            // A thread that found the queue full under the lock waits on the
            // condition variable by the time the lock is free again.
            drop(self.lock());
            self.wake_waiting();
        }
    }

    /// Wakes every task and thread waiting to queue.
    fn wake_waiting(&self) {
        self.room.notify_waiters();
        self.room_for_threads.notify_all();
    }

    /// Ends delivery once the sink is gone: what is still queued is dropped,
    /// and whoever waits for room or for the sink's end is told.
    fn close(&self) {
        let (dropped, done) = {
            let mut state = self.lock();
            state.closed = true;
            (std::mem::take(&mut state.queue), state.done.take())
        };
        drop(dropped);
        drop(done);
        self.wake_waiting();
    }
}

/// Whether an event is delivered: not an update of a call whose end was
/// delivered, nor an event of a nested run whose call's end was. Marks a
/// call's end as delivered.
fn admitted(call: &CallTag, within: Option<&Enclosing>) -> bool {
    if within.is_some_and(Enclosing::ended) {
        return false;
    }
    match call {
        CallTag::Update(progress) => !progress.end_delivered(),
        CallTag::End(progress) => {
            progress.mark_end_delivered();
            true
        }
        CallTag::None => true,
    }
}

thread_local! {
    /// The poll of a run's task under way on this thread, if any, and the
    /// queues it hands over as it ends (see [`DeliveredAfterPoll`]).
    static POLL_OF_RUN: RefCell<PollState> = const { RefCell::new(PollState { under_way: false, queues: Vec::new() }) };
}

struct PollState {
    under_way: bool,
    queues: Vec<Arc<Delivery>>,
}

/// Whether the poll of a run's task is under way on this thread.
fn in_poll_of_run() -> bool {
    // Fails only on a thread that is ending, where no poll is under way.
    POLL_OF_RUN.try_with(|poll| poll.borrow().under_way).unwrap_or(false)
}

/// Has the poll under way on this thread hand `delivery`'s queue over as it ends.
fn hand_over_at_poll_end(delivery: Arc<Delivery>) {
    POLL_OF_RUN.with(|poll| poll.borrow_mut().queues.push(delivery));
}

/// A run's task: the events each of its polls queues go to the host together,
/// handed to an event thread as the poll ends (even when it panics), rather
/// than one hand-off per event.
pub(crate) struct DeliveredAfterPoll<F: ?Sized>(pub(crate) Pin<Box<F>>);

impl<F: Future + ?Sized> Future for DeliveredAfterPoll<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _poll = PollOfRun::enter();
        self.0.as_mut().poll(cx)
    }
}

/// The poll of a run's task under way on this thread; hands the queues over
/// when dropped.
struct PollOfRun;

impl PollOfRun {
    fn enter() -> PollOfRun {
        POLL_OF_RUN.with(|poll| {
            let mut poll = poll.borrow_mut();
            // A run's task never polls another one.
            debug_assert!(!poll.under_way);
            poll.under_way = true;
        });
        PollOfRun
    }
}

impl Drop for PollOfRun {
    fn drop(&mut self) {
        // The thread-local lives as long as the thread, which is polling.
        let queues = POLL_OF_RUN.with(|poll| {
            let mut poll = poll.borrow_mut();
            poll.under_way = false;
            std::mem::take(&mut poll.queues)
        });
        for delivery in queues {
            delivery.hand_over();
        }
    }
}
