//! Provider failures: classified by HTTP status or by the error object in a body
//! or an in-band stream event, with the provider's own message, and never
//! carrying the API key.

use aho_corasick::AhoCorasick;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::{Error, ErrorCode};
use crate::provider::classify_status;

/// A failed attempt, with what the retry loop needs to know about it.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: Error,
    /// The provider's explicit word (`x-should-retry`), when it gave one.
    pub(crate) should_retry: Option<bool>,
    /// How long the provider asked us to wait (`retry-after-ms`, `retry-after`).
    pub(crate) retry_after: Option<Duration>,
    /// The `code` and `param` of the provider's error object, when it had them
    /// (`previous_response_not_found`, `previous_response_id`).
    pub(crate) provider_code: Option<String>,
    pub(crate) param: Option<String>,
}

impl Failure {
    pub(crate) fn new(error: Error) -> Self {
        Failure { error, should_retry: None, retry_after: None, provider_code: None, param: None }
    }

    /// A failure no other attempt can mend.
    pub(crate) fn not_retried(error: Error) -> Self {
        Failure { should_retry: Some(false), ..Failure::new(error) }
    }

    /// Whether another attempt may succeed: the provider's word if it gave one,
    /// else rate limits, overload, server errors, network failures and timeouts.
    pub(crate) fn is_retryable(&self) -> bool {
        self.should_retry.unwrap_or(matches!(
            self.error.code,
            ErrorCode::ProviderRateLimited
                | ErrorCode::ProviderOverloaded
                | ErrorCode::ProviderServer
                | ErrorCode::ProviderNetwork
                | ErrorCode::Timeout
        ))
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::new(error)
    }
}

/// The failure for an HTTP error response.
pub(crate) fn from_response(provider: &str, status: u16, headers: &HeaderMap, body: &str) -> Failure {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let object = parsed.as_ref().map(error_object);
    let code = match object.and_then(code_from_object) {
        // A body that names its class refines the status (Anthropic's 529 overloaded_error).
        Some(code) if code != ErrorCode::ProviderInvalidRequest => code,
        _ => classify_status(status),
    };
    let detail = object.map(describe).unwrap_or_else(|| body.trim().chars().take(300).collect());
    let error = Error::new(code, format!("{provider} returned HTTP {status}: {detail}"));
    let field = |key: &str| Some(object?.get(key)?.as_str()?.to_owned());
    Failure {
        error,
        should_retry: header(headers, "x-should-retry").and_then(|v| v.parse().ok()),
        retry_after: retry_after(headers).or_else(|| object.and_then(retry_delay)),
        provider_code: field("code"),
        param: field("param"),
    }
}

/// The error for an error object inside a stream (Anthropic `error` events,
/// Responses `error` / `response.failed`, OpenAI-compatible error chunks).
pub(crate) fn in_band(provider: &str, value: &Value) -> Error {
    let object = error_object(value);
    let code = code_from_object(object).unwrap_or(ErrorCode::ProviderServer);
    Error::new(code, format!("{provider} reported an error in the stream: {}", describe(object)))
}

/// `{"error": {...}}` or the object itself.
fn error_object(value: &Value) -> &Value {
    match value.get("error") {
        Some(inner) if inner.is_object() => inner,
        _ => value,
    }
}

fn code_from_object(object: &Value) -> Option<ErrorCode> {
    // Google answers a bad key with 400 INVALID_ARGUMENT; its reason says which.
    if details(object).any(|detail| detail.get("reason").and_then(Value::as_str) == Some("API_KEY_INVALID")) {
        return Some(ErrorCode::ProviderAuth);
    }
    let numeric = ["status_code", "status", "code"].iter().find_map(|k| object.get(*k)?.as_u64());
    if let Some(status) = numeric.filter(|s| (400..600).contains(s)) {
        return Some(classify_status(status as u16));
    }
    // OpenAI's `code` is the finer name (`model_not_found` under `invalid_request_error`).
    ["code", "type", "status"].iter().find_map(|k| code_from_name(object.get(*k)?.as_str()?))
}

/// The `details` of a Google error object.
fn details(object: &Value) -> impl Iterator<Item = &Value> {
    object.get("details").and_then(Value::as_array).into_iter().flatten()
}

/// Google's `RetryInfo.retryDelay` (`"34.4s"`), as `retry-after` would say it;
/// a delay of nothing (or less) says nothing, and the backoff applies.
fn retry_delay(object: &Value) -> Option<Duration> {
    let delay = details(object).find_map(|detail| detail.get("retryDelay")?.as_str())?;
    Some(seconds(delay.strip_suffix('s')?.parse().ok()?)).filter(|wait| !wait.is_zero())
}

