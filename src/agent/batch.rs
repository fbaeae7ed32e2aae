//! Executing one batch: the calls of one assistant response.
//!
//! Calls are checked in call order, then launched in call order, at most
//! `max_concurrent_tools` at a time (one at a time when the batch is sequential).
//! Launched calls are polled together by the run's own task, each bounded by its
//! timeout and guarded against panics: no task is spawned per call, which keeps a
//! call's overhead to about a microsecond (host tools that block run on ferrule's
//! callback threads regardless). Results are recorded as they arrive (the end events follow
//! completion order) and enter the transcript in call order. On cancellation,
//! running calls end with a cancellation result and calls never started get none.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::FuturesUnordered;
use futures_util::FutureExt;

use super::approval::{self, Approvals, Decision, Interruption};
use super::call_progress::CallProgress;
use super::call_site::AgentCallSite;
use super::call_updates::CallUpdates;
use super::context::RunContext;
use super::eager::eager_next;
use super::hook_caller::{HookCaller, HookStop};
use super::hook_stages;
use super::host_calls::CallMode;
use super::recorder::{BatchEnd, BatchOutcome, CallEnd, Recorder};
use super::state::{CarriedOver, RunState};
use super::tool_scope::ToolScope;
use super::validation::{check_calls, ValidCall};
use crate::message::ToolCall;
use crate::tool::{Caller, Execution, Invocation, OnError, ToolOutcome, ToolResult, UpdateSink};
use crate::trace::{CallTrace, ToolSource};
use crate::BoxFuture;

/// What a batch needs from its run.
pub(crate) struct BatchContext<'a> {
    pub(crate) run: &'a RunContext,
    pub(crate) hooks: &'a HookCaller<'a>,
    /// The tools calls may name.
    pub(crate) scope: ToolScope<'a>,
    /// The round the batch belongs to (0 for an execute-only run).
    pub(crate) turn: u32,
    /// The decisions that let calls needing approval run (or reject them).
    pub(crate) approvals: Approvals<'a>,
}

/// How a launched call finished, seen from the batch.
enum Finish {
    /// It ended; a `tool_result` hook may have stopped the run.
    Ended(CallEnd, Option<HookStop>),
    /// Its agent stopped for approval: its state (boxed: rare, and every
    /// call's future keeps room for a `Finish`) and interruptions.
    Stopped(Box<RunState>, Vec<Interruption>),
}

/// How the response that made the batch ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseEnd {
    /// As the model meant it to: its calls are whole.
    Complete,
    /// Cut off at the output token limit: its calls' arguments may be incomplete.
    OutputLimit,
}

/// How a launched tool function ended, seen from the runner.
pub(crate) enum FunctionEnd {
    Returned(ToolOutcome),
    TimedOut(Duration),
    Panicked,
}

