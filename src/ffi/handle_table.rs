//! Handles that are looked up, never dereferenced.
//!
//! A host may use a handle after the object behind it is gone: late, from
//! another thread, racing the call that ended it. A table of live objects makes
//! every such use safe by construction. A handle is a slot index plus the slot's
//! generation at the time; removing an object bumps the generation, so a stale
//! handle no longer matches, is recognised, and touches nothing freed (a lookup
//! hands out a counted reference that keeps the object alive while it is used).
//!
//! The handle packs the generation into the upper half of a pointer-sized
//! integer and the index into the lower half. Each kind of handle (tool call,
//! hook consultation, model request) has generations of its own, apart from the
//! others' (they step by [`KINDS`] from the kind's number), so a handle passed
//! to a function of another kind never matches. Free slots are reused oldest
//! first and only once enough are free, so a slot's generation turns over
//! slowly: on a 64-bit system a stale handle could only match again after 2^30
//! reuses of its slot, on a 32-bit one after 2^14, each of which needs 1,024
//! other calls in between.

use std::collections::VecDeque;
use std::sync::Arc;
#[cfg(not(ferrule_loom))]
use std::sync::{Mutex, OnceLock};

// The model checker's (loom/: this file compiled against loom's primitives).
#[cfg(ferrule_loom)]
use crate::sync::{Mutex, OnceLock};

const INDEX_BITS: u32 = usize::BITS / 2;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
const GENERATION_MASK: usize = INDEX_MASK;
/// Slots in the first chunk; each further chunk doubles the table.
const FIRST_CHUNK_BITS: u32 = 8;
const CHUNKS: usize = (INDEX_BITS - FIRST_CHUNK_BITS) as usize;
/// Free slots kept before the oldest is reused (fewer under miri, whose
/// interpreter would spend minutes churning through a thousand of them; none
/// under loom, so its models reach a slot's reuse in a few steps).
const MIN_FREE: usize = if cfg!(ferrule_loom) {
    0
} else if cfg!(miri) {
    32
} else {
    1024
};
/// How many kinds of handle there can be (a power of two): generations step by this.
const KINDS: usize = 4;

/// The kinds of handle, each a table of its own.
#[derive(Clone, Copy)]
pub(crate) enum HandleKind {
    ToolCall = 1,
    HookConsultation = 2,
    ModelRequest = 3,
}

/// A table of live objects of type `T`, shared by every thread.
pub(crate) struct HandleTable<T> {
    /// Chunk `k` holds `FIRST_CHUNK << k` slots; a chunk never moves once made.
    chunks: [OnceLock<Box<[Slot<T>]>>; CHUNKS],
    free: Mutex<FreeSlots>,
    /// Every slot's first generation: the kind's number.
    first_generation: usize,
}

struct Slot<T> {
    entry: Mutex<Entry<T>>,
}

struct Entry<T> {
    generation: usize,
    object: Option<Arc<T>>,
}

struct FreeSlots {
    reusable: VecDeque<usize>,
    /// Slots ever handed out; the next new slot's index.
    used: usize,
}

impl<T> HandleTable<T> {
    /// An empty table of handles of `kind`.
    pub(crate) fn new(kind: HandleKind) -> Self {
        HandleTable {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            free: Mutex::new(FreeSlots { reusable: VecDeque::new(), used: 0 }),
            first_generation: kind as usize,
        }
    }

    /// Adds `object` and returns its handle (never 0), or `None` when the table is
    /// full.
    pub(crate) fn insert(&self, object: Arc<T>) -> Option<usize> {
        let index = self.claim_slot()?;
        let mut entry = self.make_slot(index)?.entry.lock().unwrap_or_else(|e| e.into_inner());
        entry.object = Some(object);
        Some(entry.generation << INDEX_BITS | index)
    }

    /// The object behind `handle`, if it is still there.
    pub(crate) fn get(&self, handle: usize) -> Option<Arc<T>> {
        let (index, generation) = split(handle);
        let entry = self.slot(index)?.entry.lock().unwrap_or_else(|e| e.into_inner());
        if entry.generation != generation {
            return None;
        }
        entry.object.clone()
    }

    /// Removes the object behind `handle` and returns it; `None` if it was already
    /// gone. Of two threads removing one handle, exactly one gets the object.
    pub(crate) fn remove(&self, handle: usize) -> Option<Arc<T>> {
        let (index, generation) = split(handle);
        let object = {
            let mut entry = self.slot(index)?.entry.lock().unwrap_or_else(|e| e.into_inner());
            if entry.generation != generation {
                return None;
            }
            let object = entry.object.take()?;
            entry.generation = next_generation(entry.generation);
            object
        };
        self.free.lock().unwrap_or_else(|e| e.into_inner()).reusable.push_back(index);
        Some(object)
    }

    fn claim_slot(&self) -> Option<usize> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.reusable.len() > MIN_FREE || free.used == capacity() {
            return free.reusable.pop_front();
        }
        let index = free.used;
        free.used += 1;
        Some(index)
    }

    /// The slot at `index`, making its chunk on first use; `None` past the end.
    fn make_slot(&self, index: usize) -> Option<&Slot<T>> {
        let (chunk, offset) = locate(index)?;
        let slots = self.chunks[chunk].get_or_init(|| {
            (0..first_chunk_len() << chunk)
                .map(|_| Slot { entry: Mutex::new(Entry { generation: self.first_generation, object: None }) })
                .collect()
        });
        slots.get(offset)
    }

    /// The slot at `index` if its chunk was made. A handle never issued (a host's
    /// garbage) finds nothing and makes nothing.
    fn slot(&self, index: usize) -> Option<&Slot<T>> {
        let (chunk, offset) = locate(index)?;
        self.chunks[chunk].get()?.get(offset)
    }
}

