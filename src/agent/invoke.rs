//! An `invoke` run: one call a run returned for the host to run (run input
//! `"calls": "return"`), run by its tool alone. Its arguments are checked
//! again, then its function runs as a batch would run it (the tool's timeout,
//! updates, cancellation, its events); no hook and no approval is asked (the
//! run that returned the call asked them), and no model. Its outcome is what
//! the resume of that run takes for the call.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::batch::{call_end, launch};
use super::call_progress::CallProgress;
use super::context::RunContext;
use super::host_calls::CallOutcome;
use super::next_step::Ending;
use super::recorder::{CallEnd, Recorder};
use super::tool_scope::ToolScope;
use super::tool_set::ToolSet;
use super::validation::check_calls;
use crate::message::ToolCall;
use crate::tool::{OnError, ToolResult};
use crate::trace::ToolSource;

/// The call an `invoke` run runs, and how it ended.
pub(crate) struct Invoked {
    call: ToolCall,
    /// Which time the host runs the call (1 the first time).
    attempt: u32,
    /// How the call ended; `None` until it did, and when the run was
    /// cancelled first.
    pub(crate) outcome: Option<CallOutcome>,
}

impl Invoked {
    /// The `attempt`th run of `call`.
    pub(crate) fn new(call: ToolCall, attempt: u32) -> Self {
        Invoked { call, attempt, outcome: None }
    }

    /// The tool the call names.
    pub(crate) fn tool(&self) -> &str {
        &self.call.name
    }
}

/// Runs the call among `tools` and keeps its outcome; the run completes,
/// unless it was cancelled first (the function then sees its cancellation
/// and the call ends with a cancellation result).
pub(crate) async fn invoke(run: &RunContext, tools: &ToolSet, invoked: &mut Invoked) -> Ending {
    let call = &invoked.call;
    let calls = std::slice::from_ref(call);
    // The call's tool is in scope even when deferred: the run that returned
    // the call had disclosed it.
    let scope =
        ToolScope { tools, run: None, turn: Some(std::slice::from_ref(&call.name)), disclosed: &BTreeSet::new() };
    let check = check_calls(scope, calls).pop().unwrap_or_else(|| Err(String::new()));
    let config = &run.agent().config;
    let mut recorder = Recorder::new(&run.events, run.trace.as_deref(), config.max_tool_result_bytes, 1);
    let source = check.as_ref().map_or(ToolSource::Function, |valid| valid.tool.function().source());
    let traced = recorder.start(0, call, source).await;
    let (end, progress) = match check {
        Err(problem) => (CallEnd { result: ToolResult::error(problem), tool_failed: false }, None),
        Ok(valid) => {
            let progress = run.events.is_enabled().then(|| Arc::new(CallProgress::default()));
            let (launched, _) = launch(run, call, valid, progress.clone(), None, traced, invoked.attempt);
            let ending = tokio::select! {
                biased;
                _ = run.cancel.cancelled() => None,
                ending = launched => Some(ending),
            };
            match ending {
                Some(ending) => (call_end(call, ending), progress),
                None => {
                    let why = match run.timed_out.load(Ordering::SeqCst) {
                        true => "the run ran out of time",
                        false => "the run was cancelled",
                    };
                    let message = format!("The call to \"{}\" was cancelled because {why}.", call.name);
                    recorder.record(0, call, ToolResult::error(message), OnError::Feed, progress.as_ref()).await;
                    return Ending::Cancelled;
                }
            }
        }
    };
    let CallEnd { mut result, tool_failed } = end;
    // Cut as the resumed run will cut it: what the host carries is no more.
    if config.max_tool_result_bytes > 0 {
        result.truncate_text(config.max_tool_result_bytes);
    }
    invoked.outcome = Some(CallOutcome::of(result.clone(), tool_failed));
    // The tool's `on_error` is for the run that resumes with the outcome.
    recorder.record(0, call, result, OnError::Feed, progress.as_ref()).await;
    Ending::Completed
}
