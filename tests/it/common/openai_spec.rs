//! OpenAI's own OpenAPI specification (never part of this repository), as the
//! reference every Chat Completions and Responses request body ferrule sends is
//! checked against.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{json, Value};

/// `FERRULE_OPENAI_SPEC`, or `openai_spec` beside the fixtures directory.
fn spec_path() -> PathBuf {
    match std::env::var_os("FERRULE_OPENAI_SPEC") {
        Some(path) => PathBuf::from(path),
        None => {
            let fixtures = match std::env::var_os("FERRULE_FIXTURES") {
                Some(dir) => PathBuf::from(dir),
                None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"),
            };
            fixtures.join("../openai_spec/openapi.json")
        }
    }
}

/// Validators of `CreateChatCompletionRequest` and `CreateResponse`, or `None`
/// (said loudly) when the specification is absent.
fn validators() -> Option<&'static (jsonschema::Validator, jsonschema::Validator)> {
    static VALIDATORS: OnceLock<Option<(jsonschema::Validator, jsonschema::Validator)>> = OnceLock::new();
    VALIDATORS
        .get_or_init(|| {
            let path = spec_path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                eprintln!(
                    "\n*** SKIPPED: OpenAI specification not found at {} (set FERRULE_OPENAI_SPEC) ***\n",
                    path.display()
                );
                return None;
            };
            let mut spec: Value = serde_json::from_str(&text).expect("openapi.json is JSON");
            one_of_as_any_of(&mut spec);
            let validator = |schema: &str| {
                let root = json!({"$ref": format!("#/components/schemas/{schema}"), "components": spec["components"]});
                jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .build(&root)
                    .unwrap_or_else(|e| panic!("{schema}: {e}"))
            };
            Some((validator("CreateChatCompletionRequest"), validator("CreateResponse")))
        })
        .as_ref()
}

/// Checks a request body sent to `path` against the specification (Chat
/// Completions and Responses paths; others pass). The error lists every problem.
pub fn check(path: &str, body: &Value) -> Result<(), String> {
    let Some((chat, responses)) = validators() else { return Ok(()) };
    let validator = if path.ends_with("/chat/completions") {
        chat
    } else if path.ends_with("/responses") {
        responses
    } else {
        return Ok(());
    };
    let problems: Vec<String> =
        validator.iter_errors(body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

/// The specification writes `oneOf` where its alternatives overlap (a user message
/// with a content list is both an `EasyInputMessage` and an `InputMessage`), which
/// JSON Schema would refuse as matching twice; read as OpenAPI tools read it, a
/// value must match one of them at least.
fn one_of_as_any_of(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(alternatives) = map.remove("oneOf") {
                map.insert("anyOf".to_owned(), alternatives);
            }
            map.values_mut().for_each(one_of_as_any_of);
        }
        Value::Array(items) => items.iter_mut().for_each(one_of_as_any_of),
        _ => {}
    }
}