fn code_from_name(name: &str) -> Option<ErrorCode> {
    Some(match name {
        "authentication_error" | "permission_error" | "invalid_api_key" => ErrorCode::ProviderAuth,
        "not_found_error" | "model_not_found" => ErrorCode::ProviderNotFound,
        "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => ErrorCode::ProviderRateLimited,
        "overloaded_error" | "server_is_overloaded" | "slow_down" => ErrorCode::ProviderOverloaded,
        "api_error" | "server_error" | "internal_error" => ErrorCode::ProviderServer,
        "invalid_request_error" | "request_too_large" | "unsupported_parameter" => ErrorCode::ProviderInvalidRequest,
        // Google's canonical codes (`status`).
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => ErrorCode::ProviderAuth,
        "NOT_FOUND" => ErrorCode::ProviderNotFound,
        "RESOURCE_EXHAUSTED" => ErrorCode::ProviderRateLimited,
        "UNAVAILABLE" => ErrorCode::ProviderOverloaded,
        "INTERNAL" => ErrorCode::ProviderServer,
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" => ErrorCode::ProviderInvalidRequest,
        _ => return None,
    })
}

/// `type (code): message`, with whichever of the three the object has.
fn describe(object: &Value) -> String {
    let message = object.get("message").and_then(Value::as_str).unwrap_or("no message");
    let names: Vec<&str> = ["type", "code", "status"].iter().filter_map(|k| object.get(*k)?.as_str()).collect();
    match names.as_slice() {
        [] => message.to_owned(),
        [kind] => format!("{kind}: {message}"),
        [kind, code, ..] if kind == code => format!("{kind}: {message}"),
        [kind, code, ..] => format!("{kind} ({code}): {message}"),
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

/// `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date.
/// Numbers past what a `Duration` holds (`inf`, `1e300`) mean "very long" (the
/// retry loop caps every wait); `NaN` and negative numbers, no wait.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(seconds(ms / 1000.0));
    }
    let value = header(headers, "retry-after")?;
    if let Ok(number) = value.parse::<f64>() {
        return Some(seconds(number));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(std::time::SystemTime::now()).unwrap_or_default())
}

fn seconds(number: f64) -> Duration {
    match number.is_nan() {
        true => Duration::ZERO,
        false => Duration::try_from_secs_f64(number.max(0.0)).unwrap_or(Duration::MAX),
    }
}

/// An API key, kept out of `Debug` output and scrubbed from provider messages.
#[derive(Clone)]
pub(crate) struct Secret {
    key: String,
    /// Every piece of the key of `KEY_FRAGMENT` bytes, searched for at once
    /// (none for a key shorter than that, which is searched for whole).
    fragments: Option<AhoCorasick>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Shortest piece of a key that counts as the key when it appears in a message.
pub(crate) const KEY_FRAGMENT: usize = 8;

impl Secret {
    pub(crate) fn new(key: String) -> Self {
        let fragments = key.as_bytes().windows(KEY_FRAGMENT);
        // A build refused (it cannot be, for so few short patterns) leaves
        // the key searched for whole.
        let fragments = (key.len() >= KEY_FRAGMENT).then(|| AhoCorasick::new(fragments).ok()).flatten();
        Secret { key, fragments }
    }

    /// A `model.headers` value as a secret, if it is long enough to be one (eight
    /// characters or more; shorter values such as `true` are left in messages).
    pub(crate) fn header_value(value: &str) -> Option<Self> {
        (value.chars().count() >= KEY_FRAGMENT).then(|| Secret::new(value.to_owned()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.key
    }

    /// `message` with every word that contains a piece of the key (8 bytes or
    /// more) replaced by `[redacted]`; providers echo keys, sometimes in part.
    /// Linear in the message's length, however long the key.
    pub(crate) fn scrub(&self, message: &str) -> String {
        let Some(fragments) = &self.fragments else {
            return message.replace(&self.key, "[redacted]");
        };
        // Where pieces of the key begin, in order (all are as long).
        let mut pieces = fragments.find_overlapping_iter(message).map(|found| found.start()).peekable();
        if pieces.peek().is_none() {
            return message.to_owned();
        }
        let mut out = String::with_capacity(message.len());
        let mut word_start = 0;
        let ends = message.char_indices().filter(|&(_, c)| is_separator(c)).map(|(at, _)| at);
        for word_end in ends.chain(std::iter::once(message.len())) {
            let word = &message[word_start..word_end];
            // Pieces that began before this word do not lie within it.
            while pieces.next_if(|&start| start < word_start).is_some() {}
            let leaks = pieces.peek().is_some_and(|&start| start + KEY_FRAGMENT <= word_end);
            out.push_str(if leaks { "[redacted]" } else { word });
            if let Some(separator) = message[word_end..].chars().next() {
                out.push(separator);
                word_start = word_end + separator.len_utf8();
            }
        }
        out
    }
}

/// Whether `c` ends a word for [`Secret::scrub`].
fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '`')
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn anthropic_overloaded_body_refines_the_status() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let failure = from_response("anthropic", 529, &HeaderMap::new(), body);
        assert_eq!(failure.error.code, ErrorCode::ProviderOverloaded);
        assert!(failure.error.message.contains("overloaded_error: Overloaded"), "{}", failure.error.message);
        assert!(failure.is_retryable());
    }

