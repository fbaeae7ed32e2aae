//! Where a transport puts the server's notices for its holder: one bounded
//! queue, replaced when the holder asks again; notices past its bound are
//! dropped and counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::mpsc;

use super::rpc::ServerNotice;

/// Notices kept for a holder that does not read them.
pub(crate) const QUEUED_NOTICES: usize = 1024;

/// The holder's queue of notices. Any thread.
#[derive(Default)]
pub(crate) struct Notices {
    sender: Mutex<Option<mpsc::Sender<ServerNotice>>>,
    dropped: AtomicU64,
    /// A change of the tools announced and not yet taken in: it outlives a
    /// full queue, and while it stands further announcements queue nothing.
    tools_changed: AtomicBool,
}

impl Notices {
    /// The notices from now on (a second call replaces the first receiver).
    pub(crate) fn subscribe(&self) -> mpsc::Receiver<ServerNotice> {
        let (sender, receiver) = mpsc::channel(QUEUED_NOTICES);
        if let Ok(mut current) = self.sender.lock() {
            *current = Some(sender);
        }
        receiver
    }

    /// Passes `notice` on, if the holder listens; one it has no room for is
    /// dropped and counted.
    pub(crate) fn tell(&self, notice: ServerNotice) {
        if notice == ServerNotice::ToolsChanged && self.tools_changed.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(sender) = self.sender.lock().ok().and_then(|n| n.clone()) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = sender.try_send(notice) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether a change of the tools was announced since the last call.
    pub(crate) fn take_tools_changed(&self) -> bool {
        self.tools_changed.swap(false, Ordering::SeqCst)
    }

    /// How many notices were dropped because the holder did not read them.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
