//! A response's batch as a step of the run: it runs, and its outcome goes into
//! the run's progress (the message, the results in call order, the tools it
//! disclosed) and says what the run does next.

use std::collections::HashSet;

use super::approval::Approvals;
use super::batch::{self, BatchContext, ResponseEnd};
use super::context::RunContext;
use super::next_step::{Ending, NextStep};
use super::progress::RunProgress;
use super::state::CarriedOver;
use super::tool_scope::ToolScope;
use super::tool_set::ToolSet;
use crate::message::{AssistantMessage, Message, ToolResultMessage};

/// A response whose calls run as a batch.
pub(crate) struct Batch {
    pub(crate) message: AssistantMessage,
    /// How the response ended.
    pub(crate) response: ResponseEnd,
    /// The turn it belongs to (0 outside any).
    pub(crate) turn: u32,
    /// The tool set a `turn_start` hook chose for the turn.
    pub(crate) turn_tools: Option<Vec<String>>,
}

/// Validates and executes the calls of `batch`, among `tools`, and records the
/// message and the results. Its calls take what `carried` holds for them
/// (results, states of agents, decisions) and leave there what a run that
/// stops for an agent's approval carries over.
pub(crate) async fn run_batch(
    run: &RunContext,
    tools: &ToolSet,
    progress: &mut RunProgress,
    carried: &mut CarriedOver,
    batch: Batch,
) -> NextStep {
    let Batch { mut message, response, turn, turn_tools } = batch;
    let hooks = run.hooks();
    let continued = carried.calls();
    let context = BatchContext {
        run,
        hooks: &hooks,
        scope: ToolScope {
            tools,
            run: progress.tools.as_ref(),
            turn: turn_tools.as_deref(),
            disclosed: &progress.disclosed,
        },
        turn,
        approvals: Approvals { decided: &progress.decided, standing: &progress.standing, continued: &continued },
    };
    // Boxed, as the model's request is: a waiting run holds the room of the one
    // under way, not of both.
    let outcome = Box::pin(batch::execute(&context, &message.tool_calls, response, carried)).await;
    run.nesting.take_uncounted(&mut progress.usage);
    for added in outcome.added_tools {
        if tools.get(&added).is_some_and(|(_, tool)| tool.options().deferred) {
            progress.disclosed.insert(added);
        }
    }
    if !outcome.interruptions.is_empty() || !outcome.returned.is_empty() {
        // The message waits, whole, for decisions or for the host to run its
        // returned calls, in the turn's tool set; the decisions given so far
        // stay with it, and so do the results of calls that ran before (the
        // first call with an id has it; a later one repeating the id is
        // answered again).
        let mut ids = HashSet::new();
        let results = outcome.results.into_iter().zip(outcome.terminating);
        let firsts = message.tool_calls.iter().zip(results).filter(|(call, _)| ids.insert(call.id.as_str()));
        for (call, (result, terminating)) in firsts {
            if let Some(result) = result {
                carried.ran.insert(call.id.clone(), result);
                if terminating {
                    carried.terminating.insert(call.id.clone());
                }
            }
        }
        progress.messages.push(Message::Assistant(message));
        progress.turn_tools = turn_tools;
        return match outcome.returned.is_empty() {
            true => NextStep::Interrupt(outcome.interruptions),
            false => NextStep::Return(outcome.returned),
        };
    }
    // What was kept for this batch is spent: it has run.
    progress.decided.clear();
    *carried = CarriedOver::default();
    // Calls that no result answers (a cancelled batch) leave the transcript, so
    // it stays replayable.
    let mut answered = outcome.results.iter().map(Option::is_some);
    message.tool_calls.retain(|_| answered.next().unwrap_or(false));
    if !message.tool_calls.is_empty() || !message.content.is_empty() {
        progress.messages.push(Message::Assistant(message));
    }
    let results: Vec<ToolResultMessage> = outcome.results.into_iter().flatten().collect();
    // The first handoff that ran (the batch let only one run).
    let handoff = results.iter().find(|r| !r.is_error && run.agent().handoffs.contains_key(&r.name)).cloned();
    progress.messages.extend(results.into_iter().map(Message::Tool));
    if outcome.cancelled {
        NextStep::End(Ending::Cancelled)
    } else if let Some(error) = outcome.hook_failure.or(outcome.fatal) {
        NextStep::End(Ending::Failed(error))
    } else if outcome.terminate {
        NextStep::End(Ending::Terminated)
    } else if let Some(call) = handoff {
        NextStep::Handoff { call_id: call.tool_call_id.clone(), tool: call.name.clone() }
    } else {
        NextStep::RunAgain
    }
}

/// A batch that does not run, its run ended first: the calls that ran before
/// the run stopped keep their place and results in the transcript, and the
/// others leave it.
pub(crate) fn abandon(progress: &mut RunProgress, mut message: AssistantMessage, carried: &mut CarriedOver) {
    let mut results = Vec::new();
    message.tool_calls.retain(|call| match carried.take_ran(&call.id) {
        Some((result, _)) => {
            results.push(Message::Tool(result));
            true
        }
        None => false,
    });
    if !message.tool_calls.is_empty() {
        progress.messages.push(Message::Assistant(message));
        progress.messages.extend(results);
    }
}
