//! The agent configuration's `trace`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::otlp::OtlpConfig;

/// How an agent's runs are traced (`trace` in the agent configuration). Spans
/// are recorded when the host set a tracer (`ferrule_runtime_set_tracer`) or
/// the agent exports them (`otlp`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Whether spans carry what was said: the messages of each model request
    /// and its answer (`gen_ai.input.messages`, `gen_ai.output.messages`), the
    /// system prompt, and each tool call's arguments and result. Off by
    /// default; API keys and header values are never recorded.
    #[serde(default)]
    pub capture_content: bool,
    /// Whether requests to HTTP providers and MCP servers carry the W3C
    /// `traceparent` (and `tracestate`) of the span they belong to, so the
    /// service's own spans join the trace. Off by default.
    #[serde(default)]
    pub propagate: bool,
    /// Export the agent's spans over OTLP/HTTP to a collector, whether or not
    /// the host set a tracer; `{}` takes everything from the usual
    /// `OTEL_EXPORTER_OTLP_*` variables.
    #[serde(default)]
    pub otlp: Option<OtlpConfig>,
}
