//! Where a run begins: its input read against the agent, as the progress the run
//! starts with and the batch it runs first.

use super::built::Agent;
use super::host_calls::CallMode;
use super::input::{EventSelection, ResultMessages, RunInput, RunSource};
use super::invoke::Invoked;
use super::progress::RunProgress;
use super::state::CarriedOver;
use crate::error::{Error, Result};
use crate::message::{AssistantMessage, Message, UserMessage};
use crate::provider::ToolChoice;
use crate::trace::SpanContext;

/// Where a run begins.
pub(crate) struct RunOrigin {
    /// The agent that answers first: the one started, or the one an
    /// interrupted run had handed off to.
    pub(crate) agent: Agent,
    /// What the run has done before it starts (nothing, unless it resumes).
    pub(crate) progress: RunProgress,
    /// An assistant message whose calls run as the first batch, before any model
    /// request: an execute-only run's, or the one an interrupted run waits on.
    pub(crate) pending: Option<AssistantMessage>,
    /// The run goes on from an interrupted one (its `run_start` hooks ran then).
    pub(crate) resumed: bool,
    /// What the batch of `pending` carries over from the run that stopped.
    pub(crate) carried: CarriedOver,
    /// Which events reach the host's sink.
    pub(crate) events: EventSelection,
    /// Whether the result carries the transcript.
    pub(crate) result_messages: ResultMessages,
    /// The host's span the run goes under.
    pub(crate) trace_parent: Option<SpanContext>,
    /// Who runs the calls of the run's batches.
    pub(crate) calls: CallMode,
    /// The one call an `invoke` run runs (boxed: rare).
    pub(crate) invoke: Option<Box<Invoked>>,
}

impl RunOrigin {
    /// A run of `agent` that starts from `messages`; with `execute`, an
    /// execute-only run.
    fn fresh(agent: &Agent, messages: Vec<Message>, execute: Option<AssistantMessage>) -> Self {
        let progress = RunProgress { execute_only: execute.is_some(), ..RunProgress::from_input(messages) };
        RunOrigin {
            agent: agent.clone(),
            progress,
            pending: execute,
            resumed: false,
            carried: CarriedOver::default(),
            events: EventSelection::All,
            result_messages: ResultMessages::All,
            trace_parent: None,
            calls: CallMode::Run,
            invoke: None,
        }
    }
}

impl Agent {
    /// Where a run from `input` begins on this agent; a resume is checked against
    /// the agent's tools and the decisions here, and so is a run's tool set.
    pub(crate) fn begin(&self, input: RunInput) -> Result<RunOrigin> {
        let mut origin = match input.source {
            RunSource::Prompt(prompt) => RunOrigin::fresh(self, vec![Message::User(UserMessage::text(prompt))], None),
            RunSource::Messages(messages) => RunOrigin::fresh(self, messages, None),
            RunSource::Execute { messages, execute } => RunOrigin::fresh(self, messages, Some(execute)),
            RunSource::Invoke { call, attempt, handed_to } => {
                if input.tools.is_some() {
                    return Err(Error::invalid_arg("run input: \"invoke\" takes no \"tools\": it runs the call's"));
                }
                let agent = self.handed_to(&handed_to)?;
                let invoked = Invoked::new(call, attempt);
                let (parts, tool) = (agent.parts(), invoked.tool());
                if !parts.may_offer(tool) {
                    return Err(Error::invalid_arg(format!(
                        "run input: invoke: the agent has no tool \"{tool}\" (it has {})",
                        agent.tool_names().join(", ")
                    )));
                }
                if parts.called.contains_key(tool) || parts.handoffs.contains_key(tool) {
                    return Err(Error::invalid_arg(format!(
                        "run input: invoke: \"{tool}\" is an agent or a handoff, whose calls run inside the run that made them"
                    )));
                }
                let mut origin = RunOrigin::fresh(&agent, Vec::new(), None);
                origin.progress.handed_to = handed_to;
                origin.invoke = Some(Box::new(invoked));
                origin
            }
            RunSource::Resume { state, decisions, results } => {
                let agent = self.handed_to(state.handed_to())?;
                let (progress, pending, carried) = state.resume(decisions, results, agent.parts())?;
                check_nested(&agent, &pending, &carried)?;
                RunOrigin {
                    agent,
                    progress,
                    pending: Some(pending),
                    resumed: true,
                    carried,
                    events: EventSelection::All,
                    result_messages: ResultMessages::All,
                    trace_parent: None,
                    calls: CallMode::Run,
                    invoke: None,
                }
            }
        };
        origin.events = input.events;
        origin.calls = input.calls;
        origin.trace_parent = input.trace_parent;
        if origin.progress.execute_only && input.result_messages == ResultMessages::None {
            return Err(Error::invalid_arg(
                "run input: an execute-only run's results are in its \"messages\": \"result_messages\": \"none\" \
                 would leave them out",
            ));
        }
        origin.result_messages = input.result_messages;
        if let Some(tools) = input.tools {
            if origin.resumed {
                return Err(Error::invalid_arg(
                    "run input: \"resume\" takes no \"tools\": the state keeps the run's tool set",
                ));
            }
            if let Some(name) = tools.iter().find(|name| !self.parts().may_offer(name)) {
                return Err(Error::invalid_arg(format!(
                    "run input: tools names \"{name}\", which the agent does not have (it has {})",
                    self.tool_names().join(", ")
                )));
            }
            if let ToolChoice::Named(name) = &self.config().tool_choice {
                if !tools.contains(name) {
                    return Err(Error::invalid_arg(format!(
                        "run input: tools leaves out \"{name}\", which the agent's tool_choice names"
                    )));
                }
            }
            origin.progress.tools = Some(tools.into_iter().collect());
        }
        Ok(origin)
    }

    /// The agent the handoffs named `names` hand a run of this agent to, in turn.
    fn handed_to(&self, names: &[String]) -> Result<Agent> {
        let mut agent = self.clone();
        for name in names {
            let next = agent.parts().handoffs.values().find(|handoff| &*handoff.name == name);
            agent = match next {
                Some(handoff) => handoff.agent.clone(),
                None => {
                    return Err(Error::invalid_arg(format!(
                        "run input: the run was handed to \"{name}\", which the agent answering before it cannot hand off to; start it on an agent built from the same configuration, tools and agents"
                    )))
                }
            };
        }
        Ok(agent)
    }
}

/// Checks each state of an agent that waits in `pending`'s batch as that agent
/// will resume it (with the decisions for it), so that a resume that does not
/// fit fails now, before anything runs.
fn check_nested(agent: &Agent, pending: &AssistantMessage, carried: &CarriedOver) -> Result<()> {
    for (id, state) in &carried.nested {
        let tool = pending.tool_calls.iter().find(|call| &call.id == id).map_or("", |call| call.name.as_str());
        let refuse = |why: &str| {
            Error::invalid_arg(format!("run input: resume: the agent that waits in call \"{id}\" ({tool}): {why}"))
        };
        let Some(called) = agent.parts().called.get(tool) else {
            return Err(refuse("this agent has no agent of that name; resume with an agent built from the same configuration, tools and agents"));
        };
        let decisions = carried.nested_decided.get(id).cloned().unwrap_or_default().into_iter().collect();
        let input = RunSource::Resume { state: Box::new(state.clone()), decisions, results: Default::default() }.into();
        called.begin(input).map_err(|e| refuse(e.message.trim_start_matches("run input: resume: ")))?;
    }
    Ok(())
}
