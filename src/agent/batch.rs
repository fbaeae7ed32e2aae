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

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::FuturesUnordered;
use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use super::approval::{self, Approvals, Interruption, Verdict};
use super::call_updates::{CallProgress, CallUpdates};
use super::eager::eager_next;
use super::events::{EventEmitter, EventKind};
use super::hooks::{Flow, HookCaller, HookStop};
use super::validation::{check_arguments, check_calls, HookApproval, ToolScope, ValidCall};
use super::AgentInner;
use crate::error::{Error, ErrorCode};
use crate::hook::{HookDecision, HookStage};
use crate::message::{ToolCall, ToolResultMessage};
use crate::tool::{Execution, Invocation, OnError, ToolOutcome, ToolResult, UpdateSink};

/// What a batch needs from its run.
pub(crate) struct BatchContext<'a> {
    pub(crate) agent: &'a AgentInner,
    pub(crate) events: &'a EventEmitter,
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) run_serial: u64,
    /// The tools calls may name.
    pub(crate) scope: ToolScope<'a>,
    /// The round the batch belongs to (0 for an execute-only run).
    pub(crate) turn: u32,
    pub(crate) hooks: &'a HookCaller<'a>,
    /// Set when `cancel` came from the run's deadline.
    pub(crate) timed_out: &'a std::sync::atomic::AtomicBool,
    /// The decisions that let calls needing approval run (or reject them).
    pub(crate) approvals: &'a Approvals,
}

/// How a batch went.
pub(crate) struct BatchOutcome {
    /// One entry per call, in call order; `None` for a call that never started.
    pub(crate) results: Vec<Option<ToolResultMessage>>,
    /// Every call returned a successful terminating result.
    pub(crate) terminate: bool,
    /// A tool with `on_error: fatal` failed.
    pub(crate) fatal: Option<Error>,
    /// The run was cancelled during the batch.
    pub(crate) cancelled: bool,
    /// A hook aborted the run, gave an invalid decision or none in time.
    pub(crate) hook_failure: Option<Error>,
    /// Tools named in `added_tools` of successful results.
    pub(crate) added_tools: Vec<String>,
    /// The calls the batch waits on a decision for; when there are any, no call
    /// ran and `results` are all `None`.
    pub(crate) interruptions: Vec<Interruption>,
}

/// How a launched call ended, seen from the runner.
enum Ending {
    Returned(ToolOutcome),
    TimedOut(Duration),
    Panicked,
}

