//! The built-in OTLP/HTTP exporter (`trace.otlp`): an agent's finished spans,
//! batched and sent as protobuf to a collector, on ferrule's runtime.
//!
//! Spans wait in a bounded queue (2048 spans); a batch goes when it
//! holds 512 spans or half a second after its first, one batch at
//! a time. A collector that is down, slow or refusing costs only its own
//! batches: what does not fit the queue is dropped and counted, a failed
//! export is dropped, and each says so in the logs. A run never waits for it.

mod config;
mod encode;
mod metrics;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use tokio::sync::mpsc;

pub use config::OtlpConfig;

use super::span::SpanData;
use crate::error::{Error, Result};
use metrics::Metrics;

/// Spans waiting for export at most, per agent.
pub(crate) const QUEUED_SPANS: usize = 2048;
/// Spans sent in one export at most.
pub(crate) const BATCH_SPANS: usize = 512;
/// How long a batch waits for more spans after its first.
pub(crate) const BATCH_DELAY: Duration = Duration::from_millis(500);

/// An agent's exporter. Dropping it ends its task once the spans queued are sent.
pub(crate) struct Exporter {
    queue: mpsc::Sender<Arc<SpanData>>,
    dropped: Arc<AtomicU64>,
    metrics: Arc<Metrics>,
    /// Whether the metrics are exported (and so recorded).
    measures: bool,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

/// Where and how an exporter sends.
struct Destination {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The URL as logs show it: without credentials or query.
    shown: String,
    /// Where the metrics go; none when they are not exported.
    metrics_url: Option<reqwest::Url>,
    metrics_interval: Duration,
    service: String,
    /// This exporter's `service.instance.id`: the series it writes are its own.
    instance: String,
}

impl Exporter {
    /// Starts the exporter `config` describes (with the `OTEL_EXPORTER_OTLP_*`
    /// variables for what it leaves out) on ferrule's runtime. `INVALID_ARG`
    /// for an endpoint or header that cannot be one; `RESOURCE_EXHAUSTED`
    /// when the runtime cannot start.
    pub(crate) fn start(config: &OtlpConfig) -> Result<Exporter> {
        let settings = config.settings()?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
        for (name, value) in &settings.headers {
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| Error::invalid_arg(format!("trace.otlp.headers: {name:?} is not a header name")))?;
            let value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                Error::invalid_arg(format!("trace.otlp.headers: the value of {name} is not a header value"))
            })?;
            headers.insert(name, value);
        }
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::invalid_arg(format!("trace.otlp: the HTTP client could not be made: {e}")))?;
        let shown = config::shown(&settings.url);
        let destination = Destination {
            client,
            url: settings.url,
            shown,
            metrics_url: settings.metrics_url,
            metrics_interval: settings.metrics_interval,
            service: settings.service,
            instance: format!("{:032x}", fastrand::u128(..)),
        };
        let runtime = crate::runtime::get()?;
        let (queue, spans) = mpsc::channel(QUEUED_SPANS);
        let dropped = Arc::new(AtomicU64::new(0));
        let metrics = Arc::new(Metrics::new());
        let measures = destination.metrics_url.is_some();
        runtime.spawn(export(spans, destination, Arc::clone(&dropped), Arc::clone(&metrics)));
        Ok(Exporter { queue, dropped, metrics, measures })
    }

    /// Queues a finished span (dropped, and counted, when the queue is full)
    /// and records what it measured.
    pub(crate) fn offer(&self, span: Arc<SpanData>) {
        if self.measures {
            self.metrics.record(&span);
        }
        if self.queue.try_send(span).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The exporter's task: batches spans, and sends the metrics at their
/// interval, until the exporter is dropped and its queue is empty; then what
/// was measured since the last time.
async fn export(
    mut spans: mpsc::Receiver<Arc<SpanData>>,
    to: Destination,
    dropped: Arc<AtomicU64>,
    metrics: Arc<Metrics>,
) {
    let mut batch = Vec::with_capacity(BATCH_SPANS);
    let start = tokio::time::Instant::now() + to.metrics_interval;
    let mut interval = tokio::time::interval_at(start, to.metrics_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            span = spans.recv() => span,
            _ = interval.tick() => {
                send_metrics(&to, &metrics).await;
                continue;
            }
        };
        let Some(first) = first else { break };
        batch.push(first);
        let due = tokio::time::sleep(BATCH_DELAY);
        tokio::pin!(due);
        while batch.len() < BATCH_SPANS {
            tokio::select! {
                span = spans.recv() => match span {
                    Some(span) => batch.push(span),
                    None => break,
                },
                _ = &mut due => break,
            }
        }
        send(&to, &batch).await;
        batch.clear();
        let lost = dropped.swap(0, Ordering::Relaxed);
        if lost > 0 {
            crate::log::log!(Warn, "ferrule::trace", format!("{lost} spans were dropped: the OTLP exporter fell behind"),
                "dropped" => lost, "endpoint" => to.shown);
        }
    }
    send_metrics(&to, &metrics).await;
}

/// Sends what was measured since the last time, if anything was.
async fn send_metrics(to: &Destination, metrics: &Metrics) {
    let Some(url) = &to.metrics_url else { return };
    let Some(body) = metrics.take(&to.service, &to.instance) else { return };
    let outcome = to.client.post(url.clone()).body(body).send().await;
    let why = match outcome {
        Ok(response) if response.status().is_success() => return,
        Ok(response) => format!("the collector answered {}", response.status()),
        Err(error) => format!("the collector could not be reached: {}", without_url(&error)),
    };
    crate::log::log!(Warn, "ferrule::trace", format!("the metrics were not exported: {why}"),
        "endpoint" => config::shown(url));
}

/// Sends one batch; a failure is logged and the batch dropped.
async fn send(to: &Destination, batch: &[Arc<SpanData>]) {
    // Encoded on the blocking pool: a large batch would hold a worker runs share.
    let (service, instance, spans) = (to.service.clone(), to.instance.clone(), batch.to_vec());
    let encoding = move || encode::export_request(&service, &instance, &spans);
    let Ok(body) = tokio::task::spawn_blocking(encoding).await else {
        return;
    };
    let outcome = to.client.post(to.url.clone()).body(body).send().await;
    let why = match outcome {
        Ok(response) if response.status().is_success() => return,
        Ok(response) => format!("the collector answered {}", response.status()),
        Err(error) if error.is_timeout() => "the collector did not answer in time".to_owned(),
        Err(error) => format!("the collector could not be reached: {}", without_url(&error)),
    };
    crate::log::log!(Warn, "ferrule::trace", format!("{} spans were not exported: {why}", batch.len()),
        "endpoint" => to.shown, "spans" => batch.len() as u64);
}

/// An error of reqwest's, without the URL it repeats.
fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), &config::shown(url));
    }
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}
