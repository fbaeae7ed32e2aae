//! Input schemas: JSON Schema Draft 2020-12, compiled once at build, self-contained.
//! (A tool from an MCP server is compiled in the dialect its schema declares,
//! Draft 4 to 2020-12: [`InputSchema::compile_declared`].)
//!
//! Before compiling, the document is walked for what ferrule refuses: `$id`,
//! `$recursiveRef`, `$recursiveAnchor`, a `$schema` other than the document's
//! dialect, and any `$ref` / `$dynamicRef` that leaves the document. The compiler itself runs
//! offline, so no reference is ever fetched from the network or the file system.
//! `format` is an annotation; defaults are never applied and values never coerced.

use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode, Result};

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";
/// The dialects a schema may declare at its root when compiled as declared.
const DIALECTS: &[(&str, jsonschema::Draft)] = &[
    (DRAFT_2020_12, jsonschema::Draft::Draft202012),
    ("https://json-schema.org/draft/2019-09/schema", jsonschema::Draft::Draft201909),
    ("http://json-schema.org/draft-07/schema", jsonschema::Draft::Draft7),
    ("http://json-schema.org/draft-06/schema", jsonschema::Draft::Draft6),
    ("http://json-schema.org/draft-04/schema", jsonschema::Draft::Draft4),
];
/// Validation errors listed in one model-visible message; the rest are counted.
const MAX_REPORTED_ERRORS: usize = 8;

/// Keywords whose value is one subschema.
const SUBSCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "additionalItems",
];
/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to subschemas.
const SUBSCHEMA_MAP_KEYWORDS: &[&str] =
    &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
/// Keywords whose value is data, never a schema: nothing in it is a reference.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

/// A compiled input schema. Immutable and shared by every run of an agent.
pub struct InputSchema {
    document: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputSchema").field("document", &self.document).finish()
    }
}

impl InputSchema {
    /// Checks and compiles `document`; an `INVALID_SCHEMA` error says what is wrong
    /// and where (a JSON pointer into the schema).
    pub fn compile(document: Value) -> Result<Self> {
        InputSchema::compile_in(document, DRAFT_2020_12, jsonschema::Draft::Draft202012)
    }

    /// Checks and compiles `document` in the dialect its root's `$schema`
    /// declares (Draft 4, 6, 7, 2019-09 or 2020-12; 2020-12 when it declares
    /// none), as a tool from an MCP server is; otherwise as [`compile`](Self::compile).
    pub fn compile_declared(document: Value) -> Result<Self> {
        let declared = document.get("$schema").map(|d| d.as_str().map(dialect_of));
        let (uri, draft) = match declared {
            None => (DRAFT_2020_12, jsonschema::Draft::Draft202012),
            Some(uri) => *DIALECTS.iter().find(|(known, _)| Some(*known) == uri.as_deref()).ok_or_else(|| {
                let known: Vec<&str> = DIALECTS.iter().map(|(uri, _)| *uri).collect();
                invalid(format!("(root): $schema {} is none of {}", document["$schema"], known.join(", ")))
            })?,
        };
        InputSchema::compile_in(document, uri, draft)
    }

    /// Checks `document` as a schema of the dialect `uri` and compiles it as `draft`.
    fn compile_in(document: Value, uri: &str, draft: jsonschema::Draft) -> Result<Self> {
        if !document.is_object() {
            return Err(invalid("an input schema must be a JSON object"));
        }
        check_subschema(&document, "", uri)?;
        let validator = jsonschema::options()
            .with_draft(draft)
            .should_validate_formats(false)
            .offline()
            .build(&document)
            .map_err(|e| invalid(format!("does not compile: {e}")))?;
        Ok(InputSchema { document, validator })
    }

    /// The schema document, as sent to providers.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// Validates arguments; on failure, a message naming each failing field by JSON
    /// pointer, written for the model.
    pub fn validate(&self, arguments: &Value) -> Result<(), String> {
        if self.validator.is_valid(arguments) {
            return Ok(());
        }
        let mut errors = self.validator.iter_errors(arguments);
        let mut lines = Vec::new();
        let mut total = 0usize;
        for error in errors.by_ref() {
            total += 1;
            if lines.len() < MAX_REPORTED_ERRORS {
                let pointer = error.instance_path().as_str();
                let at = if pointer.is_empty() { "(root)" } else { pointer };
                lines.push(format!("{at}: {error}"));
            }
        }
        if total == 0 {
            return Ok(());
        }
        if total > lines.len() {
            lines.push(format!("... and {} more", total - lines.len()));
        }
        Err(lines.join("; "))
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidSchema, message)
}

