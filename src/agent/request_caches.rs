//! What a run keeps between its model requests so that each one costs only what
//! is new: the transcript encoded for the provider's wire, the transcript as JSON,
//! and the history budget's measurements.

use super::history::{HistoryBudget, HistoryConfig};
use super::transcript_json::TranscriptJson;
use crate::provider::WireCache;

/// A run's caches; they follow a transcript that only grows.
pub(crate) struct RequestCaches {
    /// The transcript as the provider's wire has it so far.
    pub(crate) wire: WireCache,
    /// The transcript as JSON, for hook payloads and the history budget.
    pub(crate) transcript_json: TranscriptJson,
    /// The history budget, when the agent has one.
    pub(crate) history: Option<HistoryBudget>,
}

impl RequestCaches {
    /// Empty caches, with the agent's history budget (if any).
    pub(crate) fn new(history: Option<HistoryConfig>) -> Self {
        RequestCaches {
            wire: WireCache::default(),
            transcript_json: TranscriptJson::default(),
            history: history.map(HistoryBudget::new),
        }
    }

    /// Forgets what was sent: a hook replaced the transcript, so nothing
    /// encoded for the wire before is a prefix of it. (The transcript JSON is
    /// reset where the transcript is replaced, by whoever replaces it.)
    pub(crate) fn forget(&mut self) {
        self.wire = WireCache::default();
        if let Some(budget) = &mut self.history {
            budget.forget();
        }
    }
}
