//! A run's task on ferrule's runtime: it starts the loop, maps a deadline or a
//! panic to the run's end, and delivers the end in the order the host relies on.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_util::FutureExt;

use super::built::Agent;
use super::context::RunContext;
use super::deadline::RunDeadline;
use super::event::{EventKind, EventSink};
use super::event_queue;
use super::final_answer::FinalAnswer;
use super::handle::{Run, RunShared};
use super::next_step::{Ending, Stop};
use super::origin::RunOrigin;
use super::request_caches::RequestCaches;
use super::run_loop::RunLoop;
use super::run_tools::RunTools;
use crate::error::{Error, ErrorCode, Result};
use crate::runtime::{CallbackKind, CallbackScope, Threads};

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
        Ok(self.start_on(crate::runtime::threads()?, origin, sink))
    }

    /// Starts a run on threads the caller already holds; cannot fail, so a caller
    /// that must not lose `sink` gets the threads first.
    pub(crate) fn start_on(
        &self,
        threads: &'static Threads,
        origin: RunOrigin,
        sink: Option<Box<dyn EventSink>>,
    ) -> Run {
        let RunOrigin { mut progress, pending, resumed } = origin;
        let serial = NEXT_RUN_SERIAL.fetch_add(1, Ordering::Relaxed);
        let id: Arc<str> = format!("run-{serial}").into();
        let shared = Arc::new(RunShared::new(id.clone(), serial, std::mem::take(&mut progress.injections)));
        let (events, dispatcher) = event_queue::channel(id.clone(), serial, sink, threads.events);
        let dispatcher = dispatcher.map(|d| threads.runtime.spawn(d));
        let run = RunContext {
            agent: self.clone(),
            id,
            serial,
            cancel: shared.cancel.clone(),
            events,
            shared: shared.clone(),
            timed_out: Arc::default(),
        };
        let caches = RequestCaches::new(self.config().history);
        let tools = RunTools::new(self.parts());
        let run =
            RunLoop { run, progress, pending, resumed, caches, tools, answer: FinalAnswer::default(), open_turn: 0 };
        threads.runtime.spawn(supervise(run, dispatcher, threads));
        Run::new(shared)
    }
}

/// Runs the loop with its panics caught, so a panic still ends the run with one
/// `failed` run_end (keeping the transcript so far). Then, in this order: the
/// event dispatcher delivers run_end and drops the sink; the run lets go of its
/// agent (when that was the last hold, the tools' user data is released on a
/// callback thread, inside this run's scope); the result is published, which wakes
/// every waiter. So when a wait returns, nothing of the run calls the host again.
async fn supervise(mut run: RunLoop, dispatcher: Option<tokio::task::JoinHandle<()>>, threads: &'static Threads) {
    let timeout_ms = run.run.agent().config.run_timeout_ms;
    let deadline = RunDeadline::start(timeout_ms, &run.run.cancel, &run.run.timed_out);
    let ended = AssertUnwindSafe(run.drive()).catch_unwind().await;
    let timed_out = deadline.is_some_and(RunDeadline::finish);
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
        Stop::Interrupted(_) => run.progress.injections = late_injections,
        // Nothing is lost: they end the transcript.
        Stop::Ended(_) => run.run.admit(late_injections, &mut run.progress.messages).await,
    }
    let (result, RunContext { agent, events, shared, serial, .. }) = run.finish(stop);
    let result = Arc::new(result);
    events.emit(EventKind::RunEnd { status: result.status, result: result.clone(), error: result.error.clone() }).await;
    drop(events);
    if let Some(dispatcher) = dispatcher {
        let _ = dispatcher.await;
    }
    if let Some(last) = agent.into_last() {
        let release = move || {
            let _scope = CallbackScope::enter(serial, CallbackKind::Tool);
            drop(last);
        };
        threads.tool_callbacks.run_urgent(release).await;
    }
    shared.finish(result);
}
