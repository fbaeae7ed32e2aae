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
use super::history::HistoryBudget;
use super::hooks::{Flow, HookCaller, HookStop};
use super::state::{Interrupted, RunState};
use super::transcript_json::TranscriptJson;
use super::validation::ToolScope;
use super::AgentInner;
use super::{Agent, RunResult, RunStatus};
use crate::error::{Error, ErrorCode};
use crate::hook::{HookDecision, HookStage};
use crate::message::{AssistantMessage, Message, Origin, StopReason, Usage, UserMessage};
use crate::provider::{Delta, DeltaSink, GenerationRequest, ToolChoice, WireCache};
use crate::runtime::{CallbackKind, CallbackScope, Threads};
use crate::BoxFuture;
use serde_json::json;

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
    /// The run's tool set (run input `tools`); `None`: every tool of the agent.
    pub(crate) tools: Option<HashSet<String>>,
    /// Injected messages the transcript does not hold yet.
    pub(crate) injections: Vec<Message>,
    /// The tool set a `turn_start` hook chose for the pending batch's turn.
    pub(crate) pending_turn_tools: Option<Vec<String>>,
    /// The run goes on from an interrupted one (its `run_start` hooks ran then).
    pub(crate) resumed: bool,
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
            tools: None,
            injections: Vec::new(),
            pending_turn_tools: None,
            resumed: false,
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
    let shared = Arc::new(RunShared::new(id.clone(), serial, origin.injections));
    let (events, dispatcher) = events::channel(id.clone(), serial, sink, threads.events);
    let dispatcher = dispatcher.map(|d| threads.runtime.spawn(d));
    let history = agent.inner.config.history.map(HistoryBudget::new);
    let run = RunLoop {
        open_turn: 0,
        history,
        transcript_json: TranscriptJson::default(),
        agent,
        shared: shared.clone(),
        id,
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
        tools: origin.tools,
        interruptions: Vec::new(),
        waiting_injections: Vec::new(),
        final_withheld: false,
        pending_turn_tools: origin.pending_turn_tools,
        resumed: origin.resumed,
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
    let late_injections = run.shared.take_injections(true);
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
    if status == RunStatus::Interrupted {
        // They wait in the state, for the resumed run's next request.
        run.waiting_injections = late_injections;
    } else {
        // Nothing is lost: they end the transcript.
        for message in late_injections {
            run.events.emit(EventKind::MessageInjected { message: message.clone() }).await;
            run.messages.push(message);
        }
    }
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
    /// What the host's handles share: injections arrive here.
    shared: Arc<RunShared>,
    id: Arc<str>,
    serial: u64,
    cancel: tokio_util::sync::CancellationToken,
    events: EventEmitter,
    messages: Vec<Message>,
    /// The transcript as the provider's wire has it so far; `messages` only grows.
    wire: WireCache,
    /// The history budget, when the agent has one.
    history: Option<HistoryBudget>,
    /// The transcript as JSON, for hook payloads and the history budget.
    transcript_json: TranscriptJson,
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
    /// The run's tool set (run input `tools`); `None`: every tool of the agent.
    tools: Option<HashSet<String>>,
    /// The calls the run stopped for, when it was interrupted.
    interruptions: Vec<Interruption>,
    /// Injected messages an interrupted run keeps in its state.
    waiting_injections: Vec<Message>,
    /// A `final_answer` hook stopped the run: it has no `final`.
    final_withheld: bool,
    /// The tool set a `turn_start` hook chose for the turn of the batch that
    /// runs first, or that the run was interrupted for.
    pending_turn_tools: Option<Vec<String>>,
    /// The run goes on from an interrupted one.
    resumed: bool,
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
        // A resumed run's run_start hooks ran when it started.
        if let Err(stop) = if self.resumed { Ok(()) } else { self.consult_run_start_hooks().await } {
            return stop.ending();
        }
        if let Some(message) = self.pending.take() {
            // An execute-only run's message, or the batch an interrupted run
            // waits on: it runs before any model request, outside any turn.
            if self.cancel.is_cancelled() {
                return (RunStatus::Cancelled, None);
            }
            let turn = if self.execute_only { 0 } else { self.rounds };
            let turn_tools = self.pending_turn_tools.take();
            let ended = self.run_batch(message, false, turn, turn_tools.as_deref()).await;
            if matches!(ended, Some((RunStatus::Interrupted, _))) {
                self.pending_turn_tools = turn_tools;
            }
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
        self.take_injections(false).await;
        let turn_tools = match self.consult_turn_start_hooks(turn).await {
            Ok(turn_tools) => turn_tools,
            Err(stop) => return Some(stop.ending()),
        };
        let scope = ToolScope { run: self.tools.as_ref(), turn: turn_tools.as_deref(), disclosed: &self.disclosed };
        let visible: Vec<_> = inner
            .definitions
            .iter()
            .zip(&inner.tools)
            .filter(|(_, tool)| scope.offers(tool))
            .map(|(definition, _)| definition)
            .collect();
        let kept = self.history.as_ref().and_then(|budget| {
            let fixed = inner.config.system.as_ref().map_or(0, String::len)
                + visible
                    .iter()
                    .map(|d| d.name.len() + d.description.len() + d.input_schema.to_string().len())
                    .sum::<usize>();
            self.transcript_json.sync(&self.messages);
            budget.select(&self.messages, &self.transcript_json, fixed)
        });
        let compacted: Option<Vec<Message>> =
            kept.as_ref().map(|kept| kept.iter().map(|&i| self.messages[i].clone()).collect());
        if let Some(compacted) = &compacted {
            let dropped = self.messages.len() - compacted.len();
            self.events.emit(EventKind::HistoryCompacted { turn, dropped }).await;
        }
        // A named tool that this turn does not offer cannot be forced.
        let tool_choice = match &inner.config.tool_choice {
            ToolChoice::Named(name) if !visible.iter().any(|d| &d.name == name) => &ToolChoice::Auto,
            choice => choice,
        };
        let request = GenerationRequest {
            turn,
            system: inner.config.system.as_deref(),
            messages: compacted.as_deref().unwrap_or(&self.messages),
            tools: &visible,
            tool_choice,
            output_schema: inner.config.output_schema.as_ref(),
        };
        // A request that leaves messages out is not a prefix of the next one:
        // it is encoded on its own, and the next request anew.
        let mut fresh_wire = WireCache::default();
        let wire = match compacted {
            Some(_) => {
                self.wire = WireCache::default();
                &mut fresh_wire
            }
            None => &mut self.wire,
        };
        let mut deltas = TurnDeltas { events: &self.events, turn };
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Some((RunStatus::Cancelled, None)),
            response = inner.generator.generate(request, wire, &mut deltas) => response,
        };
        let mut message = match response {
            Ok(message) => message,
            Err(error) => return Some((RunStatus::Failed, Some(error))),
        };
        if let Some(budget) = &mut self.history {
            budget.reported(message.usage.input_tokens, &self.transcript_json, kept.as_deref());
        }
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
            return self.conclude(turn, message).await;
        }
        let ended = self.run_batch(message, length_stopped, turn, turn_tools.as_deref()).await;
        if matches!(ended, Some((RunStatus::Interrupted, _))) {
            self.pending_turn_tools = turn_tools;
        }
        ended
    }

    /// Validates and executes `message`'s calls as one batch and records the
    /// message and the results; `Some` when the run ends with the batch.
    /// `turn` is the round (0 outside any), `turn_tools` the set a `turn_start`
    /// hook chose for it.
    async fn run_batch(
        &mut self,
        mut message: AssistantMessage,
        length_stopped: bool,
        turn: u32,
        turn_tools: Option<&[String]>,
    ) -> Option<(RunStatus, Option<Error>)> {
        let agent = self.agent.clone();
        let inner = &agent.inner;
        let hooks = hook_caller(inner, &self.id, self.serial, &self.cancel);
        let context = BatchContext {
            agent: inner,
            events: &self.events,
            cancel: &self.cancel,
            run_serial: self.serial,
            scope: ToolScope { run: self.tools.as_ref(), turn: turn_tools, disclosed: &self.disclosed },
            turn,
            hooks: &hooks,
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
        } else if let Some(error) = outcome.hook_failure {
            Some((RunStatus::Failed, Some(error)))
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
    /// Then the `final_answer` hooks may send it back with feedback.
    async fn conclude(&mut self, turn: u32, message: AssistantMessage) -> Option<(RunStatus, Option<Error>)> {
        let agent = self.agent.clone();
        let text = crate::message::text_of(&message.content);
        self.messages.push(Message::Assistant(message));
        if self.shared.has_injections() {
            // The model has not seen them yet: one more request answers them.
            return None;
        }
        if let Some(schema) = &agent.inner.output {
            let checked = output_json(&text).and_then(|value| schema.validate(&value).map(|()| value));
            let retries = agent.inner.config.output_retries;
            match checked {
                Ok(value) => self.output = Some(value),
                Err(wrong) if self.output_corrections < retries => {
                    self.output_corrections += 1;
                    let correction = format!(
                        "Your answer must be JSON that satisfies the output schema, and it is not: {wrong}. \
                         Answer again with that JSON only."
                    );
                    self.messages.push(Message::User(UserMessage::text(correction)));
                    return None;
                }
                Err(wrong) => {
                    let message = format!(
                        "the final answer does not satisfy output_schema after {retries} correction(s): {wrong}"
                    );
                    return Some((RunStatus::Failed, Some(Error::new(ErrorCode::InvalidOutput, message))));
                }
            }
        }
        match self.consult_final_answer_hooks(turn).await {
            // Injected while the hooks decided: the model answers them too.
            Ok(None) if self.shared.has_injections() => {
                self.output = None;
                None
            }
            Ok(None) => Some((RunStatus::Completed, None)),
            Ok(Some(feedback)) => {
                self.output = None;
                self.messages.push(Message::User(UserMessage::text(feedback)));
                None
            }
            Err(stop) => {
                // An answer the hooks did not let through is not the run's, and
                // neither is one they sent back before: the run has no final answer.
                self.messages.pop();
                self.output = None;
                self.final_withheld = true;
                Some(stop.ending())
            }
        }
    }

    /// Moves the injected messages into the transcript, each with its event;
    /// with `last`, the run takes no more.
    async fn take_injections(&mut self, last: bool) {
        for message in self.shared.take_injections(last) {
            self.events.emit(EventKind::MessageInjected { message: message.clone() }).await;
            self.messages.push(message);
        }
    }

    /// The `run_start` hooks: they may replace the input.
    async fn consult_run_start_hooks(&mut self) -> Result<(), HookStop> {
        let agent = self.agent.clone();
        let hooks = hook_caller(&agent.inner, &self.id, self.serial, &self.cancel);
        if !hooks.wants(HookStage::RunStart) {
            return Ok(());
        }
        let payload = |messages: &Vec<Message>| json!({"messages": messages}).to_string();
        let apply = |messages: &mut Vec<Message>, decision: HookDecision| {
            if let HookDecision::Messages(replacement) = decision {
                *messages = checked_history(HookStage::RunStart, replacement)?;
            }
            Ok(Flow::Next)
        };
        hooks.consult(HookStage::RunStart, &mut self.messages, payload, apply).await?;
        self.input_len = self.messages.len();
        self.transcript_json.reset();
        Ok(())
    }

    /// The `turn_start` hooks: they may choose the turn's tools (returned),
    /// inject messages or replace the history.
    async fn consult_turn_start_hooks(&mut self, turn: u32) -> Result<Option<Vec<String>>, HookStop> {
        let agent = self.agent.clone();
        let inner = &agent.inner;
        let hooks = hook_caller(inner, &self.id, self.serial, &self.cancel);
        if !hooks.wants(HookStage::TurnStart) {
            return Ok(None);
        }
        let scope = ToolScope { run: self.tools.as_ref(), turn: None, disclosed: &self.disclosed };
        let offered: Vec<String> =
            inner.tools.iter().filter(|t| scope.offers(t)).map(|t| t.name().to_owned()).collect();
        self.transcript_json.sync(&self.messages);
        let mut turn_state = TurnStart {
            messages: &mut self.messages,
            json: &mut self.transcript_json,
            tools: offered,
            chosen: false,
            injected: 0,
            replaced: false,
        };
        let run_tools = self.tools.as_ref();
        let payload = |state: &TurnStart<'_>| {
            let tools = json!(state.tools);
            format!(r#"{{"turn":{turn},"messages":{},"tools":{tools}}}"#, state.json.array())
        };
        let apply = |state: &mut TurnStart<'_>, decision: HookDecision| {
            match decision {
                HookDecision::Tools(names) => {
                    let lacking = names.iter().find(|name| {
                        inner.tool(name).is_none() || run_tools.is_some_and(|run| !run.contains(name.as_str()))
                    });
                    if let Some(name) = lacking {
                        return Err(Error::invalid_arg(format!(
                            "a turn_start hook's tool set names \"{name}\", which this run does not have"
                        )));
                    }
                    let mut seen = HashSet::new();
                    state.tools = names.into_iter().filter(|name| seen.insert(name.clone())).collect();
                    state.chosen = true;
                }
                HookDecision::Inject(mut messages) => {
                    // All or nothing: every message is checked before any enters.
                    for message in &mut messages {
                        mark_injected(message).map_err(|problem| {
                            Error::invalid_arg(format!("a turn_start hook's decision \"inject\": {problem}"))
                        })?;
                    }
                    state.injected += messages.len();
                    state.messages.extend(messages);
                    state.json.sync(state.messages);
                }
                HookDecision::Messages(replacement) => {
                    *state.messages = checked_history(HookStage::TurnStart, replacement)?;
                    state.json.reset();
                    state.json.sync(state.messages);
                    state.replaced = true;
                    state.injected = 0;
                }
                _ => {}
            }
            Ok(Flow::Next)
        };
        let consulted = hooks.consult(HookStage::TurnStart, &mut turn_state, payload, apply).await;
        let TurnStart { tools, chosen, injected, replaced, .. } = turn_state;
        if replaced {
            // The transcript no longer grows from what was sent: encode it anew.
            self.wire = WireCache::default();
            if let Some(budget) = &mut self.history {
                budget.forget();
            }
            self.input_len = self.input_len.min(self.messages.len());
        }
        // Injected messages stay, with their events, whatever a later hook did.
        for message in &self.messages[self.messages.len() - injected..] {
            self.events.emit(EventKind::MessageInjected { message: message.clone() }).await;
        }
        consulted?;
        Ok(chosen.then_some(tools))
    }

    /// The `final_answer` hooks: the feedback of one that sends the answer back.
    async fn consult_final_answer_hooks(&mut self, turn: u32) -> Result<Option<String>, HookStop> {
        let agent = self.agent.clone();
        let hooks = hook_caller(&agent.inner, &self.id, self.serial, &self.cancel);
        if !hooks.wants(HookStage::FinalAnswer) {
            return Ok(None);
        }
        let Some(answer) = self.messages.last().cloned() else { return Ok(None) };
        let mut feedback = None;
        let payload = |_: &Option<String>| json!({"turn": turn, "message": answer}).to_string();
        let apply = |feedback: &mut Option<String>, decision: HookDecision| {
            if let HookDecision::Retry(text) = decision {
                *feedback = Some(text);
                return Ok(Flow::Stop);
            }
            Ok(Flow::Next)
        };
        hooks.consult(HookStage::FinalAnswer, &mut feedback, payload, apply).await?;
        Ok(feedback)
    }

    /// Emits `message_end` for a complete assistant message.
    async fn announce(&self, turn: u32, message: &AssistantMessage) {
        if self.events.is_enabled() {
            self.events.emit(EventKind::MessageEnd { turn, message: message.clone() }).await;
        }
    }

    /// The run result, and the agent the run no longer needs.
    fn finish(self, status: RunStatus, error: Option<Error>) -> (RunResult, Agent) {
        let final_message = match self.final_withheld {
            true => None,
            false => self.messages[self.input_len..].iter().rev().find(|m| matches!(m, Message::Assistant(_))).cloned(),
        };
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
                tools: self.tools.as_ref(),
                injections: &self.waiting_injections,
                turn_tools: self.pending_turn_tools.as_deref(),
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

/// What the `turn_start` hooks work on.
struct TurnStart<'a> {
    messages: &'a mut Vec<Message>,
    /// `messages` as JSON, kept in step.
    json: &'a mut TranscriptJson,
    /// The tools offered this turn.
    tools: Vec<String>,
    /// A hook chose `tools`.
    chosen: bool,
    /// Messages injected at the end of `messages`.
    injected: usize,
    /// A hook replaced the history.
    replaced: bool,
}

/// The hooks of a run's agent, ready to consult.
fn hook_caller<'a>(
    agent: &'a AgentInner,
    run_id: &'a str,
    run_serial: u64,
    cancel: &'a tokio_util::sync::CancellationToken,
) -> HookCaller<'a> {
    HookCaller { hooks: &agent.hooks, run_id, run_serial, cancel, timeout_ms: agent.config.hook_timeout_ms }
}

/// A history a hook gives in place of the run's: its parts checked, its calls
/// and results paired.
fn checked_history(stage: HookStage, messages: Vec<Message>) -> Result<Vec<Message>, Error> {
    super::input::check_messages(&messages).map_err(|e| {
        let problem = e.message.trim_start_matches("run input: ");
        Error::invalid_arg(format!("a {} hook's decision \"messages\": {problem}", stage.name()))
    })?;
    Ok(messages)
}

/// Marks an injected message as such; only user and system messages may be
/// injected.
pub(crate) fn mark_injected(message: &mut Message) -> Result<(), String> {
    match message {
        Message::User(user) => user.origin = Some(Origin::Injection),
        Message::System(system) => system.origin = Some(Origin::Injection),
        _ => return Err("only user and system messages can be injected".to_owned()),
    }
    super::input::check_parts(message)
}

impl HookStop {
    /// How the run ends.
    fn ending(self) -> (RunStatus, Option<Error>) {
        match self {
            HookStop::Cancelled => (RunStatus::Cancelled, None),
            HookStop::Failed(error) => (RunStatus::Failed, Some(error)),
        }
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
