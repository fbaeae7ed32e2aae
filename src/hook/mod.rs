//! Hooks: host code the run loop consults at five stages (DESIGN section 10). A
//! hook sees a JSON payload and answers with a decision: go on, abort the run, or
//! a change the stage allows.

mod decision;
mod payload;
mod registration;
mod run_state;
mod stage_decision;

use std::ffi::CStr;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

pub use decision::HookDecision;
pub use payload::{
    FinalAnswerPayload, HookToolCall, RunStartPayload, ToolCallPayload, ToolResultPayload, TurnStartPayload,
};
pub use registration::{HookHistory, HookOptions, HookStages};
pub use run_state::HookRunState;
pub use stage_decision::{
    Arguments, FinalAnswerDecision, History, Reason, RunStartDecision, ToolCallDecision, ToolResultDecision,
    TurnStartDecision, Yes,
};

use crate::error::{Error, Result};
use crate::trace::CallTrace;
use crate::BoxFuture;

/// Where in the run a hook is consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookStage {
    /// Once, before anything else: may replace the input.
    RunStart,
    /// Before each model request: may choose the turn's tools, inject messages
    /// or replace the history.
    TurnStart,
    /// For each valid call of a batch, before any of them runs: may deny it,
    /// replace its arguments, approve it or interrupt for approval.
    ToolCall,
    /// For each result of a call that ran: may replace it.
    ToolResult,
    /// For an answer without calls that would end the run: may send it back.
    FinalAnswer,
}

impl HookStage {
    /// The stage's name in JSON.
    pub fn name(self) -> &'static str {
        // Every name is ASCII, so this never falls back.
        self.c_name().to_str().unwrap_or_default()
    }

    /// The stage's name, NUL-terminated: what the C ABI lends a host without a
    /// copy.
    pub fn c_name(self) -> &'static CStr {
        match self {
            HookStage::RunStart => c"run_start",
            HookStage::TurnStart => c"turn_start",
            HookStage::ToolCall => c"tool_call",
            HookStage::ToolResult => c"tool_result",
            HookStage::FinalAnswer => c"final_answer",
        }
    }

    /// Checks a list of stages: at least one, each at most once.
    pub fn check_list(stages: &[HookStage]) -> Result<()> {
        if stages.is_empty() {
            return Err(Error::invalid_arg("hook stages: name at least one stage"));
        }
        if let Some((i, stage)) = stages.iter().enumerate().find(|(i, s)| stages[..*i].contains(s)) {
            return Err(Error::invalid_arg(format!("hook stages: \"{}\" is named twice (at {i})", stage.name())));
        }
        Ok(())
    }
}

/// One consultation of a hook.
pub struct HookRequest {
    stage: HookStage,
    payload: String,
    cancel: CancellationToken,
    /// The run's token, which `cancel` is no child of.
    run_cancel: CancellationToken,
    run_serial: u64,
    trace: Option<CallTrace>,
    run_state: Arc<HookRunState>,
}

/// What a host hook's consultation is made of: the stage, the payload, the
/// consultation's token, the run's token, the run's serial and the hook's
/// state for the run.
pub(crate) type HookRequestParts = (HookStage, String, CancellationToken, CancellationToken, u64, Arc<HookRunState>);

impl HookRequest {
    pub(crate) fn new(
        stage: HookStage,
        payload: String,
        cancel: CancellationToken,
        run_cancel: CancellationToken,
        run_serial: u64,
        run_state: Arc<HookRunState>,
    ) -> Self {
        HookRequest { stage, payload, cancel, run_cancel, run_serial, trace: None, run_state }
    }

    /// The span the consultation is made in, when its run is traced.
    pub(crate) fn with_trace(mut self, trace: Option<CallTrace>) -> Self {
        self.trace = trace;
        self
    }

    /// The span the consultation is made in (the run's `invoke_agent`), when
    /// its run is traced: its `traceparent`, for the hook's own spans.
    pub fn trace(&self) -> Option<&CallTrace> {
        self.trace.as_ref()
    }

    /// The stage.
    pub fn stage(&self) -> HookStage {
        self.stage
    }

    /// The payload: a JSON object (DESIGN section 10 lists its fields per stage).
    pub fn payload(&self) -> &str {
        &self.payload
    }

    /// Cancelled when the run stops waiting for the decision: the hook
    /// decided, timed out, or the run was cancelled (once the run's task sees
    /// it, which is at once unless its thread is busy). The future `decide`
    /// returned is dropped then too.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// What the hook keeps for the consultation's run: a value its
    /// consultations in the run share.
    pub fn run_state(&self) -> &Arc<HookRunState> {
        &self.run_state
    }

    pub(crate) fn into_parts(self) -> HookRequestParts {
        (self.stage, self.payload, self.cancel, self.run_cancel, self.run_serial, self.run_state)
    }
}

/// Decides at the stages of a hook. Shared by every run of an agent, so it must
/// be safe to use from several threads at once.
pub trait HookFunction: Send + Sync + 'static {
    /// Starts one consultation; the future resolves with the decision, or with
    /// why the hook could not give one (which fails the run). ferrule bounds the
    /// future by `hook_timeout_ms` and drops it when the run is cancelled.
    fn decide(&self, request: HookRequest) -> BoxFuture<'static, Result<HookDecision>>;
}

impl<F, Fut> HookFunction for F
where
    F: Fn(HookRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<HookDecision>> + Send + 'static,
{
    fn decide(&self, request: HookRequest) -> BoxFuture<'static, Result<HookDecision>> {
        Box::pin(self(request))
    }
}

/// A hook: the stages it is consulted at and the function that decides.
#[derive(Clone)]
pub struct Hook {
    stages: Vec<HookStage>,
    function: Arc<dyn HookFunction>,
    history: HookHistory,
}

impl Hook {
    /// A hook for `stages` (at least one, each once).
    pub fn new(stages: Vec<HookStage>, function: impl HookFunction) -> Result<Self> {
        if stages.is_empty() {
            return Err(Error::invalid_arg("a hook needs at least one stage"));
        }
        Ok(Hook { stages, function: Arc::new(function), history: HookHistory::Full })
    }

    /// The hook with payloads that carry `history` (the whole history unless
    /// told otherwise).
    pub fn with_history(self, history: HookHistory) -> Self {
        Hook { history, ..self }
    }

    /// How much of the history the hook's payloads carry.
    pub fn history(&self) -> HookHistory {
        self.history
    }

    /// Whether the hook is consulted at `stage`.
    pub fn at(&self, stage: HookStage) -> bool {
        self.stages.contains(&stage)
    }

    pub(crate) fn function(&self) -> &Arc<dyn HookFunction> {
        &self.function
    }
}
