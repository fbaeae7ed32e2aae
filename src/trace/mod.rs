//! Traces of runs after the OpenTelemetry GenAI semantic conventions
//! (semantic conventions v1.38.0, GenAI in development status).
//!
//! A run is an `invoke_agent` span; each model request a `chat` span (kind
//! client) under it; each tool call an `execute_tool` span under it, and a run
//! of an agent called as a tool is an `invoke_agent` span under its call's.
//! Retries, approvals, hook decisions, handoffs and compaction are span events.
//! A run goes under the host's span when its input has a `trace_context`.
//!
//! Spans are recorded only when the host set a tracer ([`set_tracer`], C:
//! `ferrule_runtime_set_tracer`): without one a run makes none, and the cost
//! is one atomic load per run. Finished spans reach the tracer on one thread
//! of ferrule's (`ferrule-trace`), in the order they ended; at most
//! 4096 wait, and past that they are dropped (the logger says how
//! many).

pub(crate) mod chat;
mod config;
mod content;
mod context;
pub mod otlp;
mod run;
mod span;
mod tracer;

pub use config::TraceConfig;
pub use context::{SpanContext, SpanId, TraceContext, TraceId};
pub(crate) use run::RunTrace;
pub use run::{CallTrace, ToolSource};
pub(crate) use span::Span;
pub use span::{AttributeValue, Attributes, SpanData, SpanEvent, SpanKind, SpanStatus, StatusCode};
pub use tracer::{remove_tracer, set_tracer, HostTracer};
pub(crate) use tracer::{set_tracer_made, Tracer};
