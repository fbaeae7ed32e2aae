//! The run loop: the `run_start` hooks, the batch a run may begin with, then one
//! turn after another until a step ends the run or its rounds run out. Every
//! step says what comes next as a [`NextStep`]; this is the one place that reads
//! it.

use super::batch::ResponseEnd;
use super::batch_step::{abandon, run_batch, Batch};
use super::built::Agent;
use super::context::RunContext;
use super::event::EventKind;
use super::final_answer::FinalAnswer;
use super::handoff;
use super::hook_stages;
use super::input::ResultMessages;
use super::invoke::{invoke, Invoked};
use super::next_step::{Ending, NextStep, Stop};
use super::progress::RunProgress;
use super::request_caches::RequestCaches;
use super::result::RunResult;
use super::run_tools::RunTools;
use super::state::{CarriedOver, RunState};
use super::turn::turn;
use crate::error::Error;
use crate::hook::HookRunState;
use crate::message::{AssistantMessage, Message};

/// One run as it goes.
pub(crate) struct RunLoop {
    pub(crate) run: RunContext,
    /// What the run has done; what an interruption writes into the state.
    pub(crate) progress: RunProgress,
    /// The assistant message whose batch runs first, until it runs.
    pub(crate) pending: Option<AssistantMessage>,
    /// The run goes on from an interrupted one (its `run_start` hooks ran then).
    pub(crate) resumed: bool,
    pub(crate) caches: RequestCaches,
    /// The tools of the turn under way.
    pub(crate) tools: RunTools,
    pub(crate) answer: FinalAnswer,
    /// The turn between its turn_start and turn_end events, or 0.
    pub(crate) open_turn: u32,
    /// What the batch that runs first carries over from the run that
    /// stopped, or what the run carries over when it stops.
    pub(crate) carried: CarriedOver,
    /// The agents that handed the run on, held until it ends (their tools
    /// are let go of after `run_end`, as the last agent's are).
    pub(crate) handed_from: Vec<Agent>,
    /// Whether the result carries the transcript.
    pub(crate) result_messages: ResultMessages,
    /// The call an `invoke` run runs, and its outcome.
    pub(crate) invoke: Option<Box<Invoked>>,
}

impl NextStep {
    /// Where the run stops after this step; `None` when it goes on.
    fn stop(self) -> Option<Stop> {
        match self {
            NextStep::RunAgain => None,
            NextStep::Interrupt(interruptions) => Some(Stop::Interrupted(interruptions)),
            NextStep::Return(calls) => Some(Stop::Returned(calls)),
            NextStep::End(ending) => Some(Stop::Ended(ending)),
            // Made by the loop before it asks.
            NextStep::Handoff { .. } => None,
        }
    }
}

impl RunLoop {
    /// Runs until the run stops.
    pub(crate) async fn drive(&mut self) -> Stop {
        self.run.events.emit(EventKind::RunStart).await;
        if let Some(invoked) = &mut self.invoke {
            // Part of the run that returned the call: no hook, no turn.
            let ending = match self.tools.refresh(&self.run).await {
                Ok(()) => invoke(&self.run, self.tools.current(), invoked).await,
                Err(ending) => ending,
            };
            return Stop::Ended(ending);
        }
        // A resumed run's run_start hooks ran when it started.
        if !self.resumed {
            if let Err(stop) = hook_stages::run_start(&self.run.hooks(), &mut self.progress.messages).await {
                return Stop::Ended(stop.ending());
            }
            // The hooks may have replaced the input; nothing was encoded yet.
            self.progress.input_messages = self.progress.messages.len();
        }
        if let Some(message) = self.pending.take() {
            // An execute-only run's message, or the batch an interrupted run
            // waits on: it runs before any model request, outside any turn.
            let run = &self.run;
            let ready = match run.cancel.is_cancelled() {
                true => Err(Ending::Cancelled),
                false => self.tools.refresh(run).await,
            };
            if let Err(ending) = ready {
                abandon(&mut self.progress, message, &mut self.carried);
                return Stop::Ended(ending);
            }
            let progress = &mut self.progress;
            let turn = if progress.execute_only { 0 } else { progress.rounds };
            let turn_tools = progress.turn_tools.take();
            let tools = self.tools.current();
            let carried = &mut self.carried;
            let batch = Batch { message, response: ResponseEnd::Complete, turn, turn_tools };
            let step = run_batch(run, tools, progress, carried, batch).await;
            if let Some(stop) = self.follow(step, turn).await.stop() {
                return stop;
            }
            if self.progress.execute_only {
                return Stop::Ended(Ending::Completed);
            }
        }
        // Turns continue the count of a resumed run (and so does the scripted
        // model); the agent answering decides how many there may be.
        let mut number = self.progress.rounds;
        loop {
            number = match number.checked_add(1) {
                Some(next) if next <= self.run.agent().config.max_rounds => next,
                _ => return Stop::Ended(Ending::MaxRounds),
            };
            let run = &self.run;
            if run.cancel.is_cancelled() {
                return Stop::Ended(Ending::Cancelled);
            }
            run.events.emit(EventKind::TurnStart { turn: number }).await;
            self.open_turn = number;
            let step = match self.tools.refresh(run).await {
                Ok(()) => {
                    let tools = self.tools.current();
                    let progress = &mut self.progress;
                    turn(run, tools, progress, &mut self.carried, &mut self.caches, &mut self.answer, number).await
                }
                Err(ending) => NextStep::End(ending),
            };
            let step = self.follow(step, number).await;
            self.open_turn = 0;
            self.run.events.emit(EventKind::TurnEnd { turn: number }).await;
            if let Some(stop) = step.stop() {
                return stop;
            }
        }
    }

