//! The C ABI (`include/ferrule.h`). The only module with `extern "C"`: it converts
//! handles, strings and JSON, and calls the Rust API. No agent logic lives here.
//!
//! Conventions (DESIGN section 2): fallible functions return `ferrule_error *`
//! (NULL on success) and write results to trailing out-parameters only on success;
//! strings in are `(ptr, len)` UTF-8; every pointer is NULL-checked; every body runs
//! inside one panic boundary.

#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

mod agent;
mod agent_tool;
mod boundary;
mod debug;
mod error;
mod foreign_data;
mod handle_table;
mod hook;
mod host_request;
mod logger;
mod model;
mod model_request;
mod run;
mod string;
mod tool;
mod tool_call;
mod tracer;
mod version;

#[cfg(test)]
mod abi_tests;

pub use agent::*;
pub use agent_tool::*;
pub use debug::*;
pub use error::*;
pub use hook::*;
pub use host_request::ferrule_cancel_fn;
pub use logger::*;
pub use model::*;
pub use model_request::*;
pub use run::*;
pub use string::*;
pub use tool::*;
pub use tool_call::*;
pub use tracer::*;
pub use version::*;
