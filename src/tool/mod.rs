//! Tools: a definition the model sees (name, description, schema, options) plus the
//! function that performs a call.

mod invocation;
mod options;
mod result;
mod schema;

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

pub(crate) use invocation::Caller;
pub use invocation::{Invocation, UpdateReceiver, UpdateSink};
pub use options::{Execution, OnError, ToolOptions};
pub(crate) use result::json_kind;
pub use result::{ToolCompletion, ToolResult};
pub use schema::InputSchema;

use crate::error::{Error, ErrorCode, Result};
use crate::trace::ToolSource;
use crate::BoxFuture;

/// Longest tool name every provider accepts.
const MAX_NAME_LEN: usize = 64;

/// How one call ended, as its function reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The function produced a result (which may itself be an error result).
    Completed(ToolResult),
    /// The function failed; the text, written for the model, says why.
    Failed(String),
    /// The function produced something that is not a valid result (or update);
    /// the text says what was wrong with it.
    Invalid(String),
}

/// Performs calls of one tool. Shared by every run of an agent, so it must be
/// safe to use from several threads at once.
///
/// The futures of one batch are polled together on the run's task: they run
/// concurrently, and a tool that blocks or computes for long must move that work
/// off the runtime (`tokio::task::spawn_blocking`) like any async code.
pub trait ToolFunction: Send + Sync + 'static {
    /// Starts one call; the future resolves with its outcome. ferrule bounds the
    /// future by the tool's timeout and drops it when the run is cancelled.
    fn invoke(&self, invocation: Invocation) -> BoxFuture<'static, ToolOutcome>;

    /// Whether calls need [`Invocation::caller`]: the calling run's side of
    /// the call, which a function that starts runs of its own (an agent called
    /// as a tool) nests them in.
    fn starts_runs(&self) -> bool {
        false
    }

    /// What the tool is, for the spans of its calls.
    fn source(&self) -> ToolSource {
        ToolSource::Function
    }
}

impl<F, Fut> ToolFunction for F
where
    F: Fn(Invocation) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutcome> + Send + 'static,
{
    fn invoke(&self, invocation: Invocation) -> BoxFuture<'static, ToolOutcome> {
        Box::pin(self(invocation))
    }
}

/// A checked tool definition (name, description, compiled schema, options) that
/// has no function yet. Splitting the two lets a caller validate everything before
/// handing over the function (and, through the C ABI, the host's user data).
pub struct ToolSpec {
    name: String,
    description: String,
    schema: InputSchema,
    options: ToolOptions,
}

impl ToolSpec {
    /// Checks the parts. The name must be 1 to 64 characters of `A-Z a-z 0-9 _ -`
    /// (what every provider accepts); the schema is checked and compiled here.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        options: ToolOptions,
    ) -> Result<Self> {
        let name = name.into();
        check_name(&name)?;
        let schema = InputSchema::compile(schema)
            .map_err(|e| Error::new(e.code, format!("tool \"{name}\": input schema {}", e.message)))?;
        Ok(ToolSpec { name, description: description.into(), schema, options })
    }

    /// A definition whose schema was compiled already (a tool from an MCP
    /// server, compiled in the dialect it declares); the name is checked as
    /// in [`new`](Self::new).
    pub fn with_schema(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: InputSchema,
        options: ToolOptions,
    ) -> Result<Self> {
        let name = name.into();
        check_name(&name)?;
        Ok(ToolSpec { name, description: description.into(), schema, options })
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's options.
    pub fn options(&self) -> &ToolOptions {
        &self.options
    }

    /// Attaches the function that performs calls.
    pub fn implement(self, function: impl ToolFunction) -> Tool {
        Tool { spec: self, function: Arc::new(function) }
    }
}

/// A tool an agent can run: immutable once built.
pub struct Tool {
    spec: ToolSpec,
    function: Arc<dyn ToolFunction>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.spec.name).field("options", &self.spec.options).finish()
    }
}

impl Tool {
    /// A tool from its parts; see [`ToolSpec::new`] for the checks.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        options: ToolOptions,
        function: impl ToolFunction,
    ) -> Result<Self> {
        Ok(ToolSpec::new(name, description, schema, options)?.implement(function))
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// What the tool does, for the model.
    pub fn description(&self) -> &str {
        &self.spec.description
    }

    /// The compiled input schema.
    pub fn schema(&self) -> &InputSchema {
        &self.spec.schema
    }

    /// The tool's options.
    pub fn options(&self) -> &ToolOptions {
        &self.spec.options
    }

    pub(crate) fn function(&self) -> &Arc<dyn ToolFunction> {
        &self.function
    }
}

/// `INVALID_ARG` unless `name` is 1 to 64 characters of `A-Z a-z 0-9 _ -`.
pub(crate) fn check_name(name: &str) -> Result<()> {
    let valid_chars = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if name.is_empty() || name.len() > MAX_NAME_LEN || !valid_chars {
        return Err(Error::new(
            ErrorCode::InvalidArg,
            format!("tool name {name:?} is invalid: use 1 to {MAX_NAME_LEN} characters of A-Z, a-z, 0-9, _ and -"),
        ));
    }
    Ok(())
}
