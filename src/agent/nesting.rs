//! Runs inside runs: an agent called as a tool runs nested in the run that
//! called it. A run knows how deep it sits, counts the tokens its nested runs
//! spend into its own usage (once each, whenever they spend them), and ends
//! only after every run nested in it has ended.

use std::sync::{Arc, Mutex};

use tokio_util::task::task_tracker::{TaskTracker, TaskTrackerToken};

use crate::message::Usage;

/// How deep agents may nest: an agent whose tree of agents (called as tools
/// or handed off to) is deeper than this cannot be built.
pub(crate) const MAX_AGENT_DEPTH: u32 = 8;

/// A run's place in its tree of runs. Shared by the run and the runs nested
/// in it; any thread.
pub(crate) struct RunNesting {
    /// 0 for a run the host started, one more for each agent call above it.
    pub(crate) depth: u32,
    /// Tokens the runs nested in this one spent that its usage does not hold yet.
    uncounted: Mutex<Usage>,
    /// The runs nested in this one, until they end.
    children: TaskTracker,
    /// The run this one is nested in, and its hold on it.
    parent: Option<(Arc<RunNesting>, TaskTrackerToken)>,
}

impl RunNesting {
    /// The nesting of a run the host started.
    pub(crate) fn top() -> Arc<Self> {
        Arc::new(RunNesting { depth: 0, uncounted: Mutex::default(), children: TaskTracker::new(), parent: None })
    }

    /// The nesting of a run started inside `parent`: `parent` does not end
    /// before this is dropped.
    pub(crate) fn inside(parent: &Arc<RunNesting>) -> Arc<Self> {
        let hold = parent.children.token();
        Arc::new(RunNesting {
            depth: parent.depth + 1,
            uncounted: Mutex::default(),
            children: TaskTracker::new(),
            parent: Some((Arc::clone(parent), hold)),
        })
    }

    /// Counts `spent` into `usage` (the run's own) and into the usage of the
    /// run it is nested in, which takes it in at its next [`take_uncounted`].
    ///
    /// [`take_uncounted`]: Self::take_uncounted
    pub(crate) fn count(&self, usage: &mut Usage, spent: &Usage) {
        usage.add(spent);
        if let Some((parent, _)) = &self.parent {
            parent.uncounted.lock().unwrap_or_else(|e| e.into_inner()).add(spent);
        }
    }

    /// Counts what the nested runs spent since the last time into `usage`.
    pub(crate) fn take_uncounted(&self, usage: &mut Usage) {
        let spent = std::mem::take(&mut *self.uncounted.lock().unwrap_or_else(|e| e.into_inner()));
        if spent != Usage::default() {
            self.count(usage, &spent);
        }
    }

    /// Waits until every run nested in this one has ended.
    pub(crate) async fn children_ended(&self) {
        self.children.close();
        self.children.wait().await;
    }
}
