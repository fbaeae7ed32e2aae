//! What a run works with and never changes while it runs: its agent, its
//! identity, its cancellation and its event queue.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::built::{Agent, AgentInner};
use super::event::EventKind;
use super::event_queue::EventEmitter;
use super::handle::RunShared;
use super::hook_caller::HookCaller;
use super::host_calls::CallMode;
use super::nesting::RunNesting;
use crate::hook::HookRunState;
use crate::message::Message;
use crate::trace::RunTrace;

/// A run's fixed inputs, shared by its steps.
pub(crate) struct RunContext {
    /// The agent the run belongs to (its configuration, tools and hooks).
    pub(crate) agent: Agent,
    /// The run's id, as in its events (`"run-7"`).
    pub(crate) id: Arc<str>,
    /// The run's serial number, for the callback scope.
    pub(crate) serial: u64,
    /// Cancelled by the host, by dropping every handle, or at the deadline.
    pub(crate) cancel: CancellationToken,
    /// Where the run's events go.
    pub(crate) events: EventEmitter,
    /// What the host's handles share: injections arrive here.
    pub(crate) shared: Arc<RunShared>,
    /// Set when the run's deadline (`run_timeout_ms`) cancelled it.
    pub(crate) timed_out: Arc<AtomicBool>,
    /// Where the run sits among runs nested in one another.
    pub(crate) nesting: Arc<RunNesting>,
    /// The run's tracing, when spans are recorded.
    pub(crate) trace: Option<Arc<RunTrace>>,
    /// What each of the agent's hooks keeps for the run, in the hooks' order.
    pub(crate) hook_states: Box<[Arc<HookRunState>]>,
    /// What the hooks of the agents the run handed off from kept: let go of
    /// with the others when the run ends.
    pub(crate) retired_hook_states: Vec<Arc<HookRunState>>,
    /// Who runs the calls of the run's batches.
    pub(crate) calls: CallMode,
}

impl RunContext {
    /// The agent's immutable parts.
    pub(crate) fn agent(&self) -> &AgentInner {
        self.agent.parts()
    }

    /// The agent's hooks, ready to consult for this run.
    pub(crate) fn hooks(&self) -> HookCaller<'_> {
        let agent = self.agent();
        HookCaller {
            hooks: &agent.hooks,
            run_id: &self.id,
            run_serial: self.serial,
            cancel: &self.cancel,
            timeout_ms: agent.config.hook_timeout_ms,
            trace: self.trace.as_deref(),
            states: &self.hook_states,
        }
    }

    /// Moves the messages injected since the last time into `messages`, each
    /// with its `message_injected` event.
    pub(crate) async fn admit_injections(&self, messages: &mut Vec<Message>) {
        self.admit(self.shared.take_injections(), messages).await;
    }

    /// Moves `injected` into `messages`, each with its `message_injected` event.
    pub(crate) async fn admit(&self, injected: Vec<Message>, messages: &mut Vec<Message>) {
        if !injected.is_empty() {
            // Boxed: every turn's future would otherwise keep room for it.
            Box::pin(self.admit_each(injected, messages)).await;
        }
    }

    async fn admit_each(&self, injected: Vec<Message>, messages: &mut Vec<Message>) {
        for message in injected {
            self.events.emit(EventKind::MessageInjected { message: message.clone() }).await;
            messages.push(message);
        }
    }
}
