//! Function-call arguments that stream as pieces addressed by a JSON path
//! (Vertex AI's Gemini `partialArgs`: `{"jsonPath": "$.items[0].name",
//! "stringValue": "ap", "willContinue": true}`), put together into one object.

use serde_json::{Map, Value};

use super::tool_calls::MAX_ARGUMENT_BYTES;
use crate::error::{Error, ErrorCode};

/// Most path segments one piece may address.
const MAX_DEPTH: usize = 64;
/// What a piece, and each value (member or array item) made for its path,
/// count against the bound on a call's arguments beside their text, so that
/// many small pieces cannot build a large tree.
const NODE_COST: usize = 64;
/// What an object made for a path counts: about what a new map holds in
/// memory, so that deep paths cannot make the bound a thousandth of the memory.
const OBJECT_COST: usize = 640;

/// The arguments of one call, as far as they have come.
#[derive(Debug, Default)]
pub(crate) struct PartialArgs {
    root: Map<String, Value>,
    /// What the arguments hold so far, against [`MAX_ARGUMENT_BYTES`].
    size: usize,
}

/// One step of a JSON path.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl PartialArgs {
    /// Starts from the arguments a call came with, if they are an object.
    pub(crate) fn new(args: Option<&Value>) -> Self {
        let root = args.and_then(Value::as_object).cloned().unwrap_or_default();
        let size = serde_json::to_string(&root).map_or(0, |text| text.len());
        PartialArgs { root, size }
    }

    /// Applies one piece: a string value is appended to the string already at
    /// its path; any other value replaces what is there. An array grows by
    /// one item at a time, as the model writes it.
    pub(crate) fn apply(&mut self, piece: &Value) -> Result<(), Error> {
        let path = piece.get("jsonPath").and_then(Value::as_str).unwrap_or("");
        let text = piece.get("stringValue").and_then(Value::as_str);
        charge(&mut self.size, path.len() + NODE_COST + text.map_or(0, str::len))?;
        let steps = parse(path).ok_or_else(|| malformed(format!("the argument path {path:?} cannot be read")))?;
        let value = if let Some(text) = text {
            Piece::Text(text)
        } else if let Some(number) = piece.get("numberValue").filter(|v| v.is_number()) {
            Piece::Value(number.clone())
        } else if let Some(flag) = piece.get("boolValue").filter(|v| v.is_boolean()) {
            Piece::Value(flag.clone())
        } else if piece.get("nullValue").is_some() {
            Piece::Value(Value::Null)
        } else {
            return Ok(());
        };
        let (slot, made) = slot(&mut self.root, &steps).ok_or_else(|| {
            malformed(format!(
                "the argument path {path:?} goes through a value that is not an object or array, or past the end of an array"
            ))
        })?;
        charge(&mut self.size, made)?;
        match (value, slot) {
            (Piece::Text(text), Value::String(current)) => current.push_str(text),
            (Piece::Text(text), slot) => *slot = Value::String(text.to_owned()),
            (Piece::Value(value), slot) => *slot = value,
        }
        Ok(())
    }

    /// The arguments as JSON text.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(&self.root).expect("JSON into memory")
    }
}

enum Piece<'a> {
    Text(&'a str),
    Value(Value),
}

/// Counts `cost` into `size`, against the bound on a call's arguments.
fn charge(size: &mut usize, cost: usize) -> Result<(), Error> {
    *size = size.saturating_add(cost);
    if *size > MAX_ARGUMENT_BYTES {
        return Err(malformed(format!("the arguments of a call are larger than {MAX_ARGUMENT_BYTES} bytes")));
    }
    Ok(())
}

/// `$`, then `.key`, `['key']` or `[n]` steps; `None` when the path is not one.
fn parse(path: &str) -> Option<Vec<Step<'_>>> {
    let mut rest = path.strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if steps.len() == MAX_DEPTH {
            return None;
        }
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Key(&after[..end]));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']")?;
            steps.push(Step::Key(&after[..end]));
            rest = &after[end + 2..];
        } else {
            let after = rest.strip_prefix('[')?;
            let end = after.find(']')?;
            let index: usize = after[..end].parse().ok()?;
            steps.push(Step::Index(index));
            rest = &after[end + 1..];
        }
    }
    (!steps.is_empty()).then_some(steps)
}

