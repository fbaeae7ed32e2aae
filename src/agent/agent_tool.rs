//! An agent offered to another agent's model: called as a tool (a nested run
//! whose answer is the call's result) or handed off to (the run goes on with
//! it). What the builder takes, and the tool that calls the agent.

use std::sync::Arc;

use serde_json::{json, Value};

use super::agent_tool_options::{AgentToolMode, AgentToolOptions};
use super::built::Agent;
use super::call_site::AgentCallSite;
use super::input::{RunInput, RunSource};
use super::result::{RunResult, RunStatus};
use crate::error::{Error, Result};
use crate::message::{text_of, Message};
use crate::tool::{Invocation, ToolFunction, ToolOutcome, ToolResult};
use crate::trace::ToolSource;
use crate::BoxFuture;

/// An agent to add to a builder, and how its model is offered it.
pub struct AgentToolSpec {
    /// The agent's name for the calling model: the tool's name, or in
    /// handoff mode the name after `transfer_to_`.
    pub name: String,
    /// What the agent does, for the calling model.
    pub description: String,
    /// The agent (the builder keeps its own handle).
    pub agent: Agent,
    /// The tool's input schema; `None`: `{"input": string}`, the string
    /// becoming the nested run's prompt. With a schema, the call's arguments,
    /// as JSON text, are the prompt.
    pub input_schema: Option<Value>,
    /// Tool or handoff.
    pub mode: AgentToolMode,
    /// Timeout, approval, what a handoff carries.
    pub options: AgentToolOptions,
}

impl AgentToolSpec {
    /// The schema of the tool: the spec's, or `{"input": string}`.
    pub(crate) fn schema(&self) -> Value {
        match &self.input_schema {
            Some(schema) => schema.clone(),
            None if self.mode == AgentToolMode::Handoff => {
                json!({"type": "object", "properties": {}, "additionalProperties": false})
            }
            None => json!({
                "type": "object",
                "properties": {"input": {"type": "string", "description": "What to ask the agent."}},
                "required": ["input"],
                "additionalProperties": false
            }),
        }
    }
}

/// The tool of an agent called as a tool: each call runs the agent, nested in
/// the calling run.
pub(crate) struct AgentCall {
    pub(crate) agent: Agent,
    /// The name the calling agent knows it by.
    pub(crate) name: Arc<str>,
    /// The prompt is the `input` argument (the default schema), not the whole
    /// arguments.
    pub(crate) input_argument: bool,
}

impl ToolFunction for AgentCall {
    fn invoke(&self, invocation: Invocation) -> BoxFuture<'static, ToolOutcome> {
        let (agent, name) = (self.agent.clone(), self.name.clone());
        let prompt = match self.input_argument {
            true => invocation.arguments()["input"].as_str().unwrap_or_default().to_owned(),
            false => invocation.arguments().to_string(),
        };
        Box::pin(async move {
            let site = invocation.caller().cloned().and_then(|caller| caller.downcast::<AgentCallSite>().ok());
            let input = match site.as_ref().and_then(|site| site.take_resume()) {
                Some((state, decisions)) => {
                    RunSource::Resume { state: Box::new(state), decisions, results: Default::default() }.into()
                }
                None => RunInput::prompt(prompt),
            };
            let started = crate::runtime::threads().and_then(|threads| {
                let origin = agent.begin(input)?;
                let cancel = invocation.cancellation().child_token();
                let trace = invocation.trace().cloned();
                Ok(origin.start_nested(threads, site.as_deref(), invocation.id(), name.clone(), cancel, trace))
            });
            let result = match started {
                Ok(run) => run.wait().await,
                Err(error) => {
                    return ToolOutcome::Failed(format!("The agent \"{name}\" could not start: {}", error.message))
                }
            };
            if let (Some(site), Some(state)) = (&site, &result.state) {
                let interruptions =
                    result.interruptions.iter().map(|i| i.clone().nested_in(invocation.id(), &name)).collect();
                site.stop(state.clone(), interruptions);
            }
            ToolOutcome::Completed(answer(&name, &result))
        })
    }

    fn starts_runs(&self) -> bool {
        true
    }

    fn source(&self) -> ToolSource {
        ToolSource::Agent
    }
}

/// The call's result from how the nested run ended: its answer (its `output`
/// as JSON text when it has one), or an error the calling model can read.
/// The usage is the nested run's.
fn answer(name: &str, result: &RunResult) -> ToolResult {
    let text = match &result.final_message {
        Some(Message::Assistant(message)) => text_of(&message.content),
        _ => String::new(),
    };
    let mut answer = match result.status {
        RunStatus::Completed => match &result.output {
            Some(output) => ToolResult { details: Some(output.clone()), ..ToolResult::text(output.to_string()) },
            None => ToolResult::text(text),
        },
        RunStatus::Terminated if !text.is_empty() => ToolResult::text(text),
        RunStatus::Terminated => ToolResult::text(format!("The agent \"{name}\" ended its run at a tool's request.")),
        RunStatus::Failed => {
            let why = result.error.as_ref().map_or("it failed", |error| error.message.as_str());
            ToolResult::error(format!("The agent \"{name}\" failed: {why}"))
        }
        RunStatus::MaxRounds => ToolResult::error(format!(
            "The agent \"{name}\" used all of its {} rounds without giving an answer.",
            result.rounds
        )),
        RunStatus::Cancelled | RunStatus::Interrupted => {
            ToolResult::error(format!("The agent \"{name}\" was stopped before it answered."))
        }
    };
    answer.usage = Some(result.usage);
    answer
}

/// The tool of a handoff: a call answers at once; the run then goes on with
/// the agent handed to.
pub(crate) struct HandoffCall {
    pub(crate) name: Arc<str>,
}

impl ToolFunction for HandoffCall {
    fn invoke(&self, _invocation: Invocation) -> BoxFuture<'static, ToolOutcome> {
        let result = ToolResult::text(format!("Transferred to {}.", self.name));
        Box::pin(std::future::ready(ToolOutcome::Completed(result)))
    }

    fn source(&self) -> ToolSource {
        ToolSource::Agent
    }
}

/// `INVALID_ARG` for an option given that does not fit the spec's mode.
pub(crate) fn check_mode(spec: &AgentToolSpec) -> Result<()> {
    let options = &spec.options;
    match spec.mode {
        AgentToolMode::Tool if options.handoff_messages.is_some() => {
            Err(Error::invalid_arg(format!("agent \"{}\": handoff_messages is for a handoff", spec.name)))
        }
        AgentToolMode::Handoff if options.timeout_ms.is_some() => Err(Error::invalid_arg(format!(
            "agent \"{}\": a handoff answers at once, so it takes no timeout_ms",
            spec.name
        ))),
        _ => Ok(()),
    }
}