    /// Makes the handoff a step asks for (then the run goes on); any other
    /// step is returned as it is.
    async fn follow(&mut self, step: NextStep, turn: u32) -> NextStep {
        let NextStep::Handoff { call_id, tool } = step else { return step };
        // The batch found the tool among the agent's handoffs.
        let Some(handoff) = self.run.agent().handoffs.get(&tool) else { return NextStep::RunAgain };
        let (to, agent, carried) = (handoff.name.clone(), handoff.agent.clone(), handoff.messages);
        let from = self.progress.handed_to.last().map(|name| name.as_str().into());
        // An execute-only run asks no model: nothing is carried anywhere.
        let dropped = match self.progress.execute_only {
            true => 0,
            false => handoff::carry(&mut self.progress, carried),
        };
        // The run's tool set and decisions were for the agent handing off.
        let progress = &mut self.progress;
        progress.handed_to.push(to.to_string());
        progress.tools = None;
        progress.disclosed.clear();
        progress.standing.clear();
        self.handed_from.push(std::mem::replace(&mut self.run.agent, agent));
        // The hooks are the other agent's: each starts with nothing carried
        // and no value; the old states go when the run ends.
        let states = HookRunState::for_hooks(&self.run.agent().hooks);
        let retired = std::mem::replace(&mut self.run.hook_states, states);
        self.run.retired_hook_states.extend(retired.into_vec());
        self.caches = RequestCaches::new(self.run.agent().config.history);
        self.tools = RunTools::new(self.run.agent());
        if let Some(trace) = &self.run.trace {
            let attributes =
                vec![("ferrule.handoff.to", to.to_string().into()), ("gen_ai.tool.call.id", call_id.as_str().into())];
            trace.event("ferrule.handoff", attributes);
        }
        self.run.events.emit(EventKind::Handoff { turn, call_id, from, to, dropped }).await;
        NextStep::RunAgain
    }

    /// The run's result from how it stopped, what the run worked with (its
    /// agent, events and handles), which outlives the result, and the agents
    /// that handed it on.
    pub(crate) fn finish(self, stop: Stop) -> (RunResult, RunContext, Vec<Agent>) {
        let status = stop.status();
        let progress = self.progress;
        let final_message = match self.answer.withheld {
            true => None,
            false => progress.messages[progress.input_messages..]
                .iter()
                .rev()
                .find(|m| matches!(m, Message::Assistant(_)))
                .cloned(),
        };
        let (interruptions, calls, state, error): (_, _, _, Option<Error>) = match stop {
            Stop::Interrupted(interruptions) => {
                let state = RunState::capture(&progress, &interruptions, self.carried);
                (interruptions, Vec::new(), Some(state), None)
            }
            Stop::Returned(calls) => {
                let state = RunState::returning(&progress, &calls, self.carried);
                (Vec::new(), calls, Some(state), None)
            }
            Stop::Ended(Ending::Failed(error)) => (Vec::new(), Vec::new(), None, Some(error)),
            Stop::Ended(_) => (Vec::new(), Vec::new(), None, None),
        };
        let messages = match self.result_messages {
            ResultMessages::All => progress.messages,
            ResultMessages::None => Vec::new(),
        };
        let result = RunResult {
            status,
            final_message,
            messages,
            usage: progress.usage,
            rounds: progress.rounds,
            error,
            output: self.answer.output,
            interruptions,
            calls,
            outcome: self.invoke.and_then(|invoked| invoked.outcome),
            state,
            agent: progress.handed_to.last().cloned(),
        };
        (result, self.run, self.handed_from)
    }
}
