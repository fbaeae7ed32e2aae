//! What a `chat` span records of its model request as it goes: the response's
//! id and model, retries, the answer (its finish reason and tokens) or the
//! failure.

use std::time::Duration;

use super::run::{fail, finish_reason, set_usage};
use super::span::{AttributeValue, Span};
use crate::error::Error;
use crate::message::AssistantMessage;

/// The provider said which response it is and which model answered.
pub(crate) fn described(span: &mut Span, id: Option<&str>, model: Option<&str>) {
    if let Some(id) = id {
        span.set("gen_ai.response.id", id);
    }
    if let Some(model) = model {
        span.set("gen_ai.response.model", model);
    }
}

/// An attempt failed with `error`; attempt `attempt` follows after `delay`.
pub(crate) fn retried(span: &mut Span, attempt: u32, error: &Error, delay: Duration) {
    let code = serde_json::to_value(error.code).ok().and_then(|v| v.as_str().map(str::to_owned));
    span.event(
        "ferrule.retry",
        vec![
            ("ferrule.retry.attempt", attempt.into()),
            ("ferrule.retry.delay_ms", AttributeValue::from(delay.as_millis() as u64)),
            ("error.type", code.unwrap_or_default().into()),
        ],
    );
}

/// The request was answered with `answer`: the span ends.
pub(crate) fn answered(mut span: Span, answer: &AssistantMessage, capture_content: bool) {
    span.set("gen_ai.response.finish_reasons", vec![finish_reason(answer.stop_reason).to_owned()]);
    set_usage(&mut span, &answer.usage);
    if capture_content {
        span.set("gen_ai.output.messages", super::content::output(answer));
    }
    span.end();
}

/// The request failed with `error`: the span ends.
pub(crate) fn failed(mut span: Span, error: &Error) {
    fail(&mut span, error);
    span.end();
}
