//! What a host reads of a replayed cassette: the exchanges no request used.

use schemars::JsonSchema;
use serde::Serialize;

/// What `ferrule_agent_unused_recordings` writes: the exchanges of a replayed
/// cassette that no request used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct UnusedRecordings {
    /// The exchanges, in cassette order.
    pub unused: Vec<UnusedExchange>,
}

/// A recorded exchange no request used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct UnusedExchange {
    /// Its place in the cassette: 1 for the first exchange.
    pub index: usize,
    /// Its method.
    pub method: String,
    /// Its path and query.
    pub path: String,
}
