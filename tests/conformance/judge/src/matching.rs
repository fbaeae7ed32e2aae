//! The matching rules every observation is judged by, whatever language observed
//! it (tests/conformance/README.md, "How observations are judged").
//!
//! - Object keys are compared exactly (case matters).
//! - A key that is absent matches a key whose value is `null`, and nothing else:
//!   many JSON encoders leave nulls out, and no scenario tells the two apart.
//! - Numbers are equal when they are the same number (`1` and `1.0` are).
//! - Strings and booleans are equal when they are the same; arrays when they have
//!   the same length and are equal element by element.
//! - A message's `content` given as a string is the same as one text part with
//!   that text (`[{"type": "text", "text": ...}]`): the schema allows both forms,
//!   ferrule keeps the form it was given and a binding may write either.

use std::borrow::Cow;

use serde_json::{json, Map, Number, Value};

/// Whether `got` is `want` under the rules above.
pub fn equal(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => {
            let keys = want.keys().chain(got.keys().filter(|key| !want.contains_key(*key)));
            keys.into_iter().all(|key| match key.as_str() {
                "content" => equal(&as_parts(field(want, key)), &as_parts(field(got, key))),
                _ => equal(field(want, key), field(got, key)),
            })
        }
        (Value::Array(want), Value::Array(got)) => {
            want.len() == got.len() && want.iter().zip(got).all(|(want, got)| equal(want, got))
        }
        (Value::Number(want), Value::Number(got)) => same_number(want, got),
        (want, got) => want == got,
    }
}

/// Whether `got` has everything `want` has: objects by key (`got` may have more
/// keys), arrays element by element (of the same length), other values by
/// [`equal`].
pub fn contains(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => want.iter().all(|(key, want)| match key.as_str() {
            "content" => contains(&as_parts(want), &as_parts(field(got, key))),
            _ => contains(want, field(got, key)),
        }),
        (Value::Object(_), _) => false,
        (Value::Array(want), Value::Array(got)) => {
            want.len() == got.len() && want.iter().zip(got).all(|(want, got)| contains(want, got))
        }
        (want, got) => equal(want, got),
    }
}

/// A message content in its parts form: a string becomes one text part.
fn as_parts(content: &Value) -> Cow<'_, Value> {
    match content {
        // ferrule reads "" as no parts at all.
        Value::String(text) if text.is_empty() => Cow::Owned(json!([])),
        Value::String(text) => Cow::Owned(json!([{"type": "text", "text": text}])),
        other => Cow::Borrowed(other),
    }
}

/// The value of `key`, `null` when the key is absent.
pub fn field<'a>(object: &'a Map<String, Value>, key: &str) -> &'a Value {
    object.get(key).unwrap_or(&Value::Null)
}

fn same_number(a: &Number, b: &Number) -> bool {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return a == b;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_is_null_and_nothing_else() {
        assert!(equal(&json!({"a": 1, "b": null}), &json!({"a": 1})));
        assert!(equal(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!equal(&json!({"a": 1, "b": false}), &json!({"a": 1})));
        assert!(!equal(&json!({"a": 1, "b": ""}), &json!({"a": 1})));
    }

    #[test]
    fn keys_are_compared_with_their_case() {
        assert!(!equal(&json!({"Status": "completed"}), &json!({"status": "completed"})));
        assert!(!contains(&json!({"Call": {}}), &json!({"call": {}})));
    }

    #[test]
    fn numbers_are_compared_as_numbers() {
        assert!(equal(&json!(1), &json!(1.0)));
        assert!(equal(&json!(18446744073709551615u64), &json!(18446744073709551615u64)));
        assert!(!equal(&json!(1), &json!("1")));
        assert!(!equal(&json!(-1), &json!(18446744073709551615u64)));
    }

    #[test]
    fn content_as_a_string_is_one_text_part() {
        let parts = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
        assert!(equal(&json!({"role": "user", "content": "hi"}), &parts));
        assert!(contains(&json!({"content": "hi"}), &parts));
        assert!(!equal(&json!({"role": "user", "content": "hello"}), &parts));
        assert!(!equal(
            &json!({"content": "hi"}),
            &json!({"content": [{"type": "text", "text": "hi"}, {"type": "text", "text": ""}]})
        ));
        assert!(!equal(&json!({"text": "hi"}), &json!({"text": [{"type": "text", "text": "hi"}]})));
        assert!(equal(&json!({"content": ""}), &json!({"content": []})));
        assert!(!equal(&json!({"content": ""}), &json!({"content": [{"type": "text", "text": ""}]})));
    }

    #[test]
    fn containment_allows_more_keys_but_not_more_elements() {
        assert!(contains(&json!({"call": {"id": "c1"}}), &json!({"call": {"id": "c1", "name": "x"}, "turn": 1})));
        assert!(!contains(&json!([{"id": "c1"}]), &json!([{"id": "c1"}, {"id": "c2"}])));
        assert!(!contains(&json!({"id": "c1"}), &json!([{"id": "c1"}])));
        assert!(contains(&json!({"gone": null}), &json!({})));
    }
}
