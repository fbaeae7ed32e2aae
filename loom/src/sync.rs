//! The primitives the handle table takes under loom: loom's `Mutex`, and a
//! `OnceLock` made of one (loom has none), so a chunk's first use is a lock
//! operation loom interleaves like the others. Unlike std's, its `get` waits
//! while another thread makes the value, instead of returning `None`.

use std::marker::PhantomData;

pub(crate) use loom::sync::Mutex;

/// A value set once, by the first of the threads that ask for it.
pub(crate) struct OnceLock<T> {
    /// The value, made by `Box::into_raw`: a raw pointer, so handing out
    /// shared references to it never meets a unique borrow of a box.
    value: Mutex<Option<*const T>>,
    /// Send and Sync exactly when std's `OnceLock<T>` is.
    _marker: PhantomData<std::sync::OnceLock<T>>,
}

// SAFETY: the pointer is owned like a `Box<T>` and only read through `&T`, as
// std's `OnceLock<T>` holds its value: the same bounds apply.
unsafe impl<T: Send> Send for OnceLock<T> {}
// SAFETY: as above; every thread gets `&T`, and any thread may make it.
unsafe impl<T: Send + Sync> Sync for OnceLock<T> {}

impl<T> OnceLock<T> {
    pub(crate) fn new() -> Self {
        OnceLock { value: Mutex::new(None), _marker: PhantomData }
    }

    pub(crate) fn get(&self) -> Option<&T> {
        let value = *self.value.lock().unwrap();
        // SAFETY: set once from `Box::into_raw` and freed only in `drop`, so it
        // lives as long as the borrow of `self`.
        value.map(|value| unsafe { &*value })
    }

    pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
        let mut value = self.value.lock().unwrap();
        let value = *value.get_or_insert_with(|| Box::into_raw(Box::new(init())).cast_const());
        // SAFETY: as in `get`.
        unsafe { &*value }
    }
}

impl<T> Drop for OnceLock<T> {
    fn drop(&mut self) {
        if let Some(value) = self.value.get_mut().unwrap().take() {
            // SAFETY: made by `Box::into_raw` and freed only here.
            drop(unsafe { Box::from_raw(value.cast_mut()) });
        }
    }
}
