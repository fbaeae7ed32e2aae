//! A traced run's spans, as a scenario expects them (`expect.spans`), and the
//! `traceparent` each tool call was given (`expect.traceparents`).

use serde_json::Value;

use crate::matching::{contains, equal};

/// Checks the observed `spans` and `traceparents` of a step against `expect`.
/// Each expected span is matched, in order, to an observed span not matched
/// yet with its `name`, and its `kind`, `status` and `attributes` (contained)
/// when given; there must be as many observed as expected, all of one trace
/// (`expect.trace_id` when given). A span's `parent` names another expected
/// span by its `id`, or is the parent's span id itself (the host's span).
pub(crate) fn check_spans(expect: &Value, step: &Value) -> Vec<String> {
    let Some(want) = expect.get("spans").and_then(Value::as_array) else { return Vec::new() };
    let got = step.get("spans").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut problems = Vec::new();
    if got.len() != want.len() {
        let names: Vec<&Value> = got.iter().map(|span| &span["name"]).collect();
        problems.push(format!("{} spans, expected {}: {names:?}", got.len(), want.len()));
    }
    let mut matched: Vec<Option<&Value>> = Vec::new();
    for wanted in want {
        let found = got.iter().find(|span| !matched.contains(&Some(*span)) && fits(wanted, span));
        if found.is_none() {
            problems.push(format!("no span fits {wanted}"));
        }
        matched.push(found);
    }
    let span_of = |id: &str| want.iter().position(|w| w["id"] == id).and_then(|at| matched[at]);
    for (wanted, span) in want.iter().zip(&matched) {
        let (Some(span), Some(parent)) = (span, wanted.get("parent").and_then(Value::as_str)) else { continue };
        let parent_id = span_of(parent).map_or(parent, |parent| parent["span_id"].as_str().unwrap_or("?"));
        if span["parent_span_id"] != parent_id {
            problems.push(format!(
                "span {}: parent {}, expected {parent_id} ({parent})",
                span["name"], span["parent_span_id"]
            ));
        }
    }
    let trace_ids: Vec<&Value> = got.iter().map(|span| &span["trace_id"]).collect();
    if trace_ids.windows(2).any(|pair| pair[0] != pair[1]) {
        problems.push(format!("the spans are of more than one trace: {trace_ids:?}"));
    }
    if let (Some(want), Some(got)) = (expect.get("trace_id"), trace_ids.first()) {
        if !equal(want, got) {
            problems.push(format!("trace {got}, expected {want}"));
        }
    }
    for (call_id, id) in expect.get("traceparents").and_then(Value::as_object).into_iter().flatten() {
        let seen = step.pointer(&format!("/traceparents/{call_id}")).unwrap_or(&Value::Null);
        let want = match id.as_str().and_then(span_of) {
            Some(span) => format!(
                "00-{}-{}-01",
                span["trace_id"].as_str().unwrap_or("?"),
                span["span_id"].as_str().unwrap_or("?")
            ),
            None => {
                problems.push(format!("call {call_id}: no span {id} to compare its traceparent with"));
                continue;
            }
        };
        if seen != want.as_str() {
            problems.push(format!("call {call_id}: traceparent {seen}, expected {want}"));
        }
    }
    problems
}

/// Whether `span` is the one `wanted` describes.
fn fits(wanted: &Value, span: &Value) -> bool {
    let field_fits = |field: &str| wanted.get(field).is_none_or(|want| equal(want, &span[field]));
    field_fits("name")
        && field_fits("kind")
        && wanted.get("status").is_none_or(|want| equal(want, &span["status"]["code"]))
        && wanted.get("attributes").is_none_or(|want| contains(want, &span["attributes"]))
        && wanted.get("events").is_none_or(|want| {
            let names: Vec<&Value> = span["events"].as_array().into_iter().flatten().map(|e| &e["name"]).collect();
            equal(want, &Value::from(names.into_iter().cloned().collect::<Vec<_>>()))
        })
}
