//! `trace.otlp` in the agent configuration, and the usual
//! `OTEL_EXPORTER_OTLP_*` variables for what it leaves out.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, Result};

/// The collector an agent's spans are exported to over OTLP/HTTP (protobuf).
/// What is left out comes from the environment, as OpenTelemetry's SDKs read
/// it: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) or
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (with `/v1/traces` added), else
/// `http://localhost:4318/v1/traces`; `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or
/// `OTEL_EXPORTER_OTLP_HEADERS`; `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (ms, default 10000); `OTEL_SERVICE_NAME`.
#[derive(Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OtlpConfig {
    /// The collector's traces URL, such as `http://127.0.0.1:4318/v1/traces`
    /// (`http` or `https`).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Headers sent with every export (an API key, say); their values never
    /// appear in a log.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Bound on one export in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The `service.name` of the spans' resource (default `OTEL_SERVICE_NAME`,
    /// else `ferrule`).
    #[serde(default)]
    pub service_name: Option<String>,
    /// Whether the GenAI client metrics are exported too (default true).
    #[serde(default = "exported")]
    pub metrics: bool,
    /// The collector's metrics URL (sent the same headers): by default the
    /// traces URL with `/v1/metrics` in place of `/v1/traces`; without one
    /// (a traces URL of another shape) no metrics are sent.
    #[serde(default)]
    pub metrics_endpoint: Option<String>,
    /// How often the metrics are exported, in milliseconds (default
    /// `OTEL_METRIC_EXPORT_INTERVAL`, else 60000); what is left is exported
    /// when the agent goes.
    #[serde(default)]
    pub metrics_interval_ms: Option<u64>,
}

impl Default for OtlpConfig {
    fn default() -> Self {
        OtlpConfig {
            endpoint: None,
            headers: None,
            timeout_ms: None,
            service_name: None,
            metrics: true,
            metrics_endpoint: None,
            metrics_interval_ms: None,
        }
    }
}

impl std::fmt::Debug for OtlpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = self.endpoint.as_deref().and_then(|endpoint| reqwest::Url::parse(endpoint).ok());
        let names: Option<Vec<&String>> = self.headers.as_ref().map(|headers| headers.keys().collect());
        f.debug_struct("OtlpConfig")
            .field("endpoint", &url.as_ref().map(shown))
            .field("headers", &names)
            .field("timeout_ms", &self.timeout_ms)
            .field("service_name", &self.service_name)
            .field(
                "metrics_endpoint",
                &self.metrics_endpoint.as_deref().and_then(|e| reqwest::Url::parse(e).ok()).as_ref().map(shown),
            )
            .field("metrics_interval_ms", &self.metrics_interval_ms)
            .finish()
    }
}

/// An exporter's settings, the configuration and the environment together.
pub(super) struct Settings {
    pub(super) url: reqwest::Url,
    pub(super) metrics_url: Option<reqwest::Url>,
    pub(super) metrics_interval: Duration,
    pub(super) headers: Vec<(String, String)>,
    pub(super) timeout: Duration,
    pub(super) service: String,
}

const DEFAULT_TIMEOUT_MS: u64 = 10_000;
const DEFAULT_METRICS_INTERVAL_MS: u64 = 60_000;

fn exported() -> bool {
    true
}

/// `endpoint` as an http(s) URL; `INVALID_ARG` naming `field` (never the
/// URL, which may hold a secret).
fn http_url(endpoint: &str, field: &str) -> Result<reqwest::Url> {
    reqwest::Url::parse(endpoint)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
        .ok_or_else(|| Error::invalid_arg(format!("{field}: not an http(s) URL (not shown: it may hold a secret)")))
}