fn first_chunk_len() -> usize {
    1 << FIRST_CHUNK_BITS
}

fn capacity() -> usize {
    first_chunk_len() * ((1 << CHUNKS) - 1)
}

/// The chunk and offset of slot `index`: chunk `k` starts at `FIRST * (2^k - 1)`.
fn locate(index: usize) -> Option<(usize, usize)> {
    if index >= capacity() {
        return None;
    }
    let position = (index >> FIRST_CHUNK_BITS) + 1;
    let chunk = (usize::BITS - 1 - position.leading_zeros()) as usize;
    Some((chunk, index - first_chunk_len() * ((1 << chunk) - 1)))
}

fn split(handle: usize) -> (usize, usize) {
    (handle & INDEX_MASK, handle >> INDEX_BITS)
}

/// The generation after `generation`, of the same kind: the mask keeps the
/// remainder by [`KINDS`], and no kind is 0, so no handle is 0.
fn next_generation(generation: usize) -> usize {
    (generation + KINDS) & GENERATION_MASK
}

#[cfg(all(test, not(ferrule_loom)))]
mod tests {
    use super::*;

    #[test]
    fn slots_map_onto_chunks_without_gaps() {
        assert_eq!(locate(0), Some((0, 0)));
        assert_eq!(locate(255), Some((0, 255)));
        assert_eq!(locate(256), Some((1, 0)));
        assert_eq!(locate(767), Some((1, 511)));
        assert_eq!(locate(768), Some((2, 0)));
        assert_eq!(locate(capacity() - 1), Some((CHUNKS - 1, (first_chunk_len() << (CHUNKS - 1)) - 1)));
        assert_eq!(locate(capacity()), None);
    }

    #[test]
    fn a_removed_handle_is_stale_even_after_its_slot_is_reused() {
        let table = HandleTable::new(HandleKind::ToolCall);
        let first = table.insert(Arc::new("first")).unwrap();
        assert_ne!(first, 0);
        assert_eq!(table.get(first).as_deref(), Some(&"first"));
        assert_eq!(table.remove(first).as_deref(), Some(&"first"));
        assert!(table.get(first).is_none());
        assert!(table.remove(first).is_none());
        // Churn until the slot comes round again: the old handle stays stale.
        let mut reused = None;
        for i in 0..MIN_FREE * 3 {
            let handle = table.insert(Arc::new("later")).unwrap();
            if handle & INDEX_MASK == first & INDEX_MASK {
                reused = Some(handle);
                break;
            }
            if i % 2 == 0 {
                table.remove(handle);
            }
        }
        let reused = reused.expect("the slot was reused");
        assert_ne!(reused, first);
        assert!(table.get(first).is_none());
        assert_eq!(table.get(reused).as_deref(), Some(&"later"));
    }

    #[test]
    fn a_handle_of_one_kind_never_matches_in_another_kinds_table() {
        let calls = HandleTable::new(HandleKind::ToolCall);
        let requests = HandleTable::new(HandleKind::ModelRequest);
        let mut issued = Vec::new();
        for round in 0..MIN_FREE * 3 {
            let call = calls.insert(Arc::new(round)).unwrap();
            let request = requests.insert(Arc::new(round)).unwrap();
            assert!(requests.get(call).is_none() && calls.get(request).is_none(), "round {round}");
            issued.push((call, request));
            if round % 2 == 0 {
                calls.remove(call);
                requests.remove(request);
            }
        }
        for (call, request) in issued {
            assert!(requests.remove(call).is_none() && calls.remove(request).is_none());
        }
        // A generation wraps round within its kind, and never to 0.
        let last = GENERATION_MASK - (KINDS - 1 - HandleKind::HookConsultation as usize);
        assert_eq!(last % KINDS, HandleKind::HookConsultation as usize);
        assert_eq!(next_generation(last), HandleKind::HookConsultation as usize);
    }

    #[test]
    fn handles_that_were_never_issued_are_refused() {
        let table: HandleTable<u8> = HandleTable::new(HandleKind::ToolCall);
        for handle in [0, 1, 12345, usize::MAX, INDEX_MASK, 7 << INDEX_BITS, 0xdead_beef] {
            assert!(table.get(handle).is_none(), "{handle:#x}");
            assert!(table.remove(handle).is_none(), "{handle:#x}");
        }
        // Looking them up made no chunk.
        assert!(table.chunks.iter().all(|chunk| chunk.get().is_none()));
    }

    #[test]
    fn exactly_one_remover_wins() {
        let table = Arc::new(HandleTable::new(HandleKind::ToolCall));
        for _ in 0..if cfg!(miri) { 20 } else { 200 } {
            let handle = table.insert(Arc::new(1u32)).unwrap();
            let winners: usize = std::thread::scope(|scope| {
                let racers: Vec<_> =
                    (0..4).map(|_| scope.spawn(|| usize::from(table.remove(handle).is_some()))).collect();
                racers.into_iter().map(|r| r.join().unwrap()).sum()
            });
            assert_eq!(winners, 1);
        }
    }
}
