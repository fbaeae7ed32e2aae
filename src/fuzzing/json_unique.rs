//! JSON text that may name a key only once per object.

use crate::json::{parse_unique, JsonError};

/// Input: any bytes (UTF-8 text only: the ABI refuses other text before it is
/// parsed). Holds: what the reader accepts, serde_json reads as the same value;
/// what serde_json reads and the reader refuses repeats a key, which the error
/// names; the value written back out reads again as itself.
pub fn json_unique(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let plain = serde_json::from_str::<serde_json::Value>(text);
    match parse_unique(text) {
        Ok(value) => {
            assert_eq!(plain.as_ref().ok(), Some(&value), "serde_json reads it otherwise");
            let written = value.to_string();
            assert_eq!(parse_unique(&written).ok(), Some(value), "the value written out reads otherwise");
        }
        Err(JsonError::DuplicateKey(key)) => {
            let quoted = serde_json::to_string(&key).expect("a key is JSON");
            assert!(text.contains(&quoted) || text.contains('\\'), "the repeated key {quoted} is not in the text");
        }
        Err(JsonError::Syntax(error)) => assert!(plain.is_err(), "serde_json reads what was refused: {error}"),
    }
}
