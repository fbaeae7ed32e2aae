//! When a running server's tools are listed again.

use std::time::Duration;

use tokio::time::Instant;

use super::client::ToolList;
use super::error::McpError;
use super::server::{until_ended, Pending, FAR_AWAY};

/// The least time between two listings of the tools: a storm of list
/// changes makes one listing per pause.
const RELIST_PAUSE: Duration = Duration::from_millis(250);

/// The listings of one running server: a change of its tools makes one due
/// a pause after the last began, and one is under way at a time. Owned by
/// the server's task.
pub(super) struct Relisting {
    due: Option<Instant>,
    last: Instant,
    under_way: Option<Pending<Result<ToolList, McpError>>>,
}

impl Relisting {
    /// No listing due: the server was just listed.
    pub(super) fn new() -> Relisting {
        Relisting { due: None, last: Instant::now(), under_way: None }
    }

    /// A change of the tools was announced: a listing is due.
    pub(super) fn changed(&mut self) {
        self.due.get_or_insert(self.last + RELIST_PAUSE);
    }

    /// Whether a listing is due and not begun.
    pub(super) fn is_due(&self) -> bool {
        self.due.is_some()
    }

    /// Whether a listing is under way.
    pub(super) fn under_way(&self) -> bool {
        self.under_way.is_some()
    }

    /// When the listing due should begin: never while one is under way.
    pub(super) fn next_at(&self) -> Instant {
        self.due.filter(|_| self.under_way.is_none()).unwrap_or_else(|| Instant::now() + FAR_AWAY)
    }

    /// Begins `listing` now: what was due is under way.
    pub(super) fn begin(&mut self, listing: Pending<Result<ToolList, McpError>>) {
        self.due = None;
        self.last = Instant::now();
        self.under_way = Some(listing);
    }

    /// What the listing under way ends with; pending forever without one.
    /// Dropped before it ends, the listing stays under way.
    pub(super) async fn ended(&mut self) -> Result<ToolList, McpError> {
        let listed = until_ended(&mut self.under_way).await;
        self.under_way = None;
        listed
    }
}
