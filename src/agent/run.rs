//! The run loop: request, stream, validate and execute the batch, record results,
//! repeat until the model answers, a batch terminates, or a bound is reached.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::approval::{Approvals, Interruption};
use super::batch::{self, BatchContext};
use futures_util::FutureExt;

use super::events::{self, EventEmitter, EventKind, EventSink};
use super::handle::{Run, RunShared};
use super::state::{Interrupted, RunState};
use super::{Agent, RunResult, RunStatus};
use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Message, StopReason, Usage, UserMessage};
use crate::provider::{Delta, DeltaSink, GenerationRequest, WireCache};
use crate::runtime::{CallbackKind, CallbackScope, Threads};
use crate::BoxFuture;

/// Run serial numbers start at 1 (0 means "no run" to the callback scope).
static NEXT_RUN_SERIAL: AtomicU64 = AtomicU64::new(1);

/// Where a run begins: a fresh transcript, or what an interrupted run left.
pub(crate) struct RunOrigin {
    /// The transcript before anything this run does.
    pub(crate) messages: Vec<Message>,
    /// How many of `messages` were the (first) run's input.
    pub(crate) input_len: usize,
    /// An assistant message whose calls run as the first batch, before any model
    /// request: an execute-only run's, or the one an interrupted run waits on.
    pub(crate) pending: Option<AssistantMessage>,
    /// The run ends after the pending batch.
    pub(crate) execute_only: bool,
    /// Model requests already made.
    pub(crate) rounds: u32,
    pub(crate) usage: Usage,
    pub(crate) output_corrections: u32,
    pub(crate) disclosed: HashSet<String>,
    pub(crate) approvals: Approvals,
}

impl RunOrigin {
    /// A run that starts from `messages`; with `execute`, an execute-only run.
    pub(crate) fn fresh(messages: Vec<Message>, execute: Option<AssistantMessage>) -> Self {
        RunOrigin {
            input_len: messages.len(),
            messages,
            execute_only: execute.is_some(),
            pending: execute,
            rounds: 0,
            usage: Usage::default(),
            output_corrections: 0,
            disclosed: HashSet::new(),
            approvals: Approvals::default(),
        }
    }
}

/// Starts a run task on ferrule's runtime and returns the host's handle.
pub(crate) fn start(
    threads: &'static Threads,
    agent: Agent,
    origin: RunOrigin,
    sink: Option<Box<dyn EventSink>>,
) -> Run {
    let serial = NEXT_RUN_SERIAL.fetch_add(1, Ordering::Relaxed);
    let id: Arc<str> = format!("run-{serial}").into();
    let shared = Arc::new(RunShared::new(id.clone(), serial));
    let (events, dispatcher) = events::channel(id, serial, sink, threads.events);
    let dispatcher = dispatcher.map(|d| threads.runtime.spawn(d));
    let run = RunLoop {
        open_turn: 0,
        agent,
        serial,
        cancel: shared.cancel.clone(),
        events,
        messages: origin.messages,
        wire: WireCache::default(),
        usage: origin.usage,
        rounds: origin.rounds,
        input_len: origin.input_len,
        disclosed: origin.disclosed,
        pending: origin.pending,
        execute_only: origin.execute_only,
        approvals: origin.approvals,
        interruptions: Vec::new(),
        timed_out: Arc::default(),
        output: None,
        output_corrections: origin.output_corrections,
    };
    threads.runtime.spawn(supervise(run, dispatcher, shared.clone(), threads));
    Run::new(shared)
}

