//! What a step of the run loop leads to: another round, an interruption for the
//! host's decisions or for the host to run calls, or the end, where only a
//! failed end carries an error.

use super::approval::Interruption;
use super::result::RunStatus;
use crate::error::Error;
use crate::message::ToolCall;

/// What the loop does after a step.
pub(crate) enum NextStep {
    /// Another model request (when the run's rounds allow it).
    RunAgain,
    /// The run stops until the host decides on these calls; it can be resumed.
    Interrupt(Vec<Interruption>),
    /// The run stops until the host has run these calls; it can be resumed.
    Return(Vec<ToolCall>),
    /// The run goes on with the agent the call `call_id` of the handoff tool
    /// `tool` handed it to.
    Handoff { call_id: String, tool: String },
    /// The run is over.
    End(Ending),
}

/// How a run that is not interrupted ends.
#[derive(Debug)]
pub(crate) enum Ending {
    /// The model gave a final answer (that satisfied the output schema).
    Completed,
    /// Every call of the last batch asked for the run to end.
    Terminated,
    /// The host cancelled the run.
    Cancelled,
    /// The run used its `max_rounds` without finishing.
    MaxRounds,
    /// The run failed, and why.
    Failed(Error),
}

/// How a run came to a stop.
pub(crate) enum Stop {
    /// It waits for the host's decisions on these calls.
    Interrupted(Vec<Interruption>),
    /// It waits for the host to run these calls.
    Returned(Vec<ToolCall>),
    /// It is over.
    Ended(Ending),
}

impl Stop {
    /// The run result's status.
    pub(crate) fn status(&self) -> RunStatus {
        match self {
            Stop::Interrupted(_) | Stop::Returned(_) => RunStatus::Interrupted,
            Stop::Ended(Ending::Completed) => RunStatus::Completed,
            Stop::Ended(Ending::Terminated) => RunStatus::Terminated,
            Stop::Ended(Ending::Cancelled) => RunStatus::Cancelled,
            Stop::Ended(Ending::MaxRounds) => RunStatus::MaxRounds,
            Stop::Ended(Ending::Failed(_)) => RunStatus::Failed,
        }
    }
}
