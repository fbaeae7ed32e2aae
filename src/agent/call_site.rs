//! What a call of an agent (called as a tool) knows of the run that made it:
//! where that run sits, where its events go, the call's own progress, the
//! state the agent goes on from when the call resumes, and where the agent
//! reports that it stopped for approval.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::approval::{Decision, Interruption};
use super::call_progress::CallProgress;
use super::event_queue::EventEmitter;
use super::nesting::RunNesting;
use super::state::RunState;

/// The calling run's side of one agent call, handed to the tool's function
/// with the call. Any thread.
pub(crate) struct AgentCallSite {
    /// The calling run's place in its tree of runs.
    pub(crate) nesting: Arc<RunNesting>,
    /// The calling run's events.
    pub(crate) events: EventEmitter,
    /// The call's progress, when the calling run has events.
    pub(crate) progress: Option<Arc<CallProgress>>,
    /// For a call that goes on from an agent that stopped for approval: its
    /// state and the host's decisions for it, taken by the call.
    resume: Mutex<Option<(RunState, HashMap<String, Decision>)>>,
    /// The agent's state and interruptions (as the calling run reports them),
    /// when it stopped for approval.
    stopped: Mutex<Option<(RunState, Vec<Interruption>)>>,
}

impl AgentCallSite {
    /// The site of a call of the run of `nesting` and `events`; `resume` when
    /// the call goes on from a stopped agent.
    pub(crate) fn new(
        nesting: Arc<RunNesting>,
        events: EventEmitter,
        progress: Option<Arc<CallProgress>>,
        resume: Option<(RunState, HashMap<String, Decision>)>,
    ) -> Self {
        AgentCallSite { nesting, events, progress, resume: Mutex::new(resume), stopped: Mutex::new(None) }
    }

    /// The state to go on from, once.
    pub(crate) fn take_resume(&self) -> Option<(RunState, HashMap<String, Decision>)> {
        self.resume.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Reports that the agent stopped for approval.
    pub(crate) fn stop(&self, state: RunState, interruptions: Vec<Interruption>) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = Some((state, interruptions));
    }

    /// What the agent reported when it stopped for approval, once.
    pub(crate) fn take_stopped(&self) -> Option<(RunState, Vec<Interruption>)> {
        self.stopped.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}
