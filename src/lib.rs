//! ferrule: an LLM agent core with a C ABI.
//!
//! An [`agent::Agent`] is built once from a JSON configuration and a set of tools;
//! it starts any number of concurrent runs. A run calls the model, checks every
//! tool call, executes each batch (in parallel or in order, with timeouts and
//! cancellation), feeds the results back and streams events until it ends. The
//! same engine is exported to C in [`ffi`] (see `include/ferrule.h`).

#![warn(missing_docs)]

pub mod agent;
pub mod builtin;
pub mod error;
pub mod ffi;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod hook;
mod json;
pub mod log;
pub mod mcp;
pub mod message;
mod panic;
pub mod provider;
pub mod runtime;
pub mod schema;
#[cfg(test)]
#[path = "../tests/it/common/fixtures.rs"]
mod test_fixtures;
#[cfg(test)]
mod test_transcripts;
pub mod tool;
pub mod trace;

pub use error::{Error, ErrorCode, Result};

/// A boxed, sendable future, as the [`provider::Generator`] and
/// [`tool::ToolFunction`] traits return them.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
