//! The run loop: request, stream, validate and execute the batch, record results,
//! repeat until the model answers, a batch terminates, or a bound is reached.

use std::any::Any;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use super::batch::{self, BatchContext};
use super::events::{self, EventEmitter, EventKind, EventSink};
use super::handle::{Run, RunShared};
use super::{Agent, RunResult, RunStatus};
use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Message, StopReason, Usage};
use crate::provider::{Delta, DeltaSink, GenerationRequest};
use crate::BoxFuture;

/// Run serial numbers start at 1 (0 means "no run" to [`super::CallbackScope`]).
static NEXT_RUN_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Starts a run task on the runtime and returns the host's handle.
pub(crate) fn start(agent: Agent, messages: Vec<Message>, sink: Option<Box<dyn EventSink>>) -> Run {
    let serial = NEXT_RUN_SERIAL.fetch_add(1, Ordering::Relaxed);
    let id: Arc<str> = format!("run-{serial}").into();
    let shared = Arc::new(RunShared::new(id.clone(), serial));
    let (events, dispatcher) = events::channel(id, serial, sink);
    let runtime = crate::runtime::get();
    let dispatcher = dispatcher.map(|d| runtime.spawn(d));
    let run = RunLoop {
        open_turn: Arc::new(AtomicU32::new(0)),
        agent,
        serial,
        cancel: shared.cancel.clone(),
        events,
        messages,
        usage: Usage::default(),
        rounds: 0,
        final_message: None,
        disclosed: HashSet::new(),
    };
    runtime.spawn(supervise(run, dispatcher, shared.clone()));
    Run::new(shared)
}

/// Runs the loop in its own task so a panic in it still ends the run with one
/// `failed` run_end; then waits for the event dispatcher and publishes the result.
async fn supervise(run: RunLoop, dispatcher: Option<tokio::task::JoinHandle<()>>, shared: Arc<RunShared>) {
    let events = run.events.clone();
    let input = run.messages.clone();
    let open_turn = run.open_turn.clone();
    let result = match tokio::spawn(run.drive()).await {
        Ok(result) => result,
        Err(join_error) => {
            // Keep turns balanced for the host even though the loop died mid-turn.
            match open_turn.load(Ordering::Relaxed) {
                0 => {}
                turn => events.emit(EventKind::TurnEnd { turn }).await,
            }
            panic_result(input, join_error)
        }
    };
    let result = Arc::new(result);
    events
        .emit(EventKind::RunEnd { status: result.status, result: result.clone(), error: result.error.clone() })
        .await;
    drop(events);
    if let Some(dispatcher) = dispatcher {
        let _ = dispatcher.await;
    }
    shared.finish(result);
}

/// The result of a run whose loop panicked: failed, with the input transcript.
fn panic_result(input: Vec<Message>, join_error: tokio::task::JoinError) -> RunResult {
    let text = match join_error.try_into_panic() {
        Ok(payload) => panic_text(payload),
        Err(_) => "the run task was stopped".to_owned(),
    };
    RunResult {
        status: RunStatus::Failed,
        final_message: None,
        messages: input,
        usage: Usage::default(),
        rounds: 0,
        error: Some(Error::new(ErrorCode::Panic, format!("ferrule panicked during the run: {text}"))),
    }
}

fn panic_text(payload: Box<dyn Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".to_owned())
}

/// The state of one run.
struct RunLoop {
    /// The turn between its turn_start and turn_end events, or 0.
    open_turn: Arc<AtomicU32>,
    agent: Agent,
    serial: u64,
    cancel: tokio_util::sync::CancellationToken,
    events: EventEmitter,
    messages: Vec<Message>,
    usage: Usage,
    rounds: u32,
    final_message: Option<AssistantMessage>,
    /// Deferred tools disclosed by an earlier result in this run.
    disclosed: HashSet<String>,
}

impl RunLoop {
    async fn drive(mut self) -> RunResult {
        self.events.emit(EventKind::RunStart).await;
        let max_rounds = self.agent.inner.config.max_rounds;
        for turn in 1..=max_rounds {
            if self.cancel.is_cancelled() {
                return self.finish(RunStatus::Cancelled, None);
            }
            self.events.emit(EventKind::TurnStart { turn }).await;
            self.open_turn.store(turn, Ordering::Relaxed);
            let ended = self.round(turn).await;
            self.open_turn.store(0, Ordering::Relaxed);
            self.events.emit(EventKind::TurnEnd { turn }).await;
            if let Some((status, error)) = ended {
                return self.finish(status, error);
            }
        }
        self.finish(RunStatus::MaxRounds, None)
    }