/// Walks one subschema (an object or a boolean) at `pointer`, of the dialect `dialect`.
fn check_subschema(schema: &Value, pointer: &str, dialect: &str) -> Result<()> {
    let Value::Object(object) = schema else {
        return match schema {
            Value::Bool(_) => Ok(()),
            _ => Err(invalid(format!("{}: a subschema must be an object or a boolean", at(pointer)))),
        };
    };
    check_keywords(object, pointer, dialect)?;
    for (keyword, value) in object {
        let here = format!("{pointer}/{}", escape(keyword));
        if keyword == "items" && value.is_array() && dialect != DRAFT_2020_12 {
            // Before 2020-12, a list of items is a tuple of subschemas.
            for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                check_subschema(item, &format!("{here}/{i}"), dialect)?;
            }
        } else if keyword == "dependencies" && dialect != DRAFT_2020_12 {
            // Before 2019-09: a subschema, or a list of names, by property.
            for (name, item) in value.as_object().into_iter().flatten().filter(|(_, item)| !item.is_array()) {
                check_subschema(item, &format!("{here}/{}", escape(name)), dialect)?;
            }
        } else if SUBSCHEMA_KEYWORDS.contains(&keyword.as_str()) {
            check_subschema(value, &here, dialect)?;
        } else if SUBSCHEMA_LIST_KEYWORDS.contains(&keyword.as_str()) {
            if let Value::Array(items) = value {
                for (i, item) in items.iter().enumerate() {
                    check_subschema(item, &format!("{here}/{i}"), dialect)?;
                }
            }
        } else if SUBSCHEMA_MAP_KEYWORDS.contains(&keyword.as_str()) {
            if let Value::Object(entries) = value {
                for (name, item) in entries {
                    check_subschema(item, &format!("{here}/{}", escape(name)), dialect)?;
                }
            }
        } else if !DATA_KEYWORDS.contains(&keyword.as_str()) {
            check_unknown_keyword(value, &here, dialect)?;
        }
    }
    Ok(())
}

/// Walks the value of a keyword the specification does not define (an annotation
/// such as `x-ui`). Its shape is free, but the compiler still follows references
/// it finds there, so every object inside is checked for them.
fn check_unknown_keyword(value: &Value, pointer: &str, dialect: &str) -> Result<()> {
    match value {
        Value::Object(object) => {
            check_keywords(object, pointer, dialect)?;
            object
                .iter()
                .try_for_each(|(key, item)| check_unknown_keyword(item, &format!("{pointer}/{}", escape(key)), dialect))
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_unknown_keyword(item, &format!("{pointer}/{i}"), dialect)),
        _ => Ok(()),
    }
}

fn check_keywords(object: &Map<String, Value>, pointer: &str, dialect: &str) -> Result<()> {
    for banned in ["$id", "$recursiveRef", "$recursiveAnchor"] {
        if object.contains_key(banned) {
            return Err(invalid(format!(
                "{}: {banned} is not supported; input schemas must be self-contained documents",
                at(pointer)
            )));
        }
    }
    if let Some(declared) = object.get("$schema") {
        if declared.as_str().map(dialect_of).as_deref() != Some(dialect) {
            return Err(invalid(format!("{}: $schema {declared} is not supported; only {dialect} is", at(pointer))));
        }
    }
    for reference in ["$ref", "$dynamicRef"] {
        if let Some(target) = object.get(reference) {
            if !target.as_str().is_some_and(|t| t.starts_with('#')) {
                return Err(invalid(format!(
                    "{}: {reference} {target} leaves the document; only same-document references (starting with #) are allowed",
                    at(pointer)
                )));
            }
        }
    }
    Ok(())
}

/// The dialect a `$schema` value names, as `DIALECTS` spells it: without a
/// trailing `#`, and `http` for the drafts before 2019-09 (servers write
/// `https` for them too).
fn dialect_of(declared: &str) -> String {
    declared.trim_end_matches('#').replace("https://json-schema.org/draft-0", "http://json-schema.org/draft-0")
}

