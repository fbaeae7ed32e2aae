//! The GenAI client metrics, from the `chat` spans an exporter sends:
//! `gen_ai.client.operation.duration` (seconds) and
//! `gen_ai.client.token.usage` (tokens, by `gen_ai.token.type`), both
//! histograms with the conventions' advised buckets, exported as deltas.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::{
    metric, AggregationTemporality, Histogram, HistogramDataPoint, Metric, ResourceMetrics, ScopeMetrics,
};
use prost::Message;

use super::encode::{key_value, resource, scope, SCHEMA_URL};
use crate::log::unix_nanos;
use crate::trace::span::{AttributeValue, SpanData, StatusCode};

/// Bucket bounds of `gen_ai.client.operation.duration`, in seconds.
const DURATION_BOUNDS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/// Bucket bounds of `gen_ai.client.token.usage`.
const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];
/// Attribute sets a window keeps per instrument at most; more are left out.
const MAX_SERIES: usize = 1000;

/// One histogram's counts for one attribute set.
struct Series {
    attributes: Vec<(String, AttributeValue)>,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    buckets: Vec<u64>,
}

/// What was measured since the last export.
#[derive(Default)]
struct Window {
    start: u64,
    duration: HashMap<String, Series>,
    tokens: HashMap<String, Series>,
}

/// An exporter's metrics. Recorded from any thread; taken by its task.
pub(super) struct Metrics {
    window: Mutex<Window>,
}

impl Metrics {
    /// Metrics measured from now on.
    pub(super) fn new() -> Metrics {
        Metrics { window: Mutex::new(Window { start: unix_nanos(SystemTime::now()), ..Window::default() }) }
    }

    /// Records what a finished span measured, if it is a model request's.
    pub(super) fn record(&self, span: &SpanData) {
        let operation = span.attributes.get("gen_ai.operation.name");
        if operation != Some(&AttributeValue::from("chat")) {
            return;
        }
        let mut attributes: Vec<(String, AttributeValue)> = [
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "gen_ai.response.model",
            "server.address",
            "server.port",
        ]
        .iter()
        .filter_map(|key| span.attributes.get(key).map(|value| (key.to_string(), value.clone())))
        .collect();
        let failed = span.status.code == StatusCode::Error;
        if let Some(error) = span.attributes.get("error.type").filter(|_| failed) {
            attributes.push(("error.type".to_owned(), error.clone()));
        }
        let seconds = span.end_time_unix_nano.saturating_sub(span.start_time_unix_nano) as f64 / 1e9;
        let Ok(mut window) = self.window.lock() else { return };
        add(&mut window.duration, attributes.clone(), seconds, &DURATION_BOUNDS);
        if failed {
            return;
        }
        for (kind, key) in [("input", "gen_ai.usage.input_tokens"), ("output", "gen_ai.usage.output_tokens")] {
            if let Some(AttributeValue::Int(tokens)) = span.attributes.get(key) {
                let mut with_type = attributes.clone();
                with_type.push(("gen_ai.token.type".to_owned(), kind.into()));
                add(&mut window.tokens, with_type, *tokens as f64, &TOKEN_BOUNDS);
            }
        }
    }

    /// The request body exporting what was measured since the last time (by
    /// the instance `instance` of `service`), and a new window from now;
    /// `None` when nothing was.
    pub(super) fn take(&self, service: &str, instance: &str) -> Option<Vec<u8>> {
        let now = unix_nanos(SystemTime::now());
        let fresh = Window { start: now, ..Window::default() };
        let window = std::mem::replace(&mut *self.window.lock().ok()?, fresh);
        if window.duration.is_empty() && window.tokens.is_empty() {
            return None;
        }
        let histogram = |name: &str, description: &str, unit: &str, series: HashMap<String, Series>, bounds: &[f64]| {
            let points = series
                .into_values()
                .map(|s| HistogramDataPoint {
                    attributes: s.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
                    start_time_unix_nano: window.start,
                    time_unix_nano: now,
                    count: s.count,
                    sum: Some(s.sum),
                    bucket_counts: s.buckets,
                    explicit_bounds: bounds.to_vec(),
                    min: Some(s.min),
                    max: Some(s.max),
                    ..HistogramDataPoint::default()
                })
                .collect();
            Metric {
                name: name.to_owned(),
                description: description.to_owned(),
                unit: unit.to_owned(),
                data: Some(metric::Data::Histogram(Histogram {
                    data_points: points,
                    aggregation_temporality: AggregationTemporality::Delta as i32,
                })),
                ..Metric::default()
            }
        };
        let metrics = vec![
            histogram(
                "gen_ai.client.operation.duration",
                "GenAI operation duration",
                "s",
                window.duration,
                &DURATION_BOUNDS,
            ),
            histogram(
                "gen_ai.client.token.usage",
                "Number of input and output tokens used",
                "{token}",
                window.tokens,
                &TOKEN_BOUNDS,
            ),
        ];
        let request = ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(resource(service, instance)),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(scope()),
                    metrics: metrics.into_iter().filter(has_points).collect(),
                    schema_url: SCHEMA_URL.to_owned(),
                }],
                schema_url: SCHEMA_URL.to_owned(),
            }],
        };
        Some(request.encode_to_vec())
    }
}

fn has_points(metric: &Metric) -> bool {
    matches!(&metric.data, Some(metric::Data::Histogram(h)) if !h.data_points.is_empty())
}

/// Adds `value` to the series of `attributes`.
fn add(series: &mut HashMap<String, Series>, attributes: Vec<(String, AttributeValue)>, value: f64, bounds: &[f64]) {
    let key = format!("{attributes:?}");
    if !series.contains_key(&key) && series.len() >= MAX_SERIES {
        return;
    }
    let entry = series.entry(key).or_insert_with(|| Series {
        attributes,
        count: 0,
        sum: 0.0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        buckets: vec![0; bounds.len() + 1],
    });
    entry.count += 1;
    entry.sum += value;
    entry.min = entry.min.min(value);
    entry.max = entry.max.max(value);
    let bucket = bounds.iter().position(|bound| value <= *bound).unwrap_or(bounds.len());
    entry.buckets[bucket] += 1;
}
