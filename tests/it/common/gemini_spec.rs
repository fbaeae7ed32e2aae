//! Google's description of the Gemini API (its discovery document, never part
//! of this repository), as the reference every Gemini request body ferrule sends
//! is checked against: read strictly, so a field the API does not have, a
//! misspelt one or a value of the wrong kind is an error.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

/// `FERRULE_GEMINI_SPEC`, or `gemini_spec/discovery.json` beside the fixtures
/// directory.
fn spec_path() -> PathBuf {
    match std::env::var_os("FERRULE_GEMINI_SPEC") {
        Some(path) => PathBuf::from(path),
        None => {
            let fixtures = match std::env::var_os("FERRULE_FIXTURES") {
                Some(dir) => PathBuf::from(dir),
                None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"),
            };
            fixtures.join("../gemini_spec/discovery.json")
        }
    }
}

/// The validator of `GenerateContentRequest`, or `None` (said loudly) when the
/// description is absent.
fn validator() -> Option<&'static jsonschema::Validator> {
    static VALIDATOR: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    VALIDATOR
        .get_or_init(|| {
            let path = spec_path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                eprintln!(
                    "\n*** SKIPPED: Gemini API description not found at {} (set FERRULE_GEMINI_SPEC) ***\n",
                    path.display()
                );
                return None;
            };
            let discovery: Value = serde_json::from_str(&text).expect("discovery.json is JSON");
            let schemas = discovery["schemas"].as_object().expect("the document has schemas");
            let definitions: Map<String, Value> =
                schemas.iter().map(|(name, schema)| (name.clone(), translate(schema, schemas))).collect();
            let root = json!({"$ref": "#/$defs/GenerateContentRequest", "$defs": definitions});
            Some(
                jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .build(&root)
                    .unwrap_or_else(|e| panic!("GenerateContentRequest: {e}")),
            )
        })
        .as_ref()
}

/// Checks a request body sent to `path` (a `:generateContent` or
/// `:streamGenerateContent` path; others pass). The error lists every problem.
pub fn check(path: &str, body: &Value) -> Result<(), String> {
    if !path.contains(":generateContent") && !path.contains(":streamGenerateContent") {
        return Ok(());
    }
    let Some(validator) = validator() else { return Ok(()) };
    let problems: Vec<String> =
        validator.iter_errors(body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

/// One discovery schema as JSON Schema. Discovery lists no required fields
/// and leaves objects open; here an object that lists its properties takes no
/// others. `type: any`, and a reference to a schema the document lacks, take
/// anything.
fn translate(node: &Value, schemas: &Map<String, Value>) -> Value {
    if let Some(name) = node.get("$ref").and_then(Value::as_str) {
        return match schemas.contains_key(name) {
            true => json!({"$ref": format!("#/$defs/{name}")}),
            false => json!({}),
        };
    }
    let mut out = Map::new();
    match (node.get("type").and_then(Value::as_str), node.get("format").and_then(Value::as_str)) {
        (Some("any") | None, _) => {}
        (Some("object"), _) => {
            out.insert("type".into(), json!("object"));
            if let Some(properties) = node.get("properties").and_then(Value::as_object) {
                let properties: Map<String, Value> =
                    properties.iter().map(|(name, p)| (name.clone(), translate(p, schemas))).collect();
                out.insert("properties".into(), Value::Object(properties));
            }
            let others = match node.get("additionalProperties") {
                Some(map) => translate(map, schemas),
                None if node.get("properties").is_some() => json!(false),
                None => json!(true),
            };
            out.insert("additionalProperties".into(), others);
        }
        (Some("array"), _) => {
            out.insert("type".into(), json!("array"));
            if let Some(items) = node.get("items") {
                out.insert("items".into(), translate(items, schemas));
            }
        }
        // Base64 in either alphabet, as proto3 JSON reads it.
        (Some("string"), Some("byte")) => {
            out.insert("type".into(), json!("string"));
            out.insert("pattern".into(), json!("^[A-Za-z0-9+/_-]*={0,2}$"));
        }
        // A 64-bit integer: a decimal string, or a number.
        (Some("string"), Some("int64" | "uint64")) => {
            out.insert("anyOf".into(), json!([{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]+$"}]));
        }
        (Some("string"), Some("google-duration")) => {
            out.insert("type".into(), json!("string"));
            out.insert("pattern".into(), json!("^-?[0-9]+(\\.[0-9]{1,9})?s$"));
        }
        (Some(kind), _) => {
            out.insert("type".into(), json!(kind));
        }
    }
    if let Some(values) = node.get("enum") {
        out.insert("enum".into(), values.clone());
    }
    Value::Object(out)
}

#[test]
fn the_translation_catches_what_it_should() {
    if validator().is_none() {
        return;
    }
    let path = "/v1beta/models/m:generateContent";
    let good = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "f", "description": "d", "parametersJsonSchema": {"type": "object"}}]}],
        "generationConfig": {"thinkingConfig": {"thinkingBudget": 128, "thinkingLevel": "LOW"}},
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}}});
    check(path, &good).unwrap();
    for bad in [
        json!({"contents": [{"role": "user", "parts": [{"text": 5}]}]}),
        json!({"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}}),
        json!({"contents": [], "generationConfig": {"thinkingConfig": {"thinkingBudget": "128"}}}),
        json!({"contents": [{"parts": [{"text": "", "thoughtSignature": "not base64!"}]}]}),
        json!({"contents": [], "tools": [{"functionDeclaration": []}]}),
        json!({"contents": [], "system_instruction": {}}),
    ] {
        assert!(check(path, &bad).is_err(), "{bad} passed");
    }
    assert!(check("/v1/chat/completions", &json!({"anything": 1})).is_ok());
}