impl OtlpConfig {
    pub(super) fn settings(&self) -> Result<Settings> {
        let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.trim().is_empty());
        let endpoint = match &self.endpoint {
            Some(endpoint) => endpoint.clone(),
            None => variable("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").unwrap_or_else(|| {
                let base = variable("OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_else(|| "http://localhost:4318".into());
                format!("{}/v1/traces", base.trim_end_matches('/'))
            }),
        };
        let url = http_url(&endpoint, "trace.otlp.endpoint")?;
        // The metrics go to the same collector, with the same headers: never
        // to another host the trace headers were not meant for.
        let metrics_url = match &self.metrics_endpoint {
            Some(endpoint) => Some(http_url(endpoint, "trace.otlp.metrics_endpoint")?),
            None => url.path().strip_suffix("/v1/traces").map(|base| {
                let mut metrics = url.clone();
                metrics.set_path(&format!("{base}/v1/metrics"));
                metrics
            }),
        };
        let metrics_url = metrics_url.filter(|_| self.metrics);
        let interval_ms = self
            .metrics_interval_ms
            .or_else(|| variable("OTEL_METRIC_EXPORT_INTERVAL").and_then(|ms| ms.trim().parse().ok()))
            .unwrap_or(DEFAULT_METRICS_INTERVAL_MS);
        let headers = match &self.headers {
            Some(headers) => headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            None => variable("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
                .or_else(|| variable("OTEL_EXPORTER_OTLP_HEADERS"))
                .map(|list| parse_headers(&list))
                .transpose()?
                .unwrap_or_default(),
        };
        let timeout_ms = match self.timeout_ms {
            Some(ms) => ms,
            None => variable("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
                .or_else(|| variable("OTEL_EXPORTER_OTLP_TIMEOUT"))
                .and_then(|ms| ms.trim().parse().ok())
                .unwrap_or(DEFAULT_TIMEOUT_MS),
        };
        let service = self.service_name.clone().or_else(|| variable("OTEL_SERVICE_NAME")).unwrap_or("ferrule".into());
        Ok(Settings {
            url,
            metrics_url,
            metrics_interval: Duration::from_millis(interval_ms.max(1)),
            headers,
            timeout: Duration::from_millis(timeout_ms.max(1)),
            service,
        })
    }
}

/// `url` as logs show it: scheme, host, port and path, without user, password
/// or query, which may hold secrets.
pub(super) fn shown(url: &reqwest::Url) -> String {
    let port = url.port().map(|port| format!(":{port}")).unwrap_or_default();
    format!("{}://{}{port}{}", url.scheme(), url.host_str().unwrap_or_default(), url.path())
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs joined by commas, values
/// percent-encoded.
fn parse_headers(list: &str) -> Result<Vec<(String, String)>> {
    list.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').ok_or_else(|| {
                Error::invalid_arg("OTEL_EXPORTER_OTLP_HEADERS: a header is not key=value (its value is not shown)")
            })?;
            let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy().into_owned();
            Ok((key.trim().to_owned(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lists_read_as_the_sdks_read_them() {
        let headers = parse_headers("api-key=secret%20value, x-team = ops ,").unwrap();
        assert_eq!(headers, [("api-key".to_owned(), "secret value".to_owned()), ("x-team".into(), "ops".into())]);
        let error = parse_headers("broken").unwrap_err();
        assert!(!error.message.contains("broken"), "{}", error.message);
    }

    #[test]
    fn credentials_in_the_endpoint_are_never_shown() {
        let url = reqwest::Url::parse("https://user:TOKEN@otlp.example:4318/v1/traces?key=SECRET").unwrap();
        assert_eq!(shown(&url), "https://otlp.example:4318/v1/traces");
        let config = OtlpConfig {
            endpoint: Some(url.to_string()),
            headers: Some([("x-key".to_owned(), "HEADER-SECRET".to_owned())].into()),
            ..OtlpConfig::default()
        };
        let debug = format!("{config:?}");
        assert!(!debug.contains("TOKEN") && !debug.contains("SECRET"), "{debug}");
    }

    #[test]
    fn metrics_go_to_the_traces_collector_or_nowhere() {
        let metrics = |config: OtlpConfig| config.settings().unwrap().metrics_url.map(|url| url.to_string());
        let traces = |endpoint: &str| OtlpConfig { endpoint: Some(endpoint.into()), ..OtlpConfig::default() };
        assert_eq!(metrics(traces("http://c:4318/v1/traces")).as_deref(), Some("http://c:4318/v1/metrics"));
        assert_eq!(metrics(traces("http://c:4318/otlp/v1/traces")).as_deref(), Some("http://c:4318/otlp/v1/metrics"));
        assert_eq!(metrics(traces("http://c:4318/ingest")), None, "no guess at another path");
        assert_eq!(metrics(OtlpConfig { metrics: false, ..traces("http://c:4318/v1/traces") }), None);
        let explicit = OtlpConfig { metrics_endpoint: Some("http://c:4318/m".into()), ..traces("http://c:4318/t") };
        assert_eq!(metrics(explicit).as_deref(), Some("http://c:4318/m"));
    }

    #[test]
    fn the_endpoint_is_an_http_url() {
        let config = |endpoint: &str| OtlpConfig { endpoint: Some(endpoint.into()), ..OtlpConfig::default() };
        assert!(config("http://127.0.0.1:4318/v1/traces").settings().is_ok());
        for bad in ["ftp://x/v1/traces", "not a url", "http://"] {
            assert!(config(bad).settings().is_err(), "{bad}");
        }
    }
}