/// Runs the batch. After a response cut off at the output limit no function
/// runs: every call gets an error result, since its arguments may be incomplete.
/// When a valid call needs a decision that no approval gives, nothing runs and no
/// event is sent: the outcome lists the interruptions.
///
/// When the host runs the calls (run input `"calls": "return"`), a call that
/// would start (not an agent's or a handoff's) is returned instead, taking its
/// place among the calls running at once: the outcome lists the returned
/// calls, with the arguments their function would get.
///
/// A call takes what `carried` holds for it: its result from the run that
/// stopped (kept without events), the outcome of its run by the host (which
/// ends it as its function would have), or its agent's state and decisions. When an
/// agent the batch called stops for approval, its state goes into `carried`,
/// no call starts after it (those running finish), the call gets no end
/// event, and the outcome lists its interruptions in call order, with the
/// results of the calls that ran; unless the run ends instead (cancelled, a
/// hook, a fatal failure), when the call ends with an error result.
pub(crate) async fn execute(
    context: &BatchContext<'_>,
    calls: &[ToolCall],
    response: ResponseEnd,
    carried: &mut CarriedOver,
) -> BatchOutcome {
    let run = context.run;
    let agent = run.agent();
    let trace = run.trace.as_deref();
    let mut recorder = Recorder::new(&run.events, trace, agent.config.max_tool_result_bytes, calls.len());
    if response == ResponseEnd::OutputLimit {
        for (index, call) in calls.iter().enumerate() {
            recorder.start(index, call, ToolSource::Function).await;
            let message = format!(
                "The call to \"{}\" was not run: the response was cut off at the output token limit, so its arguments may be incomplete. Try again with shorter arguments.",
                call.name
            );
            recorder.record(index, call, ToolResult::error(message), OnError::Feed, None).await;
        }
        return recorder.finish(BatchEnd::Done);
    }

    let mut checked = check_calls(context.scope, calls);
    if let Err(stop) = hook_stages::tool_call(context.hooks, context.approvals, context.turn, calls, &mut checked).await
    {
        // Nothing ran: the calls leave the transcript, but for those that ran
        // before the run stopped.
        keep_ran(&mut recorder, calls, carried);
        return recorder.stopped(stop);
    }
    let mut handoffs = calls
        .iter()
        .zip(checked.iter_mut())
        .filter(|(call, check)| check.is_ok() && agent.handoffs.contains_key(&call.name));
    if handoffs.next().is_some() {
        for (call, check) in handoffs {
            *check = Err(format!(
                "The call to \"{}\" was not run: only the first handoff of a response is made, and an earlier call made one.",
                call.name
            ));
        }
    }
    // A handoff that will not be made asks for no decision either.
    let interruptions = approval::gate(context.approvals, calls, &mut checked);
    if let Some(trace) = trace.filter(|_| !interruptions.is_empty()) {
        for interruption in &interruptions {
            let attributes = vec![
                ("gen_ai.tool.name", interruption.name.as_str().into()),
                ("gen_ai.tool.call.id", interruption.call_id.as_str().into()),
            ];
            trace.event("ferrule.approval_requested", attributes);
        }
    }
    if !interruptions.is_empty() {
        return recorder.interrupted(interruptions);
    }
    let sequential = agent.config.tool_execution == Execution::Sequential
        || checked.iter().any(|c| matches!(c, Ok(v) if v.tool.options().execution == Execution::Sequential));
    let bound = if sequential { 1 } else { agent.config.max_concurrent_tools };

    // Boxed calls: the set's own stub task (one per batch) would otherwise be
    // as large as a call's future.
    let mut running: FuturesUnordered<BoxFuture<'_, (usize, Finish)>> = FuturesUnordered::new();
    let mut in_flight = vec![false; calls.len()];
    let mut progress: Vec<Option<Arc<CallProgress>>> = vec![None; calls.len()];
    let mut pending = calls.iter().zip(checked).enumerate();
    let mut hook_stop = None;
    let mut stopped: Vec<(usize, Vec<Interruption>)> = Vec::new();
    let mut returned: Vec<ToolCall> = Vec::new();
    let cancelled = loop {
        while running.len() + returned.len() < bound && !run.cancel.is_cancelled() && stopped.is_empty() {
            let Some((index, (call, check))) = pending.next() else { break };
            // The first call with an id takes what was kept for it (a later
            // one repeating the id is invalid, as it was then).
            if let Some(ran) = carried.take_ran(&call.id) {
                // It ran (with its events) in the run that stopped.
                recorder.keep(index, ran);
                continue;
            }
            let source = check.as_ref().map_or(ToolSource::Function, |valid| valid.tool.function().source());
            if let Some(outcome) = carried.results.remove(&call.id) {
                // The host ran it: it ends as its function would have.
                let _ = recorder.start(index, call, source).await;
                let ending = std::future::ready(FunctionEnd::Returned(outcome.into_tool_outcome()));
                running.push(finished(context, index, call, ending, None));
                in_flight[index] = true;
                continue;
            }
            if let Ok(valid) = &check {
                if returns(context, call, valid) {
                    returned.push(as_invoked(call, valid));
                    continue;
                }
            }
            let traced = recorder.start(index, call, source).await;
            match check {
                Err(problem) => {
                    // An agent that waited does not go on (a hook denied its call).
                    carried.nested.remove(&call.id);
                    carried.nested_decided.remove(&call.id);
                    recorder.record(index, call, ToolResult::error(problem), OnError::Feed, None).await
                }
                Ok(valid) => {
                    // Progress matters only to updates and end events: none without a sink.
                    let call_progress = run.events.is_enabled().then(|| Arc::new(CallProgress::default()));
                    progress[index] = call_progress.clone();
                    let decisions = carried.nested_decided.remove(&call.id).unwrap_or_default();
                    let resume = carried.nested.remove(&call.id).map(|state| (state, decisions.into_iter().collect()));
                    let (launched, site) = launch(run, call, valid, call_progress, resume, traced, 1);
                    running.push(finished(context, index, call, launched, site));
                    in_flight[index] = true;
                }
            }
        }
        if running.is_empty() {
            break run.cancel.is_cancelled();
        }
        // The record below is awaited outside the select, so no part of the
        // select's output is held by the batch's future while it waits.
        let (index, finish) = tokio::select! {
            biased;
            _ = run.cancel.cancelled() => break true,
            Some(next) = eager_next(&mut running) => next,
        };
        // The eager wait outlasts the check above: a result that came after a
        // cancellation (perhaps because of it) is discarded.
        if run.cancel.is_cancelled() {
            break true;
        }
        let (CallEnd { result, tool_failed }, stop) = match finish {
            Finish::Ended(end, stop) => (end, stop),
            Finish::Stopped(state, interruptions) => {
                // Still open: it ends if the run ends instead.
                carried.nested.insert(calls[index].id.clone(), *state);
                stopped.push((index, interruptions));
                continue;
            }
        };
        match stop {
            // The result a hook was judging does not enter the transcript: the
            // call ends as the others still running do.
            Some(HookStop::Cancelled) => break true,
            Some(stop) => {
                hook_stop = Some(stop);
                break false;
            }
            None => {}
        }
        in_flight[index] = false;
        let call = &calls[index];
        let on_failure = match tool_failed {
            true => context.scope.tools.get(&call.name).map_or(OnError::Feed, |(_, tool)| tool.options().on_error),
            false => OnError::Feed,
        };
        recorder.record(index, call, result, on_failure, progress[index].as_ref()).await;
    };
    let stopped_by_hook = matches!(hook_stop, Some(HookStop::Failed(_)));
    keep_ran(&mut recorder, calls, carried);
    if cancelled || stopped_by_hook {
        drop(running);
        for index in (0..calls.len()).filter(|&i| in_flight[i]) {
            let call = &calls[index];
            let why = if stopped_by_hook {
                "a hook ended the run"
            } else if run.timed_out.load(Ordering::SeqCst) {
                "the run ran out of time"
            } else {
                "the run was cancelled"
            };
            let message = format!("The call to \"{}\" was cancelled because {why}.", call.name);
            recorder.record(index, call, ToolResult::error(message), OnError::Feed, progress[index].as_ref()).await;
        }
    }
    let interrupting = !stopped.is_empty() && !cancelled && hook_stop.is_none() && !recorder.failed();
    if !interrupting {
        for (index, _) in &stopped {
            let call = &calls[*index];
            carried.nested.remove(&call.id);
            if !cancelled && !stopped_by_hook {
                let message =
                    format!("The call to \"{}\" was not finished: a tool's failure ended the run.", call.name);
                recorder
                    .record(*index, call, ToolResult::error(message), OnError::Feed, progress[*index].as_ref())
                    .await;
            }
        }
    }
    match hook_stop {
        Some(stop) => recorder.stopped(stop),
        None if interrupting => {
            stopped.sort_by_key(|(index, _)| *index);
            recorder.interrupted(stopped.into_iter().flat_map(|(_, interruptions)| interruptions).collect())
        }
        // Unless the run ends first: then, never started, they leave the
        // transcript.
        None if !returned.is_empty() && !cancelled && !recorder.failed() => recorder.returned(returned),
        None => recorder.finish(if cancelled { BatchEnd::Cancelled } else { BatchEnd::Done }),
    }
}

