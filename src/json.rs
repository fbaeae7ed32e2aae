//! JSON text that may name a key only once per object.
//!
//! serde_json keeps the last of two equal keys, while a host that reads the raw
//! text may keep the first (cJSON does): `{"path":"/etc/passwd","path":"a.txt"}`
//! would pass a schema that checks `a.txt` and act on `/etc/passwd`. Every JSON
//! text ferrule reads is therefore parsed here, where a repeated key is an error
//! that names it: the host's documents (configuration, tool options and schemas,
//! run input, injected messages, tool results, hook stages and decisions, runtime
//! sizes) through [`parse_document`], and the model's tool arguments and
//! structured answers through [`parse_unique`].

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a text is not JSON with unique keys.
#[derive(Debug)]
pub(crate) enum JsonError {
    /// Not JSON at all.
    Syntax(serde_json::Error),
    /// An object names this key twice.
    DuplicateKey(String),
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonError::Syntax(error) => error.fmt(f),
            JsonError::DuplicateKey(key) => write!(f, "the key {key:?} appears twice in one object"),
        }
    }
}

/// Parses `text`, refusing an object with a repeated key.
pub(crate) fn parse_unique(text: &str) -> Result<Value, JsonError> {
    let mut duplicate = None;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = UniqueKeys { duplicate: &mut duplicate }.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match (parsed, duplicate) {
        (_, Some(key)) => Err(JsonError::DuplicateKey(key)),
        (Ok(value), None) => Ok(value),
        (Err(error), None) => Err(JsonError::Syntax(error)),
    }
}

/// Builds a [`Value`] like serde_json does, stopping at the first repeated key
/// (which it records).
struct UniqueKeys<'a> {
    duplicate: &'a mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::with_capacity(items.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = items.next_element_seed(UniqueKeys { duplicate: &mut *self.duplicate })? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            if object.contains_key(&key) {
                let error = de::Error::custom(format_args!("duplicate key {key:?}"));
                *self.duplicate = Some(key);
                return Err(error);
            }
            let value = entries.next_value_seed(UniqueKeys { duplicate: &mut *self.duplicate })?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Reads the host's JSON document `text` (named `what` in errors) into `T`,
/// refusing a key given twice anywhere in it: `INVALID_JSON` when it is not JSON,
/// `INVALID_ARG` for a repeated key or a value of the wrong shape (an unknown
/// field, a missing one, a bad value). The one entry point for JSON from the
/// host.
pub(crate) fn parse_document<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> crate::error::Result<T> {
    use crate::error::{Error, ErrorCode};
    let value = parse_unique(text).map_err(|e| match e {
        JsonError::Syntax(error) => Error::new(ErrorCode::InvalidJson, format!("{what}: {error}")),
        duplicate => Error::invalid_arg(format!("{what}: {duplicate}")),
    })?;
    serde_json::from_value(value).map_err(|e| Error::invalid_arg(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_serde_json() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":18446744073709551615}"#;
        assert_eq!(parse_unique(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn a_repeated_key_at_any_depth_is_named() {
        for text in [r#"{"path":"/etc/passwd","path":"safe.txt"}"#, r#"{"a":[{"k":1,"path":2,"path":3}]}"#] {
            match parse_unique(text) {
                Err(JsonError::DuplicateKey(key)) => assert_eq!(key, "path"),
                other => panic!("{text}: {other:?}"),
            }
        }
        assert!(parse_unique(r#"{"a":{"x":1},"b":{"x":1}}"#).is_ok());
    }

    #[test]
    fn syntax_errors_and_trailing_text_are_syntax_errors() {
        for text in ["{", r#"{"a":1} x"#, "", "[1,]"] {
            assert!(matches!(parse_unique(text), Err(JsonError::Syntax(_))), "{text}");
        }
        let deep = "[".repeat(100_000);
        assert!(matches!(parse_unique(&deep), Err(JsonError::Syntax(_))));
    }
}
