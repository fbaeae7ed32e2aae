//! ferrule's handle table (`src/ffi/handle_table.rs`, the file itself) under
//! loom, which runs each model below in every interleaving of its threads'
//! lock operations (within a preemption bound) and fails on any that breaks an
//! assertion or deadlocks. Built with `cfg(ferrule_loom)` (build.rs), under
//! which the file takes its `Mutex` and `OnceLock` from [`sync`].

#[allow(dead_code)]
#[path = "../../src/ffi/handle_table.rs"]
mod handle_table;

pub(crate) mod sync;

#[cfg(test)]
mod handle_table_models;