/// Runs the loop with its panics caught, so a panic still ends the run with one
/// `failed` run_end (keeping the transcript so far). Then, in this order: the
/// event dispatcher delivers run_end and drops the sink; the run lets go of its
/// agent (when that was the last hold, the tools' user data is released on a
/// callback thread, inside this run's scope); the result is published, which wakes
/// every waiter. So when a wait returns, nothing of the run calls the host again.
async fn supervise(
    mut run: RunLoop,
    dispatcher: Option<tokio::task::JoinHandle<()>>,
    shared: Arc<RunShared>,
    threads: &'static Threads,
) {
    let deadline = RunDeadline::start(run.agent.inner.config.run_timeout_ms, &run.cancel, &run.timed_out);
    let ended = AssertUnwindSafe(run.drive()).catch_unwind().await;
    let timed_out = deadline.is_some_and(RunDeadline::finish);
    let (status, error) = match ended {
        // The deadline's cancellation ended the run (not a finish just before it).
        Ok((RunStatus::Cancelled, _)) if timed_out => {
            let ms = run.agent.inner.config.run_timeout_ms;
            (RunStatus::Failed, Some(Error::new(ErrorCode::Timeout, format!("the run took longer than its {ms} ms"))))
        }
        Ok(ending) => ending,
        Err(payload) => {
            // Keep turns balanced for the host even though the loop died mid-turn.
            if run.open_turn != 0 {
                run.events.emit(EventKind::TurnEnd { turn: run.open_turn }).await;
            }
            let text = crate::panic::describe(payload.as_ref());
            (RunStatus::Failed, Some(Error::new(ErrorCode::Panic, format!("ferrule panicked during the run: {text}"))))
        }
    };
    let events = run.events.clone();
    let serial = run.serial;
    let (result, agent) = run.finish(status, error);
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

/// A run's `run_timeout_ms`: a timer that cancels the run at the deadline (which
/// abandons a model request and cancels running tools), and says afterwards
/// whether it was the one that ended it.
struct RunDeadline {
    fired: Arc<std::sync::atomic::AtomicBool>,
    timer: tokio::task::JoinHandle<()>,
}

impl RunDeadline {
    /// `None` without a timeout. `fired` is set when the deadline passes.
    fn start(
        timeout_ms: u64,
        cancel: &tokio_util::sync::CancellationToken,
        fired: &Arc<std::sync::atomic::AtomicBool>,
    ) -> Option<Self> {
        if timeout_ms == 0 {
            return None;
        }
        let fired = fired.clone();
        let (flag, cancel) = (fired.clone(), cancel.clone());
        let timer = tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(timeout_ms)) => {
                    flag.store(true, Ordering::SeqCst);
                    cancel.cancel();
                }
                // Cancelled by the host first: the deadline no longer matters.
                _ = cancel.cancelled() => {}
            }
        });
        Some(RunDeadline { fired, timer })
    }

    /// Stops the timer; whether the deadline had passed.
    fn finish(self) -> bool {
        self.timer.abort();
        self.fired.load(Ordering::SeqCst)
    }
}

/// The state of one run.
struct RunLoop {
    /// The turn between its turn_start and turn_end events, or 0.
    open_turn: u32,
    agent: Agent,
    serial: u64,
    cancel: tokio_util::sync::CancellationToken,
    events: EventEmitter,
    messages: Vec<Message>,
    /// The transcript as the provider's wire has it so far; `messages` only grows.
    wire: WireCache,
    usage: Usage,
    rounds: u32,
    /// Messages that came with the input; the rest this run produced.
    input_len: usize,
    /// Deferred tools disclosed by an earlier result in this run.
    disclosed: HashSet<String>,
    /// The assistant message whose batch runs first, until it runs.
    pending: Option<AssistantMessage>,
    /// The run ends after the pending batch.
    execute_only: bool,
    /// Decisions on calls that need approval.
    approvals: Approvals,
    /// The calls the run stopped for, when it was interrupted.
    interruptions: Vec<Interruption>,
    /// Set when the run's deadline (`run_timeout_ms`) cancelled it.
    timed_out: Arc<std::sync::atomic::AtomicBool>,
    /// The final answer as JSON, once it satisfied the output schema.
    output: Option<serde_json::Value>,
    /// Answers sent back for not satisfying the output schema.
    output_corrections: u32,
}

