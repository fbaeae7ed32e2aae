//! The one place a batch's results are recorded: the size bound, the end event,
//! the slot in call order, and what the results add up to.

use std::future::Future;
use std::sync::Arc;

use super::approval::Interruption;
use super::call_progress::CallProgress;
use super::event::EventKind;
use super::event_queue::EventEmitter;
use super::hook_caller::HookStop;
use crate::error::{Error, ErrorCode};
use crate::message::{ToolCall, ToolResultMessage};
use crate::tool::{OnError, ToolResult};
use crate::trace::{CallTrace, RunTrace, Span, ToolSource};

/// How a batch went.
pub(crate) struct BatchOutcome {
    /// One entry per call, in call order; `None` for a call that never started.
    pub(crate) results: Vec<Option<ToolResultMessage>>,
    /// Every call returned a successful terminating result.
    pub(crate) terminate: bool,
    /// Which calls returned one, in call order.
    pub(crate) terminating: Vec<bool>,
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
    /// The calls the batch returned for the host to run, in call order.
    pub(crate) returned: Vec<ToolCall>,
}

/// A call's result as the batch will record it, and whether it is the tool's
/// failure (its `on_error` then says what that means for the run).
pub(crate) struct CallEnd {
    pub(crate) result: ToolResult,
    pub(crate) tool_failed: bool,
}

/// Ends a call's span with its result.
fn tool_span_end(mut span: Span, result: &ToolResult, captured: bool) {
    let text = captured.then(|| crate::message::text_of(&result.content));
    if result.is_error {
        span.fail("tool_error", text.as_deref().unwrap_or("the tool's result is an error"));
    }
    if let Some(text) = text {
        span.set("gen_ai.tool.call.result", text);
    }
    span.end();
}

/// How a batch's recording ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchEnd {
    /// Every call that started has its result.
    Done,
    /// The run was cancelled: calls never started have none.
    Cancelled,
}

/// Records a batch's results as they come.
pub(crate) struct Recorder<'a> {
    events: &'a EventEmitter,
    /// The run's tracing, and each started call's span until its result.
    trace: Option<&'a RunTrace>,
    spans: Vec<Option<Span>>,
    max_result_bytes: usize,
    results: Vec<Option<ToolResultMessage>>,
    terminating: Vec<bool>,
    fatal: Option<Error>,
    added_tools: Vec<String>,
}

impl<'a> Recorder<'a> {
    /// A recorder for `calls` calls; results longer than `max_result_bytes` (when
    /// not 0) are cut.
    pub(crate) fn new(
        events: &'a EventEmitter,
        trace: Option<&'a RunTrace>,
        max_result_bytes: usize,
        calls: usize,
    ) -> Self {
        Recorder {
            events,
            trace,
            spans: std::iter::repeat_with(|| None).take(if trace.is_some() { calls } else { 0 }).collect(),
            max_result_bytes,
            results: vec![None; calls],
            terminating: vec![false; calls],
            fatal: None,
            added_tools: Vec::new(),
        }
    }

    /// Announces that call `index` begins (its span starts, when the run is
    /// traced: what the call's function is given of it is returned).
    pub(crate) async fn start(&mut self, index: usize, call: &ToolCall, source: ToolSource) -> Option<CallTrace> {
        let traced = self.trace.map(|trace| {
            let span = trace.tool(call, source);
            let call_trace = trace.call(&span);
            self.spans[index] = Some(span);
            call_trace
        });
        if self.events.is_enabled() {
            self.events.emit(EventKind::ToolExecutionStart { call: call.clone() }).await;
        }
        traced
    }

    /// Records call `index`'s result. `on_failure` says what the result means
    /// when it is the tool's failure (`Feed` for a result that is not one);
    /// `progress` is the call's, when it was launched: its updates stop here.
    /// The result is recorded, and its end event queued, when this is called;
    /// the future waits for room in a full queue. (Not an `async fn`: its
    /// future would hold the result it was given at every await of the batch.)
    pub(crate) fn record(
        &mut self,
        index: usize,
        call: &ToolCall,
        mut result: ToolResult,
        on_failure: OnError,
        progress: Option<&Arc<CallProgress>>,
    ) -> impl Future<Output = ()> + Send + 'a {
        if let Some(progress) = progress {
            progress.finish();
        }
        if self.max_result_bytes > 0 {
            result.truncate_text(self.max_result_bytes);
        }
        if on_failure == OnError::Fatal && self.fatal.is_none() {
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
        if let Some(span) = self.spans.get_mut(index).and_then(Option::take) {
            let captured = self.trace.is_some_and(RunTrace::captures_content);
            tool_span_end(span, &result, captured);
        }
        let events = self.events;
        let message = ToolResultMessage {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: if events.is_enabled() { result.content.clone() } else { std::mem::take(&mut result.content) },
            is_error: result.is_error,
        };
        let queued = events.is_enabled().then(|| {
            let is_error = result.is_error;
            let end =
                EventKind::ToolExecutionEnd { call_id: call.id.clone(), name: call.name.clone(), result, is_error };
            events.emit_call_end(end, progress)
        });
        self.results[index] = Some(message);
        async move {
            if let Some(queued) = queued {
                queued.await;
            }
        }
    }

    /// Whether a tool with `on_error: fatal` failed.
    pub(crate) fn failed(&self) -> bool {
        self.fatal.is_some()
    }

    /// Keeps call `index`'s result from before, and whether it asked the run
    /// to end: no event, nothing else it adds up to (it did then).
    pub(crate) fn keep(&mut self, index: usize, (result, terminating): (ToolResultMessage, bool)) {
        self.results[index] = Some(result);
        self.terminating[index] = terminating;
    }

    /// The outcome of a batch that a hook ended (or the run's cancellation while
    /// a hook decided).
    pub(crate) fn stopped(self, stop: HookStop) -> BatchOutcome {
        match stop {
            HookStop::Cancelled => self.finish(BatchEnd::Cancelled),
            HookStop::Failed(error) => BatchOutcome { hook_failure: Some(error), ..self.finish(BatchEnd::Done) },
        }
    }

    /// The outcome of a batch that stopped for decisions: before anything ran,
    /// or when an agent it called stopped for them (the results so far kept).
    pub(crate) fn interrupted(mut self, interruptions: Vec<Interruption>) -> BatchOutcome {
        // A call still open waits for a decision: its span ends, not failed.
        for mut span in self.spans.drain(..).flatten() {
            span.set("ferrule.tool.interrupted", true);
            span.end();
        }
        BatchOutcome { interruptions, ..self.finish(BatchEnd::Done) }
    }

    /// The outcome of a batch that returned `calls` for the host to run (the
    /// results so far kept).
    pub(crate) fn returned(self, calls: Vec<ToolCall>) -> BatchOutcome {
        BatchOutcome { returned: calls, ..self.finish(BatchEnd::Done) }
    }

    /// What the recorded results add up to.
    pub(crate) fn finish(self, end: BatchEnd) -> BatchOutcome {
        let cancelled = end == BatchEnd::Cancelled;
        let terminate = !cancelled && !self.terminating.is_empty() && self.terminating.iter().all(|&t| t);
        BatchOutcome {
            results: self.results,
            terminate,
            terminating: self.terminating,
            fatal: self.fatal,
            cancelled,
            added_tools: self.added_tools,
            interruptions: Vec::new(),
            returned: Vec::new(),
            hook_failure: None,
        }
    }
}
