//! One turn: the injected messages enter, the `turn_start` hooks are consulted,
//! the model is asked with the tools the turn offers (and the history the budget
//! keeps), and its response becomes the final answer or a batch.

use super::batch::ResponseEnd;
use super::batch_step::{run_batch, Batch};
use super::context::RunContext;
use super::event::EventKind;
use super::final_answer::{self, FinalAnswer};
use super::hook_stages;
use super::model_request;
use super::next_step::{Ending, NextStep};
use super::progress::RunProgress;
use super::request_caches::RequestCaches;
use super::state::CarriedOver;
use super::tool_scope::ToolScope;
use super::tool_set::ToolSet;
use crate::error::{Error, ErrorCode};
use crate::message::{Message, StopReason};
use crate::provider::{GenerationRequest, ToolChoice, WireCache};

/// Runs turn `turn` (from 1) of a run, between its turn events, with the tools
/// of `tools`; what a batch that stops for an agent's approval carries over
/// goes into `carried`.
pub(crate) async fn turn(
    run: &RunContext,
    tools: &ToolSet,
    progress: &mut RunProgress,
    carried: &mut CarriedOver,
    caches: &mut RequestCaches,
    answer: &mut FinalAnswer,
    turn: u32,
) -> NextStep {
    let agent = run.agent();
    progress.rounds = turn;
    run.admit_injections(&mut progress.messages).await;
    let offered = ToolScope { tools, run: progress.tools.as_ref(), turn: None, disclosed: &progress.disclosed }
        .offered()
        .map(|(_, tool)| tool.name().to_owned())
        .collect();
    let (effect, consulted) = hook_stages::turn_start(
        &run.hooks(),
        tools,
        progress.tools.as_ref(),
        turn,
        offered,
        &mut progress.messages,
        &mut caches.transcript_json,
    )
    .await;
    if effect.replaced {
        caches.forget();
        progress.input_messages = progress.input_messages.min(progress.messages.len());
    }
    // Injected messages stay, with their events, whatever a later hook did.
    let messages = &progress.messages;
    for message in &messages[messages.len() - effect.injected..] {
        run.events.emit(EventKind::MessageInjected { message: message.clone() }).await;
    }
    if let Err(stop) = consulted {
        return NextStep::End(stop.ending());
    }
    let turn_tools = effect.tools;

    let scope =
        ToolScope { tools, run: progress.tools.as_ref(), turn: turn_tools.as_deref(), disclosed: &progress.disclosed };
    let visible: Vec<_> = scope.offered().map(|(i, _)| tools.definition(i)).collect();
    let kept = caches.history.as_ref().and_then(|budget| {
        let fixed = agent.config.system.as_ref().map_or(0, String::len)
            + visible
                .iter()
                .map(|d| d.name.len() + d.description.len() + d.input_schema.to_string().len())
                .sum::<usize>();
        caches.transcript_json.sync(&progress.messages);
        budget.select(&progress.messages, &caches.transcript_json, fixed)
    });
    let compacted: Option<Vec<Message>> =
        kept.as_ref().map(|kept| kept.iter().map(|&i| progress.messages[i].clone()).collect());
    if let Some(compacted) = &compacted {
        let dropped = progress.messages.len() - compacted.len();
        if let Some(trace) = &run.trace {
            let attributes = vec![("ferrule.turn", turn.into()), ("ferrule.history.dropped", (dropped as u64).into())];
            trace.event("ferrule.history_compacted", attributes);
        }
        run.events.emit(EventKind::HistoryCompacted { turn, dropped }).await;
    }
    // A named tool that this turn does not offer cannot be forced.
    let tool_choice = match &agent.config.tool_choice {
        ToolChoice::Named(name) if !visible.iter().any(|d| &d.name == name) => &ToolChoice::Auto,
        choice => choice,
    };
    let request = GenerationRequest {
        turn,
        run_serial: run.serial,
        run_id: &run.id,
        system: agent.config.system.as_deref(),
        messages: compacted.as_deref().unwrap_or(&progress.messages),
        tools: &visible,
        tool_choice,
        output_schema: agent.config.output_schema.as_ref(),
        trace: None,
    };
    // A request that leaves messages out is not a prefix of the next one: it is
    // encoded on its own, and the next request anew.
    // The fresh wire cache lives in this block, so the turn's future does not
    // keep room for it while the batch runs.
    let generated = {
        let mut fresh_wire = WireCache::default();
        let wire = match compacted {
            Some(_) => {
                caches.wire = WireCache::default();
                &mut fresh_wire
            }
            None => &mut caches.wire,
        };
        // Boxed, as the batch is: a waiting run holds the room of the one under way.
        Box::pin(model_request::generate(run, request, wire, turn)).await
    };
    let mut message = match generated {
        Ok(message) => message,
        Err(ending) => return NextStep::End(ending),
    };
    if let Some(budget) = &mut caches.history {
        budget.reported(message.usage.input_tokens, &caches.transcript_json, kept.as_deref());
    }
    run.nesting.count(&mut progress.usage, &message.usage);

    let response = match message.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            // Calls of a failed response are never executed, and are not kept:
            // nothing would answer them.
            message.tool_calls.clear();
            announce(run, turn, &message).await;
            progress.messages.push(Message::Assistant(message));
            let error = Error::new(
                ErrorCode::ProviderServer,
                "the model's response ended in an error, so its tool calls were not executed",
            );
            return NextStep::End(Ending::Failed(error));
        }
        StopReason::Length => ResponseEnd::OutputLimit,
        _ => ResponseEnd::Complete,
    };
    announce(run, turn, &message).await;
    if message.tool_calls.is_empty() {
        return final_answer::conclude(run, progress, answer, turn, message).await;
    }
    run_batch(run, tools, progress, carried, Batch { message, response, turn, turn_tools }).await
}

/// Emits `message_end` for a complete assistant message.
async fn announce(run: &RunContext, turn: u32, message: &crate::message::AssistantMessage) {
    if run.events.is_enabled() {
        run.events.emit(EventKind::MessageEnd { turn, message: message.clone() }).await;
    }
}