/// Runs the batch. With `length_stopped` (the response was cut off), no function
/// runs: every call gets an error result, since its arguments may be incomplete.
/// When a valid call needs a decision that no approval gives, nothing runs and no
/// event is sent: the outcome lists the interruptions.
pub(crate) async fn execute(context: &BatchContext<'_>, calls: &[ToolCall], length_stopped: bool) -> BatchOutcome {
    let mut recorder = Recorder::new(context, calls.len());
    if length_stopped {
        for (index, call) in calls.iter().enumerate() {
            recorder.start(call).await;
            let message = format!(
                "The call to \"{}\" was not run: the response was cut off at the output token limit, so its arguments may be incomplete. Try again with shorter arguments.",
                call.name
            );
            recorder.record(index, call, ToolResult::error(message), false, None).await;
        }
        return recorder.finish(false);
    }

    let mut checked = check_calls(context.agent, context.scope, calls);
    if let Err(stop) = consult_tool_call_hooks(context, calls, &mut checked).await {
        // Nothing ran: the calls leave the transcript.
        return recorder.stopped(stop);
    }
    let interruptions = approval::gate(context.approvals, calls, &mut checked);
    if !interruptions.is_empty() {
        return BatchOutcome { interruptions, ..recorder.finish(false) };
    }
    let sequential = context.agent.config.tool_execution == Execution::Sequential
        || checked.iter().any(|c| matches!(c, Ok(v) if v.tool.options().execution == Execution::Sequential));
    let bound = if sequential { 1 } else { context.agent.config.max_concurrent_tools };

    let mut running = FuturesUnordered::new();
    let mut in_flight = vec![false; calls.len()];
    let mut progress: Vec<Option<Arc<CallProgress>>> = vec![None; calls.len()];
    let mut pending = calls.iter().zip(checked).enumerate();
    let mut hook_stop = None;
    let cancelled = loop {
        while running.len() < bound && !context.cancel.is_cancelled() {
            let Some((index, (call, check))) = pending.next() else { break };
            recorder.start(call).await;
            match check {
                Err(problem) => recorder.record(index, call, ToolResult::error(problem), false, None).await,
                Ok(valid) => {
                    // Progress matters only to updates and end events: none without a sink.
                    let call_progress = context.events.is_enabled().then(|| Arc::new(CallProgress::default()));
                    progress[index] = call_progress.clone();
                    let launched = launch(context, call, valid, call_progress);
                    running.push(async move {
                        let (result, failed) = ending_result(call, launched.await);
                        (index, consult_tool_result_hooks(context, call, result, failed).await)
                    });
                    in_flight[index] = true;
                }
            }
        }
        if running.is_empty() {
            break context.cancel.is_cancelled();
        }
        tokio::select! {
            biased;
            _ = context.cancel.cancelled() => break true,
            Some((index, (result, failed, stop))) = eager_next(&mut running) => {
                // The eager wait outlasts the check above: a result that came
                // after a cancellation (perhaps because of it) is discarded.
                if context.cancel.is_cancelled() {
                    break true;
                }
                match stop {
                    // The result a hook was judging does not enter the
                    // transcript: the call ends as the others still running do.
                    Some(HookStop::Cancelled) => break true,
                    Some(stop) => {
                        hook_stop = Some(stop);
                        break false;
                    }
                    None => {}
                }
                in_flight[index] = false;
                let call = &calls[index];
                let fatal_on_error = context.agent.tool(&call.name).is_some_and(|(_, t)| t.options().on_error == OnError::Fatal);
                recorder.record(index, call, result, failed && fatal_on_error, progress[index].as_ref()).await;
            }
        }
    };
    let stopped_by_hook = matches!(hook_stop, Some(HookStop::Failed(_)));
    if cancelled || stopped_by_hook {
        drop(running);
        for index in (0..calls.len()).filter(|&i| in_flight[i]) {
            let call = &calls[index];
            let why = if stopped_by_hook {
                "a hook ended the run"
            } else if context.timed_out.load(std::sync::atomic::Ordering::SeqCst) {
                "the run ran out of time"
            } else {
                "the run was cancelled"
            };
            let message = format!("The call to \"{}\" was cancelled because {why}.", call.name);
            recorder.record(index, call, ToolResult::error(message), false, progress[index].as_ref()).await;
        }
    }
    match hook_stop {
        Some(stop) => recorder.stopped(stop),
        None => recorder.finish(cancelled),
    }
}

/// Consults the `tool_call` hooks about every valid call, in call order, before
/// any call runs: a denial or replaced arguments that fail the schema make the
/// call an error result; an approval or an interrupt is noted for the gate.
async fn consult_tool_call_hooks(
    context: &BatchContext<'_>,
    calls: &[ToolCall],
    checked: &mut [Result<ValidCall<'_>, String>],
) -> Result<(), HookStop> {
    if !context.hooks.wants(HookStage::ToolCall) {
        return Ok(());
    }
    for (call, check) in calls.iter().zip(checked.iter_mut()) {
        if check.is_err() {
            continue;
        }
        let payload = |check: &Result<ValidCall<'_>, String>| {
            let Ok(valid) = check else { return String::new() };
            // Whether the batch would stop for it: no decision covers it yet.
            let needs_approval = matches!(context.approvals.verdict(call, valid), Verdict::Ask);
            serde_json::json!({
                "turn": context.turn,
                "call": {"id": call.id, "name": call.name, "arguments": valid.arguments},
                "needs_approval": needs_approval,
            })
            .to_string()
        };
        let apply = |check: &mut Result<ValidCall<'_>, String>, decision: HookDecision| {
            let Ok(valid) = check else { return Ok(Flow::Stop) };
            match decision {
                HookDecision::Deny(text) => *check = Err(text),
                HookDecision::Arguments(arguments) => match check_arguments(valid.tool, &call.name, &arguments) {
                    Ok(()) => {
                        valid.arguments = arguments;
                        valid.replaced = true;
                    }
                    Err(problem) => *check = Err(problem),
                },
                HookDecision::Approve => valid.hook_approval = HookApproval::Approved,
                HookDecision::Interrupt => valid.hook_approval = HookApproval::Interrupt,
                _ => {}
            }
            Ok(if check.is_ok() { Flow::Next } else { Flow::Stop })
        };
        context.hooks.consult(HookStage::ToolCall, check, payload, apply).await?;
    }
    Ok(())
}

