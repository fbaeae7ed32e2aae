//! Arguments a tool asks to see as HTTP headers (`x-mcp-header`, the
//! 2026-07-28 version over streamable HTTP): a property of its input schema
//! annotated `"x-mcp-header": "Region"` is sent as `Mcp-Param-Region` with
//! every call. An annotation that breaks the rules (not a header token, a
//! name given twice, on a type other than string, integer or boolean, or not
//! reached from the root through `properties` alone) leaves the tool out.

use serde_json::Value;

use super::http::header_text;

/// The largest integer a header may carry (JSON's safe integers).
const SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One annotated argument: the header's name (after `Mcp-Param-`) and where
/// the argument is, by property names from the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// The name after `Mcp-Param-`.
    pub(crate) name: String,
    /// The property names from the schema's root to the argument.
    pub(crate) path: Vec<String>,
}

/// The annotated arguments of `schema`, or why the annotations are invalid.
pub(crate) fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut found)?;
    for (i, header) in found.iter().enumerate() {
        if found[..i].iter().any(|earlier| earlier.name.eq_ignore_ascii_case(&header.name)) {
            return Err(format!("the x-mcp-header {:?} is given twice", header.name));
        }
    }
    Ok(found)
}

/// Walks `schema` at `path`; `reachable` while every step was a `properties` key.
fn walk(schema: &Value, path: &mut Vec<String>, reachable: bool, found: &mut Vec<ParamHeader>) -> Result<(), String> {
    let Value::Object(object) = schema else {
        if let Value::Array(items) = schema {
            return items.iter().try_for_each(|item| walk(item, path, false, found));
        }
        return Ok(());
    };
    if let Some(annotation) = object.get("x-mcp-header") {
        let at = if path.is_empty() { "the root".to_owned() } else { path.join(".") };
        let name = annotation
            .as_str()
            .filter(|name| is_token(name))
            .ok_or_else(|| format!("the x-mcp-header of {at} is not a header name: {annotation}"))?;
        if !reachable || path.is_empty() {
            return Err(format!("the x-mcp-header {name:?} is not on a property reached through properties alone"));
        }
        if !matches!(object.get("type").and_then(Value::as_str), Some("string" | "integer" | "boolean")) {
            return Err(format!("the x-mcp-header {name:?} is on {at}, which is not a string, integer or boolean"));
        }
        found.push(ParamHeader { name: name.to_owned(), path: path.clone() });
    }
    for (key, value) in object {
        match key.as_str() {
            "properties" => {
                for (property, schema) in value.as_object().into_iter().flatten() {
                    path.push(property.clone());
                    walk(schema, path, reachable, found)?;
                    path.pop();
                }
            }
            // Data, never schemas.
            "const" | "enum" | "default" | "examples" => {}
            _ => walk(value, path, false, found)?,
        }
    }
    Ok(())
}

/// Whether `name` is an HTTP token (RFC 9110's `1*tchar`).
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The headers `arguments` make for `headers`: a string as it is (encoded
/// when it is not plain visible ASCII), an integer in decimal, a boolean as
/// `true` or `false`; an absent or null argument sends none.
pub(crate) fn header_values(headers: &[ParamHeader], arguments: &Value) -> Vec<(String, String)> {
    let mut values = Vec::new();
    for header in headers {
        let value = header.path.iter().try_fold(arguments, |value, key| value.get(key));
        let text = match value {
            Some(Value::String(text)) => header_text(text),
            Some(Value::Bool(flag)) => flag.to_string(),
            Some(Value::Number(number)) => match number.as_i64() {
                Some(n) if (-SAFE_INTEGER..=SAFE_INTEGER).contains(&n) => n.to_string(),
                _ => continue,
            },
            _ => continue,
        };
        values.push((format!("mcp-param-{}", header.name), text));
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotated_properties_become_headers() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "plain": {"type": "string"}
        }});
        let headers = param_headers(&schema).unwrap();
        assert_eq!(headers.len(), 4);
        let arguments =
            json!({"region": "us west", "count": 3, "flag": false, "nested": {"zone": "Zürich"}, "plain": "x"});
        let values = header_values(&headers, &arguments);
        assert!(values.contains(&("mcp-param-Region".into(), "us west".into())));
        assert!(values.contains(&("mcp-param-Count".into(), "3".into())));
        assert!(values.contains(&("mcp-param-Flag".into(), "false".into())));
        assert!(values.contains(&("mcp-param-Zone".into(), "=?base64?WsO8cmljaA==?=".into())));
        assert_eq!(header_values(&headers, &json!({"region": null})), []);
    }

    #[test]
    fn broken_annotations_are_refused() {
        let on = |property: Value| json!({"type": "object", "properties": {"p": property}});
        for schema in [
            on(json!({"type": "number", "x-mcp-header": "N"})),
            on(json!({"type": "object", "x-mcp-header": "O"})),
            on(json!({"type": "string", "x-mcp-header": ""})),
            on(json!({"type": "string", "x-mcp-header": "a b"})),
            on(json!({"type": "string", "x-mcp-header": "a:b"})),
            on(json!({"type": "string", "x-mcp-header": "Zürich"})),
            on(json!({"type": "array", "items": {"type": "string", "x-mcp-header": "I"}})),
            json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Same"},
                                                     "b": {"type": "string", "x-mcp-header": "same"}}}),
            json!({"type": "object", "oneOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
        ] {
            assert!(param_headers(&schema).is_err(), "{schema}");
        }
    }
}