/// Whether the host runs `call` instead of the batch: it asked to run the
/// calls, and the call is not an agent's (whose run is this run's) or a
/// handoff's (which this run makes).
fn returns(context: &BatchContext<'_>, call: &ToolCall, valid: &ValidCall<'_>) -> bool {
    context.run.calls == CallMode::Return
        && !valid.tool.function().starts_runs()
        && !context.run.agent().handoffs.contains_key(&call.name)
}

/// `call` as its function would get it: with the arguments a `tool_call` hook
/// put in place of the model's.
fn as_invoked(call: &ToolCall, valid: &ValidCall<'_>) -> ToolCall {
    let mut call = call.clone();
    if valid.replaced {
        call.arguments = valid.arguments.to_string();
    }
    call
}

/// How call `index` finishes once its function's future (or the host's
/// outcome) `ending` ends: its result checked, unless its agent stopped for
/// approval, then judged by the `tool_result` hooks.
fn finished<'a>(
    context: &'a BatchContext<'a>,
    index: usize,
    call: &'a ToolCall,
    ending: impl std::future::Future<Output = FunctionEnd> + Send + 'a,
    site: Option<Arc<AgentCallSite>>,
) -> BoxFuture<'a, (usize, Finish)> {
    // `then`, not an `async` block awaiting `ending`: that would keep room for
    // the function's future twice.
    Box::pin(ending.then(move |ending| async move {
        let end = call_end(call, ending);
        if let Some((state, interruptions)) = site.and_then(|site| site.take_stopped()) {
            return (index, Finish::Stopped(Box::new(state), interruptions));
        }
        let (end, stop) = hook_stages::tool_result(context.hooks, context.turn, call, end).await;
        (index, Finish::Ended(end, stop))
    }))
}