/// The value at `steps` beneath `root`, made (as objects, arrays and nulls)
/// where it is missing, and what was made costs (see [`NODE_COST`]); `None`
/// when a step goes through a value of another kind.
fn slot<'v>(root: &'v mut Map<String, Value>, steps: &[Step<'_>]) -> Option<(&'v mut Value, usize)> {
    let (first, rest) = steps.split_first()?;
    let Step::Key(key) = first else { return None };
    let mut made = 0;
    let mut current = member(root, key, &mut made);
    for step in rest {
        current = match step {
            Step::Key(key) => {
                if current.is_null() {
                    *current = Value::Object(Map::new());
                    made += OBJECT_COST;
                }
                member(current.as_object_mut()?, key, &mut made)
            }
            Step::Index(index) => {
                if current.is_null() {
                    *current = Value::Array(Vec::new());
                }
                let items = current.as_array_mut()?;
                if *index == items.len() {
                    items.push(Value::Null);
                    made += NODE_COST;
                }
                items.get_mut(*index)?
            }
        };
    }
    Some((current, made))
}

/// The member `key` of `object`, made null (and counted in `made`) when missing.
fn member<'v>(object: &'v mut Map<String, Value>, key: &str, made: &mut usize) -> &'v mut Value {
    if !object.contains_key(key) {
        *made += NODE_COST;
    }
    object.entry(key.to_owned()).or_insert(Value::Null)
}

fn malformed(message: String) -> Error {
    Error::new(ErrorCode::ProviderMalformedStream, format!("gemini: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(pieces: &[Value]) -> Result<Value, Error> {
        let mut args = PartialArgs::new(None);
        for piece in pieces {
            args.apply(piece)?;
        }
        Ok(serde_json::from_str(&args.to_json()).unwrap())
    }

    #[test]
    fn strings_join_and_paths_make_objects_and_arrays() {
        let args = build(&[
            json!({"jsonPath": "$.operations[0].action", "stringValue": "ad", "willContinue": true}),
            json!({"jsonPath": "$.operations[0].action", "stringValue": "d"}),
            json!({"jsonPath": "$.operations[1].price", "numberValue": 0.3}),
            json!({"jsonPath": "$['odd key'].ok", "boolValue": true}),
            json!({"jsonPath": "$.gone", "nullValue": "NULL_VALUE"}),
        ])
        .unwrap();
        assert_eq!(
            args,
            json!({"operations": [{"action": "add"}, {"price": 0.3}], "odd key": {"ok": true}, "gone": null})
        );
    }

    #[test]
    fn paths_that_cannot_be_followed_are_refused() {
        for path in ["", "location", "$", "$.", "$[0]", "$.a[x]", "$.a[1]", "$.a[99999999999999999999]", "$.a['b"] {
            let error = build(&[json!({"jsonPath": path, "stringValue": "x"})]).unwrap_err();
            assert_eq!(error.code, ErrorCode::ProviderMalformedStream, "{path}");
        }
        let error =
            build(&[json!({"jsonPath": "$.a", "stringValue": "x"}), json!({"jsonPath": "$.a.b", "stringValue": "y"})])
                .unwrap_err();
        assert!(error.message.contains("not an object"), "{}", error.message);
        let deep = format!("${}", ".a".repeat(MAX_DEPTH + 1));
        assert!(build(&[json!({"jsonPath": deep, "stringValue": "x"})]).is_err());
    }

    #[test]
    fn many_small_pieces_are_bounded_like_one_large_one() {
        let mut args = PartialArgs::new(None);
        let mut failed = None;
        for i in 0..1_000_000 {
            if let Err(error) = args.apply(&json!({"jsonPath": format!("$.k{i}"), "nullValue": null})) {
                failed = Some((i, error));
                break;
            }
        }
        let (pieces, error) = failed.expect("the bound holds");
        assert_eq!(error.code, ErrorCode::ProviderMalformedStream);
        assert!(pieces < MAX_ARGUMENT_BYTES / NODE_COST, "{pieces}");
        // Deep paths make an object per step: each counts what it holds.
        let mut args = PartialArgs::new(None);
        let deep = ".a".repeat(MAX_DEPTH - 1);
        let objects = (0..100_000)
            .position(|i| args.apply(&json!({"jsonPath": format!("$.k{i}{deep}"), "nullValue": null})).is_err())
            .expect("the bound holds")
            * (MAX_DEPTH - 1);
        assert!(objects <= MAX_ARGUMENT_BYTES / OBJECT_COST + MAX_DEPTH, "{objects} objects were made");
        let long = "x".repeat(MAX_ARGUMENT_BYTES);
        let mut args = PartialArgs::new(None);
        assert!(args.apply(&json!({"jsonPath": "$.a", "stringValue": long})).is_err());
    }
}