    /// One model request and its batch; `Some` when the run ends with it.
    async fn round(&mut self, turn: u32) -> Option<(RunStatus, Option<Error>)> {
        let agent = self.agent.clone();
        let inner = &agent.inner;
        self.rounds = turn;
        let visible: Vec<_> = inner
            .definitions
            .iter()
            .zip(&inner.tools)
            .filter(|(_, tool)| !tool.options().deferred || self.disclosed.contains(tool.name()))
            .map(|(definition, _)| definition)
            .collect();
        let request = GenerationRequest {
            turn,
            system: inner.config.system.as_deref(),
            messages: &self.messages,
            tools: &visible,
            tool_choice: &inner.config.tool_choice,
        };
        let mut deltas = TurnDeltas { events: &self.events, turn };
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Some((RunStatus::Cancelled, None)),
            response = inner.generator.generate(request, &mut deltas) => response,
        };
        let mut message = match response {
            Ok(message) => message,
            Err(error) => return Some((RunStatus::Failed, Some(error))),
        };
        self.usage.add(&message.usage);

        if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            // Calls of a failed response are never executed, and are not kept:
            // nothing would answer them.
            message.tool_calls.clear();
            self.record_message(turn, message).await;
            let error = Error::new(
                ErrorCode::ProviderServer,
                "the model's response ended in an error, so its tool calls were not executed",
            );
            return Some((RunStatus::Failed, Some(error)));
        }

        let calls = message.tool_calls.clone();
        let length_stopped = message.stop_reason == StopReason::Length;
        self.record_message(turn, message).await;
        if calls.is_empty() {
            return Some((RunStatus::Completed, None));
        }

        let context = BatchContext {
            agent: inner,
            events: &self.events,
            cancel: &self.cancel,
            run_serial: self.serial,
            disclosed: &self.disclosed,
        };
        let outcome = batch::execute(&context, &calls, length_stopped).await;
        if outcome.results.iter().any(Option::is_none) {
            self.drop_unanswered_calls(&outcome.results);
        }
        for added in &outcome.added_tools {
            if inner.tool(added).is_some_and(|(_, tool)| tool.options().deferred) {
                self.disclosed.insert(added.clone());
            }
        }
        let terminate = outcome.terminate;
        self.messages.extend(outcome.results.into_iter().flatten().map(Message::Tool));

        if outcome.cancelled {
            Some((RunStatus::Cancelled, None))
        } else if let Some(error) = outcome.fatal {
            Some((RunStatus::Failed, Some(error)))
        } else if terminate {
            Some((RunStatus::Terminated, None))
        } else {
            None
        }
    }

    async fn record_message(&mut self, turn: u32, message: AssistantMessage) {
        if self.events.is_enabled() {
            self.events.emit(EventKind::MessageEnd { turn, message: message.clone() }).await;
        }
        self.final_message = Some(message.clone());
        self.messages.push(Message::Assistant(message));
    }

    /// Removes calls that no result answers (a cancelled batch) from the last
    /// assistant message, so the transcript stays replayable.
    fn drop_unanswered_calls(&mut self, results: &[Option<crate::message::ToolResultMessage>]) {
        let Some(Message::Assistant(message)) = self.messages.last_mut() else { return };
        let mut answered = results.iter().map(Option::is_some);
        message.tool_calls.retain(|_| answered.next().unwrap_or(false));
        if message.tool_calls.is_empty() && message.content.is_empty() {
            self.messages.pop();
        }
    }

    fn finish(self, status: RunStatus, error: Option<Error>) -> RunResult {
        RunResult {
            status,
            final_message: self.final_message.map(Message::Assistant),
            messages: self.messages,
            usage: self.usage,
            rounds: self.rounds,
            error,
        }
    }
}

/// Forwards a turn's streamed deltas as events.
struct TurnDeltas<'a> {
    events: &'a EventEmitter,
    turn: u32,
}

impl DeltaSink for TurnDeltas<'_> {
    fn send(&mut self, delta: Delta) -> BoxFuture<'_, ()> {
        let turn = self.turn;
        let events = self.events;
        Box::pin(async move {
            if !events.is_enabled() {
                return;
            }
            let kind = match delta {
                Delta::Text(text) => EventKind::MessageDelta { turn, text: Some(text), thinking: None },
                Delta::Thinking(thinking) => EventKind::MessageDelta { turn, text: None, thinking: Some(thinking) },
                Delta::ToolCall { index, id, name, arguments } => {
                    EventKind::ToolCallDelta { turn, index, id, name, arguments_delta: arguments }
                }
            };
            events.emit(kind).await;
        })
    }
}
