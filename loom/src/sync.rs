//! The primitives the handle table takes under loom: loom's `Mutex`, and a
//! `OnceLock` made of one (loom has none), so a chunk's first use is a lock
//! operation loom interleaves like the others.

pub(crate) use loom::sync::Mutex;

/// A value set once, by the first of the threads that ask for it.
pub(crate) struct OnceLock<T> {
    value: Mutex<Option<Box<T>>>,
}

impl<T> OnceLock<T> {
    pub(crate) fn new() -> Self {
        OnceLock { value: Mutex::new(None) }
    }

    pub(crate) fn get(&self) -> Option<&T> {
        let value = self.value.lock().unwrap();
        // SAFETY: the box is set once and neither replaced nor dropped before
        // `self`, so what it points to lives as long as the borrow of `self`.
        value.as_deref().map(|value| unsafe { &*(value as *const T) })
    }

    pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        let mut value = self.value.lock().unwrap();
        let value = value.get_or_insert_with(|| Box::new(init()));
        // SAFETY: as in `get`.
        unsafe { &*(&**value as *const T) }
    }
}