fn at(pointer: &str) -> &str {
    if pointer.is_empty() {
        "(root)"
    } else {
        pointer
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rejection(schema: Value) -> String {
        let err = InputSchema::compile(schema).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidSchema);
        err.message
    }

    #[test]
    fn rejects_id_anywhere() {
        let message = rejection(json!({"type": "object", "properties": {"a": {"$id": "x"}}}));
        assert!(message.contains("/properties/a") && message.contains("$id"), "{message}");
    }

    #[test]
    fn a_property_named_id_is_not_a_keyword() {
        InputSchema::compile(json!({"type": "object", "properties": {"$id": {"type": "string"}}})).unwrap();
    }

    #[test]
    fn rejects_recursive_keywords() {
        assert!(rejection(json!({"$recursiveAnchor": true})).contains("$recursiveAnchor"));
        assert!(rejection(json!({"allOf": [{"$recursiveRef": "#"}]})).contains("/allOf/0"));
    }

    #[test]
    fn rejects_other_dialects() {
        let message = rejection(json!({"$schema": "http://json-schema.org/draft-07/schema#"}));
        assert!(message.contains("draft-07"), "{message}");
        InputSchema::compile(json!({"$schema": "https://json-schema.org/draft/2020-12/schema"})).unwrap();
    }

    #[test]
    fn a_declared_dialect_is_compiled_as_declared() {
        let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"items": {"type": "array", "items": [{"type": "string"}], "additionalItems": false}}});
        assert!(InputSchema::compile(draft7.clone()).is_err(), "host tools stay 2020-12");
        let schema = InputSchema::compile_declared(draft7).unwrap();
        schema.validate(&json!({"items": ["a"]})).unwrap();
        let extra = schema.validate(&json!({"items": ["a", "b"]})).unwrap_err();
        assert!(extra.contains("/items"), "Draft 7 tuple items and additionalItems apply: {extra}");
        let undeclared = InputSchema::compile_declared(json!({"type": "object", "required": ["a"]})).unwrap();
        assert!(undeclared.validate(&json!({})).is_err());
        let unknown = InputSchema::compile_declared(json!({"$schema": "http://example.com/mine"})).err().unwrap();
        assert!(unknown.message.contains("none of"), "{}", unknown.message);
        let mixed = json!({"$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}});
        assert!(InputSchema::compile_declared(mixed).is_err(), "one dialect per document");
        let remote = json!({"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "http://example.com/s.json"});
        assert!(InputSchema::compile_declared(remote).is_err(), "never fetched");
        let hidden = json!({"$schema": "http://json-schema.org/draft-07/schema#",
            "dependencies": {"a": ["b"], "c": {"$ref": "http://example.com/s.json"}}});
        assert!(InputSchema::compile_declared(hidden).is_err(), "a reference in dependencies is found");
        let https = json!({"$schema": "https://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema", "type": "string"}}});
        let https = InputSchema::compile_declared(https).unwrap();
        assert!(https.validate(&json!({"a": 1})).is_err(), "either scheme names Draft 7, at the root or inside");
        let tuple = json!({"$schema": "http://json-schema.org/draft-04/schema#",
            "items": [{"$ref": "http://example.com/s.json"}]});
        assert!(InputSchema::compile_declared(tuple).is_err(), "a reference in tuple items is found");
    }

    #[test]
    fn rejects_references_outside_the_document() {
        assert!(rejection(json!({"$ref": "https://example.com/s.json"})).contains("leaves the document"));
        assert!(rejection(json!({"$ref": "other.json#/a"})).contains("leaves the document"));
        assert!(rejection(json!({"properties": {"a": {"$dynamicRef": "file:///etc/x"}}})).contains("/properties/a"));
    }

    #[test]
    fn references_hidden_under_unknown_keywords_are_found_and_named() {
        let message =
            rejection(json!({"type": "object", "x-extra": {"nested": {"$ref": "https://example.com/s.json"}}}));
        assert!(message.contains("/x-extra/nested") && message.contains("leaves the document"), "{message}");
        let message = rejection(json!({"properties": {"a": {"x-list": [{}, {"$ref": "file:///etc/passwd"}]}}}));
        assert!(message.contains("/properties/a/x-list/1"), "{message}");
        // Data is data: a "$ref" inside const or enum is not a reference; and an
        // annotation's shape is its own.
        InputSchema::compile(json!({"const": {"$ref": "https://example.com"}, "enum": [{"$ref": "x"}]})).unwrap();
        InputSchema::compile(json!({"x-ui": {"items": 3, "order": ["a"]}})).unwrap();
    }

    #[test]
    fn same_document_refs_validate() {
        let schema = InputSchema::compile(json!({
            "type": "object",
            "$defs": {"id": {"type": "string", "minLength": 2}},
            "properties": {"a": {"$ref": "#/$defs/id"}}
        }))
        .unwrap();
        assert!(schema.validate(&json!({"a": "ok"})).is_ok());
        let message = schema.validate(&json!({"a": "x"})).unwrap_err();
        assert!(message.starts_with("/a:"), "{message}");
    }

    #[test]
    fn dynamic_ref_resolves_within_the_document() {
        let schema = InputSchema::compile(json!({
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
            "additionalProperties": false
        }))
        .unwrap();
        assert!(schema.validate(&json!({"children": [{"children": []}]})).is_ok());
        let message = schema.validate(&json!({"children": [{"x": 1}]})).unwrap_err();
        assert!(message.contains("/children/0"), "{message}");
    }

    #[test]
    fn format_is_an_annotation_and_nothing_is_coerced() {
        let schema = InputSchema::compile(json!({
            "type": "object",
            "properties": {"email": {"type": "string", "format": "email"}, "n": {"type": "integer", "default": 3}}
        }))
        .unwrap();
        assert!(schema.validate(&json!({"email": "not-an-email"})).is_ok());
        let message = schema.validate(&json!({"n": "123"})).unwrap_err();
        assert!(message.starts_with("/n:"), "{message}");
    }

    #[test]
    fn missing_required_field_is_reported_at_the_root() {
        let schema = InputSchema::compile(json!({"type": "object", "required": ["customer_id"]})).unwrap();
        let message = schema.validate(&json!({})).unwrap_err();
        assert!(message.contains("(root)") && message.contains("customer_id"), "{message}");
    }

    #[test]
    fn non_object_schema_is_rejected() {
        assert!(rejection(json!([1])).contains("JSON object"));
    }
}
