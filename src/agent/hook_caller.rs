//! Consulting a stage's hooks: in the order they were added, each seeing the
//! previous one's effect, each bounded by `hook_timeout_ms` and by the run's
//! cancellation.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::next_step::Ending;
use crate::error::{Error, ErrorCode};
use crate::hook::{Hook, HookDecision, HookHistory, HookRequest, HookRunState, HookStage};
use crate::trace::RunTrace;
use crate::BoxFuture;

/// What the run loop needs to consult its agent's hooks.
pub(crate) struct HookCaller<'a> {
    pub(crate) hooks: &'a [Hook],
    pub(crate) run_id: &'a str,
    pub(crate) run_serial: u64,
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) timeout_ms: u64,
    /// The run's tracing: each decision is an event of the run's span.
    pub(crate) trace: Option<&'a RunTrace>,
    /// What each hook keeps for the run, in the order of `hooks`.
    pub(crate) states: &'a [Arc<HookRunState>],
}

/// How much of the history one hook's payload carries, and what the hook's
/// payloads carried before in the run.
#[derive(Clone, Copy)]
pub(crate) struct Carry<'a> {
    pub(crate) history: HookHistory,
    pub(crate) state: &'a HookRunState,
}

/// How consulting the hooks ended the run.
#[derive(Debug)]
pub(crate) enum HookStop {
    /// The run was cancelled while a hook decided.
    Cancelled,
    /// A hook aborted the run, gave an invalid decision or none in time.
    Failed(Error),
}

/// Whether the hooks after this one are consulted.
pub(crate) enum Flow {
    Next,
    Stop,
}

impl HookCaller<'_> {
    /// Whether any hook is consulted at `stage`.
    pub(crate) fn wants(&self, stage: HookStage) -> bool {
        self.hooks.iter().any(|hook| hook.at(stage))
    }

    /// Whether any hook consulted at `stage` takes messages of the history.
    pub(crate) fn wants_history(&self, stage: HookStage) -> bool {
        self.hooks.iter().any(|hook| hook.at(stage) && hook.history() != HookHistory::None)
    }

    /// Consults the hooks of `stage` about `subject`, in order: `payload` writes
    /// each one's payload (the stage's payload type, as JSON) from the subject as
    /// it is then, the run's id and how much history the hook takes, and
    /// `apply` takes each decision other than `{}` and abort, returning whether
    /// the later hooks are consulted or the problem that makes the decision
    /// invalid (which fails the run with it).
    pub(crate) async fn consult<S>(
        &self,
        stage: HookStage,
        subject: &mut S,
        payload: impl Fn(&S, &str, Carry<'_>) -> serde_json::Result<String>,
        apply: impl FnMut(&mut S, HookDecision) -> Result<Flow, Error>,
    ) -> Result<(), HookStop> {
        // Boxed: every run's future would otherwise keep room for a
        // consultation (most of a kilobyte) whether its agent has hooks or not.
        Box::pin(self.consult_in_order(stage, subject, payload, apply)).await
    }

    async fn consult_in_order<S>(
        &self,
        stage: HookStage,
        subject: &mut S,
        payload: impl Fn(&S, &str, Carry<'_>) -> serde_json::Result<String>,
        mut apply: impl FnMut(&mut S, HookDecision) -> Result<Flow, Error>,
    ) -> Result<(), HookStop> {
        for (hook, state) in self.hooks.iter().zip(self.states).filter(|(hook, _)| hook.at(stage)) {
            let carry = Carry { history: hook.history(), state };
            let payload = payload(subject, self.run_id, carry).map_err(|e| {
                HookStop::Failed(Error::invalid_arg(format!("the {} payload could not be written: {e}", stage.name())))
            })?;
            match self.ask(hook, state, stage, payload).await? {
                HookDecision::Continue => {}
                decision => {
                    if let Flow::Stop = apply(subject, decision).map_err(HookStop::Failed)? {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// One hook's decision, checked for its stage; an abort is a stop.
    async fn ask(
        &self,
        hook: &Hook,
        state: &Arc<HookRunState>,
        stage: HookStage,
        payload: String,
    ) -> Result<HookDecision, HookStop> {
        // A run cancelled by now consults no one.
        if self.cancel.is_cancelled() {
            return Err(HookStop::Cancelled);
        }
        // The hook learns when the run stops waiting for it: cancelled, timed
        // out, or done. A token of its own rather than a node in the run's
        // token tree; a C host polling `ferrule_hook_is_cancelled` still sees
        // the run's cancel at once, through the run's token it is given too.
        let token = CancellationToken::new();
        let _stop_waiting = token.clone().drop_guard();
        let request = HookRequest::new(stage, payload, token, self.cancel.clone(), self.run_serial, state.clone())
            .with_trace(self.trace.map(RunTrace::run_call));
        let mut decided = hook.function().decide(request);
        // A hook that decided while it was asked (an inline one usually does)
        // needs neither a timer nor a wait. Polled with the run's own waker, so
        // a hook that is not ready yet is woken whichever poll it remembers.
        let first = std::future::poll_fn(|cx| Poll::Ready(decided.as_mut().poll(cx))).await;
        let decision = match first {
            Poll::Ready(_) if self.cancel.is_cancelled() => return Err(HookStop::Cancelled),
            Poll::Ready(decision) => decision.map_err(HookStop::Failed)?,
            Poll::Pending => self.wait(stage, decided).await?,
        };
        decision.check_stage(stage).map_err(HookStop::Failed)?;
        if let Some(trace) = self.trace {
            let attributes =
                vec![("ferrule.hook.stage", stage.name().into()), ("ferrule.hook.decision", decision.kind().into())];
            trace.event("ferrule.hook", attributes);
        }
        if let HookDecision::Abort(reason) = decision {
            let message = format!("a {} hook aborted the run: {reason}", stage.name());
            return Err(HookStop::Failed(Error::new(ErrorCode::HookAborted, message)));
        }
        Ok(decision)
    }

    /// Waits for a decision that did not come at once, for at most
    /// `hook_timeout_ms` and until the run is cancelled.
    async fn wait(
        &self,
        stage: HookStage,
        decided: BoxFuture<'static, crate::error::Result<HookDecision>>,
    ) -> Result<HookDecision, HookStop> {
        let bounded = async {
            match self.timeout_ms {
                0 => Ok(decided.await),
                ms => tokio::time::timeout(Duration::from_millis(ms), decided).await,
            }
        };
        let outcome = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(HookStop::Cancelled),
            outcome = bounded => outcome,
        };
        let Ok(decision) = outcome else {
            let message = format!("a {} hook did not decide within {} ms", stage.name(), self.timeout_ms);
            return Err(HookStop::Failed(Error::new(ErrorCode::Timeout, message)));
        };
        decision.map_err(HookStop::Failed)
    }
}

impl HookStop {
    /// How the run ends.
    pub(crate) fn ending(self) -> Ending {
        match self {
            HookStop::Cancelled => Ending::Cancelled,
            HookStop::Failed(error) => Ending::Failed(error),
        }
    }
}
