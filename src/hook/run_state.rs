//! What one hook keeps for one run: how far into the history its payloads
//! have carried the messages (`"history": "new"`), and a value of the host's
//! that its consultations in the run share (`ferrule_hook_set_run_state`).

use std::any::Any;
use std::sync::{Arc, Mutex};

/// One hook's state for one run. Made when the run starts, one per hook of
/// the agent; the value is dropped when the run has ended and no consultation
/// of the hook still holds the state. Shared by the run's task and the
/// consultations, which may be on any thread.
#[derive(Default)]
pub struct HookRunState {
    /// The history's revision and length when the hook's last `turn_start`
    /// payload carried it.
    carried: Mutex<Option<Carried>>,
    value: Mutex<Option<Box<dyn Any + Send>>>,
}

#[derive(Clone, Copy)]
struct Carried {
    revision: u64,
    count: usize,
}

impl HookRunState {
    /// A state for each of `hooks`, in their order.
    pub(crate) fn for_hooks(hooks: &[super::Hook]) -> Box<[Arc<HookRunState>]> {
        hooks.iter().map(|_| Arc::default()).collect()
    }

    /// Whether the host has set a value.
    pub(crate) fn has_value(&self) -> bool {
        self.value.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// Where a payload of the hook's starts the history's messages, for a
    /// history of `count` messages at `revision` (which changes whenever the
    /// history is replaced): after those it carried last time when the history
    /// only grew since, else from the first. Notes that the hook now has all
    /// `count`.
    pub(crate) fn carry_from(&self, revision: u64, count: usize) -> usize {
        let mut carried = self.carried.lock().unwrap_or_else(|e| e.into_inner());
        let from = match *carried {
            Some(last) if last.revision == revision && last.count <= count => last.count,
            _ => 0,
        };
        *carried = Some(Carried { revision, count });
        from
    }

    /// Runs `body` with the host's value for the run (`None` until one is
    /// set), under a lock that the run's other consultations of the hook
    /// wait on.
    pub fn with_value<R>(&self, body: impl FnOnce(Option<&mut (dyn Any + Send)>) -> R) -> R {
        let mut value = self.value.lock().unwrap_or_else(|e| e.into_inner());
        body(value.as_deref_mut())
    }

    /// Sets the host's value for the run (`None` clears it) and returns the
    /// one it replaces, for the caller to drop outside the lock.
    pub fn replace_value(&self, value: Option<Box<dyn Any + Send>>) -> Option<Box<dyn Any + Send>> {
        std::mem::replace(&mut *self.value.lock().unwrap_or_else(|e| e.into_inner()), value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_that_only_grew_is_carried_from_where_it_stopped() {
        let state = HookRunState::default();
        assert_eq!(state.carry_from(0, 3), 0);
        assert_eq!(state.carry_from(0, 5), 3);
        assert_eq!(state.carry_from(0, 5), 5);
    }

    #[test]
    fn a_replaced_or_shorter_history_is_carried_whole() {
        let state = HookRunState::default();
        state.carry_from(0, 4);
        assert_eq!(state.carry_from(1, 6), 0);
        assert_eq!(state.carry_from(1, 2), 0);
    }

    #[test]
    fn the_value_replaced_is_handed_back() {
        let state = HookRunState::default();
        assert!(state.replace_value(Some(Box::new(7u32))).is_none());
        assert_eq!(state.with_value(|v| v.and_then(|v| v.downcast_mut::<u32>()).copied()), Some(7));
        let old = state.replace_value(None).expect("the old value");
        assert_eq!(old.downcast_ref::<u32>(), Some(&7));
        assert!(state.with_value(|v| v.is_none()));
    }
}