impl RunLoop {
    /// The loop; returns how the run ended.
    async fn drive(&mut self) -> (RunStatus, Option<Error>) {
        self.events.emit(EventKind::RunStart).await;
        if let Some(message) = self.pending.take() {
            // An execute-only run's message, or the batch an interrupted run
            // waits on: it runs before any model request, outside any turn.
            if self.cancel.is_cancelled() {
                return (RunStatus::Cancelled, None);
            }
            let ended = self.run_batch(message, false).await;
            if !matches!(ended, Some((RunStatus::Interrupted, _))) {
                // An interrupted batch keeps its decisions for the state.
                self.approvals.settle();
            }
            if let Some(ending) = ended {
                return ending;
            }
            if self.execute_only {
                return (RunStatus::Completed, None);
            }
        }
        let max_rounds = self.agent.inner.config.max_rounds;
        // Turns continue the count of a resumed run (and so does the scripted model).
        let Some(first_turn) = self.rounds.checked_add(1) else { return (RunStatus::MaxRounds, None) };
        for turn in first_turn..=max_rounds {
            if self.cancel.is_cancelled() {
                return (RunStatus::Cancelled, None);
            }
            self.events.emit(EventKind::TurnStart { turn }).await;
            self.open_turn = turn;
            let ended = self.round(turn).await;
            self.open_turn = 0;
            self.events.emit(EventKind::TurnEnd { turn }).await;
            if let Some(ending) = ended {
                return ending;
            }
        }
        (RunStatus::MaxRounds, None)
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
            output_schema: inner.config.output_schema.as_ref(),
        };
        let mut deltas = TurnDeltas { events: &self.events, turn };
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Some((RunStatus::Cancelled, None)),
            response = inner.generator.generate(request, &mut self.wire, &mut deltas) => response,
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
            self.announce(turn, &message).await;
            self.messages.push(Message::Assistant(message));
            let error = Error::new(
                ErrorCode::ProviderServer,
                "the model's response ended in an error, so its tool calls were not executed",
            );
            return Some((RunStatus::Failed, Some(error)));
        }

        let length_stopped = message.stop_reason == StopReason::Length;
        self.announce(turn, &message).await;
        if message.tool_calls.is_empty() {
            return self.conclude(message);
        }
        self.run_batch(message, length_stopped).await
    }

    /// Validates and executes `message`'s calls as one batch and records the
    /// message and the results; `Some` when the run ends with the batch.
    async fn run_batch(
        &mut self,
        mut message: AssistantMessage,
        length_stopped: bool,
    ) -> Option<(RunStatus, Option<Error>)> {
        let agent = self.agent.clone();
        let inner = &agent.inner;
        let context = BatchContext {
            agent: inner,
            events: &self.events,
            cancel: &self.cancel,
            run_serial: self.serial,
            disclosed: &self.disclosed,
            timed_out: &self.timed_out,
            approvals: &self.approvals,
        };
        let outcome = batch::execute(&context, &message.tool_calls, length_stopped).await;
        if !outcome.interruptions.is_empty() {
            // Nothing of the batch ran: the message waits, whole, for decisions.
            self.messages.push(Message::Assistant(message));
            self.interruptions = outcome.interruptions;
            return Some((RunStatus::Interrupted, None));
        }
        for added in &outcome.added_tools {
            if inner.tool(added).is_some_and(|(_, tool)| tool.options().deferred) {
                self.disclosed.insert(added.clone());
            }
        }
        // Calls that no result answers (a cancelled batch) leave the transcript,
        // so it stays replayable.
        let mut answered = outcome.results.iter().map(Option::is_some);
        message.tool_calls.retain(|_| answered.next().unwrap_or(false));
        if !message.tool_calls.is_empty() || !message.content.is_empty() {
            self.messages.push(Message::Assistant(message));
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

    /// A final answer. With an `output_schema` it must be JSON that satisfies it;
    /// one that does not goes back to the model, with what is wrong, while
    /// `output_retries` last (`None`: the loop goes on), and then fails the run.
    fn conclude(&mut self, message: AssistantMessage) -> Option<(RunStatus, Option<Error>)> {
        let agent = self.agent.clone();
        let text = crate::message::text_of(&message.content);
        self.messages.push(Message::Assistant(message));
        let Some(schema) = &agent.inner.output else { return Some((RunStatus::Completed, None)) };
        let checked = output_json(&text).and_then(|value| schema.validate(&value).map(|()| value));
        let retries = agent.inner.config.output_retries;
        match checked {
            Ok(value) => {
                self.output = Some(value);
                Some((RunStatus::Completed, None))
            }
            Err(wrong) if self.output_corrections < retries => {
                self.output_corrections += 1;
                let correction = format!(
                    "Your answer must be JSON that satisfies the output schema, and it is not: {wrong}. \
                     Answer again with that JSON only."
                );
                self.messages.push(Message::User(UserMessage::text(correction)));
                None
            }
            Err(wrong) => Some((
                RunStatus::Failed,
                Some(Error::new(
                    ErrorCode::InvalidOutput,
                    format!("the final answer does not satisfy output_schema after {retries} correction(s): {wrong}"),
                )),
            )),
        }
    }

    /// Emits `message_end` for a complete assistant message.
    async fn announce(&self, turn: u32, message: &AssistantMessage) {
        if self.events.is_enabled() {
            self.events.emit(EventKind::MessageEnd { turn, message: message.clone() }).await;
        }
    }

    /// The run result, and the agent the run no longer needs.
    fn finish(self, status: RunStatus, error: Option<Error>) -> (RunResult, Agent) {
        let final_message =
            self.messages[self.input_len..].iter().rev().find(|m| matches!(m, Message::Assistant(_))).cloned();
        let state = (status == RunStatus::Interrupted).then(|| {
            RunState::capture(Interrupted {
                messages: &self.messages,
                input_messages: self.input_len,
                rounds: self.rounds,
                usage: self.usage,
                output_corrections: self.output_corrections,
                disclosed: &self.disclosed,
                approvals: &self.approvals,
                interruptions: &self.interruptions,
                execute_only: self.execute_only,
            })
        });
        let result = RunResult {
            status,
            final_message,
            messages: self.messages,
            usage: self.usage,
            rounds: self.rounds,
            error,
            output: self.output,
            interruptions: self.interruptions,
            state,
        };
        (result, self.agent)
    }
}

/// The final answer's text as JSON: the text itself, or the inside of one
/// Markdown code fence around it (models without native structured output often
/// add one). Repeated keys are refused, as in tool arguments.
fn output_json(text: &str) -> Result<serde_json::Value, String> {
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
        .map(|fenced| fenced.trim_start_matches(|c: char| c.is_ascii_alphanumeric()).trim())
        .unwrap_or(trimmed);
    crate::json::parse_unique(inner).map_err(|e| format!("it is not JSON ({e})"))
}

/// Forwards a turn's streamed deltas as events.
struct TurnDeltas<'a> {
    events: &'a EventEmitter,
    turn: u32,
}

impl DeltaSink for TurnDeltas<'_> {
    fn retry<'a>(&'a mut self, attempt: u32, error: &'a Error, delay: std::time::Duration) -> BoxFuture<'a, ()> {
        Box::pin(self.events.emit(EventKind::Retry {
            attempt,
            error: error.clone(),
            delay_ms: delay.as_millis() as u64,
        }))
    }

    fn send<'a>(&'a mut self, delta: Delta<'a>) -> BoxFuture<'a, ()> {
        let turn = self.turn;
        let events = self.events;
        Box::pin(async move {
            if !events.is_enabled() {
                return;
            }
            let kind = match delta {
                Delta::Text(text) => EventKind::MessageDelta { turn, text: Some(text.to_owned()), thinking: None },
                Delta::Thinking(thinking) => {
                    EventKind::MessageDelta { turn, text: None, thinking: Some(thinking.to_owned()) }
                }
                Delta::ToolCall { index, id, name, arguments } => EventKind::ToolCallDelta {
                    turn,
                    index,
                    id: id.map(str::to_owned),
                    name: name.map(str::to_owned),
                    arguments_delta: arguments.to_owned(),
                },
            };
            events.emit(kind).await;
        })
    }
}