/// Consults the `tool_result` hooks about a call's result: a replacement that
/// is not a valid tool result becomes an error result. The result to record,
/// whether it counts as the tool's failure, and why the run must end (the result
/// as it was then is still recorded).
async fn consult_tool_result_hooks(
    context: &BatchContext<'_>,
    call: &ToolCall,
    result: ToolResult,
    failed: bool,
) -> (ToolResult, bool, Option<HookStop>) {
    if !context.hooks.wants(HookStage::ToolResult) {
        return (result, failed, None);
    }
    let mut subject = (result, failed);
    let payload = |(result, _): &(ToolResult, bool)| {
        serde_json::json!({
            "turn": context.turn,
            "call_id": call.id,
            "name": call.name,
            "result": result,
            "is_error": result.is_error,
        })
        .to_string()
    };
    let apply = |subject: &mut (ToolResult, bool), decision: HookDecision| {
        if let HookDecision::Result(replacement) = decision {
            *subject = match ToolResult::from_value(replacement) {
                Ok(result) => (result, false),
                Err(problem) => (
                    ToolResult::error(format!(
                        "Tool \"{}\" returned an invalid result: {}",
                        call.name, problem.message
                    )),
                    false,
                ),
            };
        }
        Ok(Flow::Next)
    };
    let stop = context.hooks.consult(HookStage::ToolResult, &mut subject, payload, apply).await.err();
    (subject.0, subject.1, stop)
}

/// Starts the tool function for a valid call, bounded by the tool's timeout. On
/// timeout the call's token is cancelled so the function can see it.
fn launch(
    context: &BatchContext<'_>,
    call: &ToolCall,
    valid: ValidCall<'_>,
    progress: Option<Arc<CallProgress>>,
) -> impl std::future::Future<Output = Ending> + Send + 'static {
    let tool = valid.tool;
    let cancel = context.cancel.child_token();
    let timeout_ms = match tool.options().timeout_ms {
        0 => context.agent.config.tool_timeout_ms,
        ms => ms,
    };
    let updates = match progress {
        Some(progress) => UpdateSink::new(CallUpdates::new(call, progress, context.events.clone())),
        None => UpdateSink::discard(),
    };
    let mut call = call.clone();
    if valid.replaced {
        call.arguments = valid.arguments.to_string();
    }
    let invocation = Invocation::in_run(call, valid.arguments, cancel.clone(), updates, context.run_serial);
    let function = tool.function().clone();
    let bounded = async move {
        let returned = function.invoke(invocation);
        if timeout_ms == 0 {
            return Ending::Returned(returned.await);
        }
        let limit = Duration::from_millis(timeout_ms);
        match tokio::time::timeout(limit, returned).await {
            Ok(outcome) => Ending::Returned(outcome),
            Err(_) => {
                cancel.cancel();
                Ending::TimedOut(limit)
            }
        }
    };
    AssertUnwindSafe(bounded).catch_unwind().map(|caught| caught.unwrap_or(Ending::Panicked))
}

