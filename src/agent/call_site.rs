//! What a call of an agent (called as a tool) knows of the run that made it:
//! where that run sits, where its events go, and the call's own progress.

use std::sync::Arc;

use super::call_progress::CallProgress;
use super::event_queue::EventEmitter;
use super::nesting::RunNesting;

/// The calling run's side of one agent call, handed to the tool's function
/// with the call. Any thread.
pub(crate) struct AgentCallSite {
    /// The calling run's place in its tree of runs.
    pub(crate) nesting: Arc<RunNesting>,
    /// The calling run's events.
    pub(crate) events: EventEmitter,
    /// The call's progress, when the calling run has events.
    pub(crate) progress: Option<Arc<CallProgress>>,
}
