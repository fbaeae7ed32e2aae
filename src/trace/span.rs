//! A span: one operation of a run (the run itself, a model request, a tool
//! call), recorded while it lasts and handed on when it ends.

use std::sync::Arc;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::context::{SpanContext, SpanId, TraceId};
use super::tracer::Tracer;
use crate::log::unix_nanos;

/// An attribute's value.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum AttributeValue {
    /// Text.
    String(String),
    /// A whole number.
    Int(i64),
    /// A number with a fraction.
    Double(f64),
    /// True or false.
    Bool(bool),
    /// A list of texts.
    Strings(Vec<String>),
}

impl From<&str> for AttributeValue {
    fn from(value: &str) -> Self {
        AttributeValue::String(value.to_owned())
    }
}

impl From<String> for AttributeValue {
    fn from(value: String) -> Self {
        AttributeValue::String(value)
    }
}

impl From<u64> for AttributeValue {
    fn from(value: u64) -> Self {
        AttributeValue::Int(i64::try_from(value).unwrap_or(i64::MAX))
    }
}

impl From<u32> for AttributeValue {
    fn from(value: u32) -> Self {
        AttributeValue::Int(value.into())
    }
}

impl From<bool> for AttributeValue {
    fn from(value: bool) -> Self {
        AttributeValue::Bool(value)
    }
}

impl From<Vec<String>> for AttributeValue {
    fn from(value: Vec<String>) -> Self {
        AttributeValue::Strings(value)
    }
}

/// Attributes in the order they were set, written as a JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attributes(pub Vec<(String, AttributeValue)>);

impl Attributes {
    /// Sets `key` (a later value replaces an earlier one).
    pub fn set(&mut self, key: &str, value: AttributeValue) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, old)) => *old = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&AttributeValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Serialize for Attributes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl JsonSchema for Attributes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Attributes".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = generator.subschema_for::<std::collections::BTreeMap<String, AttributeValue>>();
        schema.insert("description".into(), "Key-values, in the order they were set.".into());
        schema
    }
}

/// What kind of operation a span is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpanKind {
    /// Work within ferrule: a run, a tool call.
    Internal,
    /// A request to another service: a model request.
    Client,
}

/// How a span ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusCode {
    /// Nothing said: it did not fail.
    Unset,
    /// It failed (`error.type` says how).
    Error,
}

/// A span's status.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SpanStatus {
    /// Whether it failed.
    pub code: StatusCode,
    /// Why, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Something that happened at a moment of a span: a retry, an approval, a
/// hook's decision.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SpanEvent {
    /// What happened (`ferrule.retry`, `ferrule.hook`, ...).
    pub name: String,
    /// When, in nanoseconds since the Unix epoch.
    pub time_unix_nano: u64,
    /// Its details.
    pub attributes: Attributes,
}

/// A finished span, as the host's tracer receives it (JSON) and the OTLP
/// exporter sends it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SpanData {
    /// The trace, 32 lower-case hex digits.
    #[serde(serialize_with = "hex")]
    #[schemars(with = "String")]
    pub trace_id: TraceId,
    /// The span, 16 lower-case hex digits.
    #[serde(serialize_with = "hex")]
    #[schemars(with = "String")]
    pub span_id: SpanId,
    /// The span it is part of (another of ferrule's, or the host's span of
    /// the run input's `trace_context`); null for the root of a trace.
    #[serde(serialize_with = "hex_or_null")]
    #[schemars(with = "Option<String>")]
    pub parent_span_id: Option<SpanId>,
    /// The W3C `tracestate` the trace carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    /// `invoke_agent {agent}`, `chat {model}` or `execute_tool {tool}`.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// When it began, in nanoseconds since the Unix epoch.
    pub start_time_unix_nano: u64,
    /// When it ended.
    pub end_time_unix_nano: u64,
    /// Its attributes, after the OpenTelemetry GenAI conventions.
    pub attributes: Attributes,
    /// What happened during it.
    pub events: Vec<SpanEvent>,
    /// Whether it failed.
    pub status: SpanStatus,
    /// Events past the first 128, left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_events: u32,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// Events a span keeps at most, as OpenTelemetry's SDKs do.
pub(crate) const MAX_EVENTS: usize = 128;

fn hex<S: Serializer, T: std::fmt::Display>(id: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(id)
}

fn hex_or_null<S: Serializer>(id: &Option<SpanId>, serializer: S) -> Result<S::Ok, S::Error> {
    match id {
        Some(id) => serializer.collect_str(id),
        None => serializer.serialize_none(),
    }
}

/// A span being recorded. Ended once: by [`Span::end`], or when dropped (a
/// run cancelled mid-operation), then with the `error.type` `cancelled`.
pub(crate) struct Span {
    /// `None` once ended.
    data: Option<SpanData>,
    context: SpanContext,
    tracer: Arc<Tracer>,
}

impl Span {
    /// Starts a span at `context`, under `parent`.
    pub(crate) fn start(
        tracer: &Arc<Tracer>,
        context: SpanContext,
        parent: Option<SpanId>,
        name: String,
        kind: SpanKind,
    ) -> Span {
        let data = SpanData {
            trace_id: context.trace_id,
            span_id: context.span_id,
            parent_span_id: parent,
            tracestate: context.tracestate.clone(),
            name,
            kind,
            start_time_unix_nano: unix_nanos(SystemTime::now()),
            end_time_unix_nano: 0,
            attributes: Attributes::default(),
            events: Vec::new(),
            status: SpanStatus { code: StatusCode::Unset, message: None },
            dropped_events: 0,
        };
        Span { data: Some(data), context, tracer: Arc::clone(tracer) }
    }

    /// Where the span sits, for its children and for `traceparent`.
    pub(crate) fn context(&self) -> &SpanContext {
        &self.context
    }

    /// Sets an attribute.
    pub(crate) fn set(&mut self, key: &str, value: impl Into<AttributeValue>) {
        if let Some(data) = &mut self.data {
            data.attributes.set(key, value.into());
        }
    }

    /// Adds an event, now.
    pub(crate) fn event(&mut self, name: &str, attributes: Vec<(&str, AttributeValue)>) {
        if let Some(data) = &mut self.data {
            if data.events.len() >= MAX_EVENTS {
                data.dropped_events += 1;
                return;
            }
            let attributes = Attributes(attributes.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
            let time_unix_nano = unix_nanos(SystemTime::now());
            data.events.push(SpanEvent { name: name.to_owned(), time_unix_nano, attributes });
        }
    }

    /// Marks the span failed: `error.type` and the status's message.
    pub(crate) fn fail(&mut self, error_type: &str, message: &str) {
        self.set("error.type", error_type);
        if let Some(data) = &mut self.data {
            data.status = SpanStatus { code: StatusCode::Error, message: Some(message.to_owned()) };
        }
    }

    /// Ends the span now and hands it on.
    pub(crate) fn end(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some(mut data) = self.data.take() {
            data.end_time_unix_nano = unix_nanos(SystemTime::now()).max(data.start_time_unix_nano);
            self.tracer.finished(data);
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if self.data.as_ref().is_some_and(|data| data.status.code != StatusCode::Error) {
            self.fail("cancelled", "the operation was abandoned: its run was cancelled or ended");
        }
        self.finish();
    }
}