    #[test]
    fn google_errors_name_their_status_reason_and_delay() {
        let body = r#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT",
            "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#;
        let failure = from_response("gemini", 400, &HeaderMap::new(), body);
        assert_eq!(failure.error.code, ErrorCode::ProviderAuth);
        assert!(failure.error.message.contains("INVALID_ARGUMENT: API key not valid."), "{}", failure.error.message);
        let body = r#"{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}"#;
        assert_eq!(from_response("gemini", 500, &HeaderMap::new(), body).error.code, ErrorCode::ProviderOverloaded);
        let body = r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED",
            "details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}"#;
        let failure = from_response("gemini", 429, &HeaderMap::new(), body);
        assert_eq!(failure.retry_after, Some(Duration::from_millis(1500)));
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(
            from_response("gemini", 429, &headers, body).retry_after,
            Some(Duration::from_secs(3)),
            "the header first"
        );
        for (delay, expected) in
            [("-1s", None), ("0s", None), ("NaNs", None), ("xs", None), ("s", None), ("1e400s", Some(Duration::MAX))]
        {
            let body = body.replace("1.5s", delay);
            assert_eq!(from_response("gemini", 429, &HeaderMap::new(), &body).retry_after, expected, "{delay}");
        }
    }

    #[test]
    fn retry_headers_are_read() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        headers.insert("x-should-retry", HeaderValue::from_static("false"));
        let failure = from_response("openai", 429, &headers, "{}");
        assert_eq!(failure.retry_after, Some(Duration::from_secs(2)));
        assert!(!failure.is_retryable());
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
    }

    #[test]
    fn hostile_retry_numbers_are_clamped_not_a_panic() {
        let cases = [
            ("retry-after", "inf", Duration::MAX),
            ("retry-after", "1e300", Duration::MAX),
            ("retry-after", "-5", Duration::ZERO),
            ("retry-after", "NaN", Duration::ZERO),
            ("retry-after-ms", "1e300", Duration::MAX),
            ("retry-after-ms", "-inf", Duration::ZERO),
        ];
        for (name, value, expected) in cases {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            assert_eq!(retry_after(&headers), Some(expected), "{name}: {value}");
        }
    }

    #[test]
    fn a_key_and_pieces_of_it_are_scrubbed() {
        let secret = Secret::new("sk-test-0123456789abcdefXYZ".into());
        let message =
            "Incorrect API key provided: sk-test-0123456789abcdefXYZ. Also 'sk-test-0123****XYZ' and 6789abcdef.";
        let scrubbed = secret.scrub(message);
        assert!(!scrubbed.contains("0123456789"), "{scrubbed}");
        assert!(scrubbed.starts_with("Incorrect API key provided: [redacted]"), "{scrubbed}");
        assert!(scrubbed.contains("'[redacted]'"), "{scrubbed}");
        assert_eq!(
            scrubbed, "Incorrect API key provided: [redacted] Also '[redacted]' and [redacted]",
            "each word holding a piece goes whole, the rest stays"
        );
        let near = "sk-test 0123456 789abcd, sk-tes-0é12345";
        assert_eq!(secret.scrub(near), near, "pieces split by separators or other text are no key");
        assert_eq!(Secret::new("k3y".into()).scrub("a k3y, k3ys"), "a [redacted], [redacted]s", "a short key, whole");
        let long = format!("{}{}", "A".repeat(1 << 20), "456789abcdefXYZ");
        assert_eq!(secret.scrub(&format!("x {long} y")), "x [redacted] y", "a megabyte's word, in one pass");
    }
}
