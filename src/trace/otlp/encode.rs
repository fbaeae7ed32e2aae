//! Spans as an OTLP `ExportTraceServiceRequest` (protobuf).

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;

use crate::trace::span::{AttributeValue, Attributes, SpanData, SpanKind, StatusCode};

/// The version of the semantic conventions the spans follow.
pub(crate) const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.38.0";

/// The request body exporting `spans` from the service `service`.
pub(crate) fn export_request(service: &str, instance: &str, spans: &[std::sync::Arc<SpanData>]) -> Vec<u8> {
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource(service, instance)),
            scope_spans: vec![ScopeSpans {
                scope: Some(scope()),
                spans: spans.iter().map(|span| proto_span(span)).collect(),
                schema_url: SCHEMA_URL.to_owned(),
            }],
            schema_url: SCHEMA_URL.to_owned(),
        }],
    };
    request.encode_to_vec()
}

/// The resource of the service `service` (this instance of it, `instance`),
/// as ferrule describes it.
pub(super) fn resource(service: &str, instance: &str) -> Resource {
    Resource {
        attributes: vec![
            key_value("service.name", &AttributeValue::String(service.to_owned())),
            key_value("service.instance.id", &AttributeValue::String(instance.to_owned())),
            key_value("telemetry.sdk.name", &AttributeValue::from("ferrule")),
            key_value("telemetry.sdk.language", &AttributeValue::from("rust")),
            key_value("telemetry.sdk.version", &AttributeValue::from(env!("CARGO_PKG_VERSION"))),
        ],
        ..Resource::default()
    }
}

/// The instrumentation scope `ferrule`.
pub(super) fn scope() -> InstrumentationScope {
    InstrumentationScope {
        name: "ferrule".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..InstrumentationScope::default()
    }
}

fn proto_span(data: &SpanData) -> Span {
    Span {
        trace_id: data.trace_id.0.to_vec(),
        span_id: data.span_id.0.to_vec(),
        trace_state: data.tracestate.clone().unwrap_or_default(),
        parent_span_id: data.parent_span_id.map(|id| id.0.to_vec()).unwrap_or_default(),
        // Sampled: every span ferrule records is.
        flags: 0x01,
        name: data.name.clone(),
        kind: match data.kind {
            SpanKind::Internal => span::SpanKind::Internal,
            SpanKind::Client => span::SpanKind::Client,
        } as i32,
        start_time_unix_nano: data.start_time_unix_nano,
        end_time_unix_nano: data.end_time_unix_nano,
        attributes: key_values(&data.attributes),
        events: data
            .events
            .iter()
            .map(|event| span::Event {
                time_unix_nano: event.time_unix_nano,
                name: event.name.clone(),
                attributes: key_values(&event.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        dropped_events_count: data.dropped_events,
        status: Some(Status {
            message: data.status.message.clone().unwrap_or_default(),
            code: match data.status.code {
                StatusCode::Unset => 0,
                StatusCode::Error => 2,
            },
        }),
        ..Span::default()
    }
}

fn key_values(attributes: &Attributes) -> Vec<KeyValue> {
    attributes.0.iter().map(|(key, value)| key_value(key, value)).collect()
}

pub(super) fn key_value(key: &str, value: &AttributeValue) -> KeyValue {
    KeyValue { key: key.to_owned(), value: Some(any(value)), ..KeyValue::default() }
}

fn any(value: &AttributeValue) -> AnyValue {
    let value = match value {
        AttributeValue::String(text) => any_value::Value::StringValue(text.clone()),
        AttributeValue::Int(n) => any_value::Value::IntValue(*n),
        AttributeValue::Double(x) => any_value::Value::DoubleValue(*x),
        AttributeValue::Bool(b) => any_value::Value::BoolValue(*b),
        AttributeValue::Strings(texts) => any_value::Value::ArrayValue(ArrayValue {
            values: texts
                .iter()
                .map(|text| AnyValue { value: Some(any_value::Value::StringValue(text.clone())) })
                .collect(),
        }),
    };
    AnyValue { value: Some(value) }
}