/// The result a call's ending records, and whether it counts as a tool failure.
fn ending_result(call: &ToolCall, ending: Ending) -> (ToolResult, bool) {
    let name = &call.name;
    match ending {
        Ending::Returned(ToolOutcome::Completed(result)) => match result.check() {
            Ok(()) => (result, false),
            Err(problem) => (ToolResult::error(format!("Tool \"{name}\" returned an invalid result: {problem}")), true),
        },
        Ending::Returned(ToolOutcome::Failed(message)) => (ToolResult::error(message), true),
        Ending::Returned(ToolOutcome::Invalid(problem)) => {
            (ToolResult::error(format!("Tool \"{name}\" returned an invalid result: {problem}")), true)
        }
        Ending::TimedOut(limit) => (
            ToolResult::error(format!("Tool \"{name}\" timed out after {} ms and was abandoned.", limit.as_millis())),
            true,
        ),
        Ending::Panicked => (ToolResult::error(format!("Tool \"{name}\" failed unexpectedly.")), true),
    }
}

/// The one place results are recorded: size bound, end event, slot in call order.
struct Recorder<'a> {
    events: &'a EventEmitter,
    max_result_bytes: usize,
    results: Vec<Option<ToolResultMessage>>,
    terminating: Vec<bool>,
    fatal: Option<Error>,
    added_tools: Vec<String>,
}

impl<'a> Recorder<'a> {
    fn new(context: &BatchContext<'a>, calls: usize) -> Self {
        Recorder {
            events: context.events,
            max_result_bytes: context.agent.config.max_tool_result_bytes,
            results: vec![None; calls],
            terminating: vec![false; calls],
            fatal: None,
            added_tools: Vec::new(),
        }
    }

    async fn start(&self, call: &ToolCall) {
        if self.events.is_enabled() {
            self.events.emit(EventKind::ToolExecutionStart { call: call.clone() }).await;
        }
    }

    /// Records a call's result. `progress` is the call's, when it was launched:
    /// its updates stop here.
    async fn record(
        &mut self,
        index: usize,
        call: &ToolCall,
        mut result: ToolResult,
        fatal: bool,
        progress: Option<&Arc<CallProgress>>,
    ) {
        if let Some(progress) = progress {
            progress.finish();
        }
        if self.max_result_bytes > 0 {
            result.truncate_text(self.max_result_bytes);
        }
        if fatal && self.fatal.is_none() {
            let text = crate::message::text_of(&result.content);
            self.fatal = Some(Error::new(
                ErrorCode::ToolFailed,
                format!("tool \"{}\" (call {}) failed: {text}", call.name, call.id),
            ));
        }
        if !result.is_error {
            self.added_tools.extend(result.added_tools.iter().cloned());
        }
        self.terminating[index] = result.terminate && !result.is_error;
        let message = ToolResultMessage {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: if self.events.is_enabled() {
                result.content.clone()
            } else {
                std::mem::take(&mut result.content)
            },
            is_error: result.is_error,
        };
        if self.events.is_enabled() {
            let is_error = result.is_error;
            let end =
                EventKind::ToolExecutionEnd { call_id: call.id.clone(), name: call.name.clone(), result, is_error };
            match progress {
                Some(progress) => self.events.emit_call_end(end, progress).await,
                None => self.events.emit(end).await,
            }
        }
        self.results[index] = Some(message);
    }

    /// The outcome of a batch that a hook ended (or the run's cancellation while
    /// a hook decided).
    fn stopped(self, stop: HookStop) -> BatchOutcome {
        match stop {
            HookStop::Cancelled => self.finish(true),
            HookStop::Failed(error) => BatchOutcome { hook_failure: Some(error), ..self.finish(false) },
        }
    }

    fn finish(self, cancelled: bool) -> BatchOutcome {
        let terminate = !cancelled && !self.terminating.is_empty() && self.terminating.iter().all(|&t| t);
        BatchOutcome {
            results: self.results,
            terminate,
            fatal: self.fatal,
            cancelled,
            added_tools: self.added_tools,
            interruptions: Vec::new(),
            hook_failure: None,
        }
    }
}
