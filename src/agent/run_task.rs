//! A run's task on ferrule's runtime: it starts the loop, maps a deadline or a
//! panic to the run's end, and delivers the end in the order the host relies on.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::FutureExt;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::built::Agent;
use super::call_site::AgentCallSite;
use super::context::RunContext;
use super::deadline::RunDeadline;
use super::event::{EventKind, EventSink};
use super::event_queue::{self, DeliveredAfterPoll, EventEmitter};
use super::final_answer::FinalAnswer;
use super::handle::{Run, RunShared};
use super::nesting::RunNesting;
use super::next_step::{Ending, Stop};
use super::origin::RunOrigin;
use super::request_caches::RequestCaches;
use super::run_loop::RunLoop;
use super::run_tools::RunTools;
use crate::error::{Error, ErrorCode, Result};
use crate::hook::HookRunState;
use crate::runtime::{callback_returns, CallbackKind, CallbackScope, Threads};
use crate::trace::{CallTrace, RunTrace};

/// Run serial numbers start at 1 (0 means "no run" to the callback scope).
static NEXT_RUN_SERIAL: AtomicU64 = AtomicU64::new(1);

impl Agent {
    /// Starts a run on ferrule's runtime. Events go to `sink` (if any), one at a
    /// time, on ferrule's event threads. Dropping every handle of the run cancels
    /// it. Fails with `INVALID_ARG` when a resume does not fit this agent (see
    /// [`RunSource::Resume`](super::RunSource::Resume)) and `RESOURCE_EXHAUSTED`
    /// when the runtime cannot start its threads.
    pub fn start(&self, input: super::RunInput, sink: Option<Box<dyn EventSink>>) -> Result<Run> {
        let origin = self.begin(input)?;
        Ok(origin.start_on(crate::runtime::threads()?, sink))
    }
}

impl RunOrigin {
    /// Starts a run on threads the caller already holds; cannot fail, so a caller
    /// that must not lose `sink` gets the threads first.
    pub(crate) fn start_on(self, threads: &'static Threads, sink: Option<Box<dyn EventSink>>) -> Run {
        let (serial, id) = next_run();
        let (events, sink_gone) = event_queue::channel(id.clone(), serial, sink, self.events, threads.events);
        let tracer = &self.agent.parts().tracer;
        let parent = self.trace_parent.clone().map(|context| CallTrace::new(context, id.clone(), Arc::clone(tracer)));
        let place = RunPlace {
            serial,
            id,
            events,
            nesting: RunNesting::top(),
            cancel: CancellationToken::new(),
            name: None,
            parent,
        };
        self.launch(threads, place, sink_gone)
    }

    /// Starts the run of the call `call_id` of the agent known as `name`,
    /// cancelled with `cancel`, its spans under the call's (`trace`). Nested
    /// in the run of `site`, when the call is one of a run's: its events go to
    /// that run's, and that run ends after it; otherwise on its own, without
    /// events.
    pub(crate) fn start_nested(
        self,
        threads: &'static Threads,
        site: Option<&AgentCallSite>,
        call_id: &str,
        name: Arc<str>,
        cancel: CancellationToken,
        trace: Option<CallTrace>,
    ) -> Run {
        let (serial, id) = next_run();
        let (nesting, events) = match site {
            Some(site) => {
                let nesting = RunNesting::inside(&site.nesting);
                let events =
                    site.events.nested(id.clone(), call_id, name.clone(), nesting.depth, site.progress.clone());
                (nesting, events)
            }
            None => (RunNesting::top(), event_queue::channel(id.clone(), serial, None, self.events, threads.events).0),
        };
        let place = RunPlace { serial, id, events, nesting, cancel, name: Some(name), parent: trace };
        self.launch(threads, place, None)
    }

    fn launch(self, threads: &'static Threads, place: RunPlace, sink_gone: Option<oneshot::Receiver<()>>) -> Run {
        let RunOrigin {
            agent,
            mut progress,
            pending,
            resumed,
            carried,
            events: _,
            result_messages,
            trace_parent: _,
            calls,
            invoke,
        } = self;
        let RunPlace { serial, id, events, nesting, cancel, name, parent } = place;
        let name = name.as_deref().or(agent.config().name.as_deref());
        let trace = RunTrace::start(&agent.parts().tracer, parent.as_ref(), name, &id, &agent.config().model);
        let injections = std::mem::take(&mut progress.injections);
        let shared = Arc::new(RunShared::new(id.clone(), serial, cancel, injections));
        let caches = RequestCaches::new(agent.config().history);
        let tools = RunTools::new(agent.parts());
        let hook_states = HookRunState::for_hooks(&agent.parts().hooks);
        let run = RunContext {
            agent,
            id,
            serial,
            cancel: shared.cancel.clone(),
            events,
            shared: shared.clone(),
            timed_out: Arc::default(),
            nesting,
            trace,
            hook_states,
            retired_hook_states: Vec::new(),
            calls,
        };
        let answer = FinalAnswer::default();
        let handed_from = Vec::new();
        // Boxed: the spawned task and `supervise`, whose future keeps its
        // argument beside the local it moves into, each hold a pointer instead
        // of a copy (928 bytes each).
        let run = Box::new(RunLoop {
            run,
            progress,
            pending,
            resumed,
            caches,
            tools,
            answer,
            open_turn: 0,
            carried,
            handed_from,
            result_messages,
            invoke,
        });
        // The run's future (kilobytes) is made on a runtime thread, at its first
        // poll, not on the thread starting the run: a host starting runs from
        // many threads would otherwise hold runs in as many malloc arenas.
        // Its events reach the host in the bursts each poll queues.
        threads.runtime.spawn(async move { DeliveredAfterPoll(Box::pin(supervise(run, sink_gone, threads))).await });
        Run::new(shared)
    }
}