/// Records the results the calls that ran before the run stopped keep, for
/// those the batch did not reach (the first call with an id takes it).
fn keep_ran(recorder: &mut Recorder<'_>, calls: &[ToolCall], carried: &mut CarriedOver) {
    for (index, call) in calls.iter().enumerate() {
        if let Some(ran) = carried.take_ran(&call.id) {
            recorder.keep(index, ran);
        }
    }
}

/// Starts the tool function for a valid call of `run`, the `attempt`th time
/// it runs, bounded by the tool's timeout. On timeout the call's token is
/// cancelled so the function can see it. A function that starts runs gets the
/// call's site (which it is returned with), going on from `resume` when given.
pub(crate) fn launch(
    run: &RunContext,
    call: &ToolCall,
    valid: ValidCall<'_>,
    progress: Option<Arc<CallProgress>>,
    resume: Option<(RunState, HashMap<String, Decision>)>,
    trace: Option<CallTrace>,
    attempt: u32,
) -> (impl std::future::Future<Output = FunctionEnd> + Send + 'static, Option<Arc<AgentCallSite>>) {
    let tool = valid.tool;
    let cancel = run.cancel.child_token();
    let timeout_ms = match tool.options().timeout_ms {
        0 => run.agent().config.tool_timeout_ms,
        ms => ms,
    };
    let function = tool.function().clone();
    let site = function
        .starts_runs()
        .then(|| Arc::new(AgentCallSite::new(run.nesting.clone(), run.events.clone(), progress.clone(), resume)));
    let caller = site.clone().map(|site| site as Caller);
    let updates = match progress {
        Some(progress) => UpdateSink::new(CallUpdates::new(call, progress, run.events.clone())),
        None => UpdateSink::discard(),
    };
    let call = as_invoked(call, &valid);
    let invocation = Invocation::in_run(call, valid.arguments, cancel.clone(), updates, run.serial, caller)
        .with_trace(trace)
        .with_attempt(attempt);
    let bounded = async move {
        let returned = function.invoke(invocation);
        if timeout_ms == 0 {
            return FunctionEnd::Returned(returned.await);
        }
        let limit = Duration::from_millis(timeout_ms);
        match tokio::time::timeout(limit, returned).await {
            Ok(outcome) => FunctionEnd::Returned(outcome),
            Err(_) => {
                cancel.cancel();
                FunctionEnd::TimedOut(limit)
            }
        }
    };
    (AssertUnwindSafe(bounded).catch_unwind().map(|caught| caught.unwrap_or(FunctionEnd::Panicked)), site)
}

/// What a call's function ending records: its result, and whether it counts as
/// the tool's failure.
pub(crate) fn call_end(call: &ToolCall, ending: FunctionEnd) -> CallEnd {
    let name = &call.name;
    let (result, tool_failed) = match ending {
        FunctionEnd::Returned(ToolOutcome::Completed(result)) => match result.check() {
            Ok(()) => (result, false),
            Err(problem) => (ToolResult::error(format!("Tool \"{name}\" returned an invalid result: {problem}")), true),
        },
        FunctionEnd::Returned(ToolOutcome::Failed(message)) => (ToolResult::error(message), true),
        FunctionEnd::Returned(ToolOutcome::Invalid(problem)) => {
            (ToolResult::error(format!("Tool \"{name}\" returned an invalid result: {problem}")), true)
        }
        FunctionEnd::TimedOut(limit) => (
            ToolResult::error(format!("Tool \"{name}\" timed out after {} ms and was abandoned.", limit.as_millis())),
            true,
        ),
        FunctionEnd::Panicked => (ToolResult::error(format!("Tool \"{name}\" failed unexpectedly.")), true),
    };
    CallEnd { result, tool_failed }
}
