//! Text taken from a server, cut to a bound before ferrule keeps or repeats it
//! (in notices, log lines, errors and events): a hostile server must not make
//! ferrule hold or send more than it would of its own.

use serde_json::Value;

/// The most bytes of a server's text kept in one message.
pub(crate) const TEXT_BYTES: usize = 1024;
/// The most bytes of a name a server gives (a tool's, a method's, a string
/// id) that ferrule keeps or repeats.
pub(crate) const NAME_BYTES: usize = 128;
/// The most bytes of a JSON value a message quotes.
const QUOTED_JSON_BYTES: usize = 64;
/// The largest error `data` kept.
const DATA_BYTES: usize = 4096;

/// `text`, cut on a character boundary to at most `limit` bytes, with how
/// long it was when it was cut.
pub(crate) fn bounded(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &text[..end], text.len())
}

/// A JSON value quoted in a message (an id, a cursor): its JSON, cut short.
pub(crate) fn quoted(value: &Value) -> String {
    bounded(&value.to_string(), QUOTED_JSON_BYTES)
}

/// An error's `data`, kept when it is small (a refusal's list of versions),
/// null otherwise.
pub(crate) fn small_data(data: Option<&Value>) -> Value {
    match data {
        Some(data) if data.to_string().len() <= DATA_BYTES => data.clone(),
        _ => Value::Null,
    }
}

/// Whether `id` is an id ferrule repeats in an answer: a number, or a string
/// of at most [`NAME_BYTES`].
pub(crate) fn answerable_id(id: &Value) -> bool {
    id.is_number() || id.as_str().is_some_and(|id| id.len() <= NAME_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        assert_eq!(bounded("short", 10), "short");
        assert_eq!(bounded("ééééé", 5), "éé... (10 bytes)");
        assert!(quoted(&json!("x".repeat(1 << 20))).len() < 100);
        assert_eq!(small_data(Some(&json!({"supported": ["2026-07-28"]}))), json!({"supported": ["2026-07-28"]}));
        assert_eq!(small_data(Some(&json!("y".repeat(10_000)))), Value::Null);
        assert!(answerable_id(&json!(7)) && answerable_id(&json!("p-1")) && !answerable_id(&json!("z".repeat(200))));
    }
}
