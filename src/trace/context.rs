//! W3C trace context: the ids of a span, and its `traceparent` header.

use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::{Error, Result};

/// A trace's id: 16 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span's id: 8 bytes, never all zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    /// A new random id.
    pub fn random() -> TraceId {
        TraceId(fastrand::u128(..).max(1).to_be_bytes())
    }
}

impl SpanId {
    /// A new random id.
    pub fn random() -> SpanId {
        SpanId(fastrand::u64(..).max(1).to_be_bytes())
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Debug for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Where a span sits: its trace, its id, whether the trace is sampled, and the
/// vendors' `tracestate` it carries on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanContext {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
    /// The `sampled` flag of `traceparent`.
    pub sampled: bool,
    /// The `tracestate` header, as it came.
    pub tracestate: Option<String>,
}

impl SpanContext {
    /// The `traceparent` header of the span (version 00).
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.span_id, u8::from(self.sampled))
    }

    /// A child of this span: same trace, a new span id.
    pub fn child(&self) -> SpanContext {
        SpanContext { span_id: SpanId::random(), ..self.clone() }
    }

    /// The root of a new trace.
    pub fn root() -> SpanContext {
        SpanContext { trace_id: TraceId::random(), span_id: SpanId::random(), sampled: true, tracestate: None }
    }
}

/// A run input's `trace_context`: the host's span that the run's spans go
/// under (W3C Trace Context).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceContext {
    /// `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`.
    pub traceparent: String,
    /// Vendors' state, passed on as it is.
    #[serde(default)]
    pub tracestate: Option<String>,
}

impl TraceContext {
    /// The host's span, checked as W3C Trace Context says: `INVALID_ARG` for a
    /// `traceparent` that is not one (any version's first four fields are
    /// read; an all-zero id is invalid). A `tracestate` that is not a valid
    /// list (at most 32 `key=value` members of printable ASCII, 512 bytes) is
    /// left out, as the recommendation says.
    pub fn parent(&self) -> Result<SpanContext> {
        let shown: String = self.traceparent.chars().take(64).collect();
        let bad = |why: &str| Error::invalid_arg(format!("trace_context.traceparent: {why}: {shown:?}"));
        let fields: Vec<&str> = self.traceparent.split('-').collect();
        let [version, trace, span, flags, rest @ ..] = fields.as_slice() else {
            return Err(bad("not version-traceid-spanid-flags"));
        };
        let hex =
            |text: &str, len: usize| text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hex(version, 2) || *version == "ff" || (*version == "00" && !rest.is_empty()) {
            return Err(bad("the version is not one"));
        }
        if !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
            return Err(bad("an id or the flags are not lower-case hex of their length"));
        }
        let trace_id = u128::from_str_radix(trace, 16).map_err(|_| bad("the trace id"))?;
        let span_id = u64::from_str_radix(span, 16).map_err(|_| bad("the span id"))?;
        let flags = u8::from_str_radix(flags, 16).map_err(|_| bad("the flags"))?;
        if trace_id == 0 || span_id == 0 {
            return Err(bad("an all-zero id"));
        }
        Ok(SpanContext {
            trace_id: TraceId(trace_id.to_be_bytes()),
            span_id: SpanId(span_id.to_be_bytes()),
            sampled: flags & 1 == 1,
            tracestate: self.tracestate.clone().filter(|state| valid_tracestate(state)),
        })
    }
}

/// Whether `state` is a W3C `tracestate` list ferrule passes on: at most 32
/// members of `key=value`, printable ASCII without `,` in values or `=` in
/// keys, 512 bytes in all (which also makes it a valid header value).
fn valid_tracestate(state: &str) -> bool {
    let members: Vec<&str> = state.split(',').map(|m| m.trim_matches([' ', '\t'])).filter(|m| !m.is_empty()).collect();
    state.len() <= 512
        && members.len() <= 32
        && members.iter().all(|member| {
            let Some((key, value)) = member.split_once('=') else { return false };
            let printable = |c: char| (' '..='~').contains(&c);
            !key.is_empty()
                && key.len() <= 256
                && key.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-*/@".contains(c))
                && !value.is_empty()
                && value.len() <= 256
                && value.chars().all(|c| printable(c) && c != ',' && c != '=')
                && !value.ends_with(' ')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(traceparent: &str) -> Result<SpanContext> {
        TraceContext { traceparent: traceparent.to_owned(), tracestate: None }.parent()
    }

    #[test]
    fn traceparent_reads_and_writes_back() {
        let text = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let parent = parse(text).unwrap();
        assert_eq!(parent.traceparent(), text);
        assert!(parent.sampled);
        let child = parent.child();
        assert_eq!((child.trace_id, child.sampled), (parent.trace_id, true));
        assert_ne!(child.span_id, parent.span_id);
        assert!(!parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").unwrap().sampled);
        // A later version may add fields.
        assert!(parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra").is_ok());
    }

    #[test]
    fn a_tracestate_that_is_not_a_valid_list_is_left_out() {
        let with = |state: &str| {
            let context = TraceContext {
                traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
                tracestate: Some(state.into()),
            };
            context.parent().unwrap().tracestate
        };
        assert_eq!(
            with("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7").as_deref(),
            Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
        );
        for bad in ["v=café", "v=a\u{0}b", "novalue", "Upper=1", &"k=v,".repeat(40), &format!("k={}", "x".repeat(600))]
        {
            assert_eq!(with(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-+af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            let error = parse(bad).unwrap_err();
            assert!(error.message.contains("trace_context.traceparent"), "{bad}: {}", error.message);
        }
    }
}
