//! Kotlin's names and types for the schema's: properties in lower camel case
//! (`call_id` → `callId`), and the Kotlin type and default of each field.

use crate::names::{camel_with, reference};

/// The Kotlin type of each definition a field may refer to.
const REFERENCES: &[(&str, &str)] = &[
    ("Message", "Message"),
    ("ToolCall", "ToolCallRequest"),
    ("ToolResult", "JsonObject"),
    ("Error", "RunError"),
    ("RunResult", "RunResult"),
    ("RunStatus", "Status"),
];

/// A JSON field name as a Kotlin property name: initialisms too are words
/// (`callId`, as Kotlin writes them).
pub fn property_name(json: &str) -> String {
    camel_with(json, &[])
}

/// The Kotlin type of a field of `kind` (`string`, `integer` of `format`,
/// `boolean`, or `ref` to the definition `name`), with `?` when it may be null.
pub fn type_of(kind: &str, name: Option<&str>, format: Option<&str>, nullable: bool) -> Result<String, String> {
    let base = match kind {
        "string" => "String".to_owned(),
        "integer" if format == Some("uint64") || format == Some("int64") => "Long".to_owned(),
        "integer" => "Int".to_owned(),
        "boolean" => "Boolean".to_owned(),
        "ref" => reference(name, REFERENCES, "Kotlin")?.to_owned(),
        other => return Err(format!("no Kotlin type for {other}")),
    };
    Ok(if nullable { format!("{base}?") } else { base })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kotlin_names_and_types() {
        assert_eq!(property_name("call_id"), "callId");
        assert_eq!(property_name("delay_ms"), "delayMs");
        assert_eq!(property_name("is_error"), "isError");
        assert_eq!(type_of("integer", None, Some("uint64"), false).unwrap(), "Long");
        assert_eq!(type_of("integer", None, Some("uint32"), false).unwrap(), "Int");
        assert_eq!(type_of("string", None, None, true).unwrap(), "String?");
        assert_eq!(type_of("ref", Some("ToolCall"), None, false).unwrap(), "ToolCallRequest");
    }
}