/// Who a starting run is: its serial number and id, where its events go,
/// where it sits among nested runs, and what cancels it.
struct RunPlace {
    serial: u64,
    id: Arc<str>,
    events: EventEmitter,
    nesting: Arc<RunNesting>,
    cancel: CancellationToken,
    /// The name the calling agent knows a nested run's agent by.
    name: Option<Arc<str>>,
    /// The span the run's spans go under.
    parent: Option<CallTrace>,
}

/// A new run's serial number and id (`"run-7"`).
fn next_run() -> (u64, Arc<str>) {
    let serial = NEXT_RUN_SERIAL.fetch_add(1, Ordering::Relaxed);
    (serial, format!("run-{serial}").into())
}

/// Runs the loop with its panics caught, so a panic still ends the run with one
/// `failed` run_end (keeping the transcript so far). Then, in this order: the
/// runs nested in it end (and their tokens are counted); run_end is delivered
/// and the sink dropped; the host's callbacks that answered one of the run's
/// requests and went on running return; the run lets go of its agent and of
/// those that handed it on (where that was the last hold, the tools' user data
/// is released on a callback thread, inside this run's scope); the result is published, which wakes every
/// waiter; the run lets go of the run it is nested in. So when a wait returns,
/// nothing of the run, or of a run nested in it, calls the host again.
async fn supervise(mut run: Box<RunLoop>, sink_gone: Option<oneshot::Receiver<()>>, threads: &'static Threads) {
    let timeout_ms = run.run.agent().config.run_timeout_ms;
    let deadline = RunDeadline::start(timeout_ms, &run.run.cancel, &run.run.timed_out);
    let ended = AssertUnwindSafe(run.drive()).catch_unwind().await;
    let timed_out = deadline.is_some_and(RunDeadline::finish);
    let nesting = run.run.nesting.clone();
    nesting.children_ended().await;
    nesting.take_uncounted(&mut run.progress.usage);
    let late_injections = run.run.shared.close_injections();
    let stop = match ended {
        // The deadline's cancellation ended the run (not a finish just before it).
        Ok(Stop::Ended(Ending::Cancelled)) if timed_out => {
            let error = Error::new(ErrorCode::Timeout, format!("the run took longer than its {timeout_ms} ms"));
            Stop::Ended(Ending::Failed(error))
        }
        Ok(stop) => stop,
        Err(payload) => {
            // Keep turns balanced for the host even though the loop died mid-turn.
            if run.open_turn != 0 {
                run.run.events.emit(EventKind::TurnEnd { turn: run.open_turn }).await;
            }
            let text = crate::panic::describe(payload.as_ref());
            Stop::Ended(Ending::Failed(Error::new(
                ErrorCode::Panic,
                format!("ferrule panicked during the run: {text}"),
            )))
        }
    };
    match stop {
        // They wait in the state, for the resumed run's next request.
        Stop::Interrupted(_) | Stop::Returned(_) => run.progress.injections = late_injections,
        // Nothing is lost: they end the transcript.
        Stop::Ended(_) => run.run.admit(late_injections, &mut run.progress.messages).await,
    }
    let (result, RunContext { agent, events, shared, serial, trace, hook_states, retired_hook_states, .. }, mut agents) =
        (*run).finish(stop);
    let result = Arc::new(result);
    if let Some(trace) = trace {
        trace.end(&result);
    }
    events.emit(EventKind::RunEnd { status: result.status, result: result.clone(), error: result.error.clone() }).await;
    drop(events);
    if let Some(sink_gone) = sink_gone {
        let _ = sink_gone.await;
    }
    callback_returns::all_returned(serial).await;
    agents.push(agent);
    let last: Vec<_> = agents.into_iter().filter_map(Agent::into_last).collect();
    // The hooks' values for the run are the host's too: let go of before the
    // run's end is published, unless a consultation still holds one.
    let hook_values = hook_states.iter().chain(&retired_hook_states).any(|state| state.has_value());
    let hook_states = if hook_values { Some((hook_states, retired_hook_states)) } else { None };
    if !last.is_empty() || hook_values {
        let release = move || {
            let _scope = CallbackScope::enter(serial, CallbackKind::Tool);
            drop(hook_states);
            drop(last);
        };
        threads.tool_callbacks.run_urgent(release).await;
    }
    shared.finish(result);
    drop(nesting);
}
