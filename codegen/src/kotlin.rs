//! Kotlin's names and types for the schema's: properties in lower camel case
//! (`call_id` → `callId`), and the Kotlin type and default of each field.

use crate::model::FieldType;
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

/// The name of the Kotlin type generated for the schema definition `definition`.
pub fn type_name(definition: &str) -> Result<String, String> {
    Ok(reference(Some(definition), REFERENCES, "Kotlin")?.to_owned())
}

/// A JSON field name as a Kotlin property name: initialisms too are words
/// (`callId`, as Kotlin writes them).
pub fn property_name(json: &str) -> String {
    camel_with(json, &[])
}

/// The Kotlin type of a field, with `?` when it may be null; a 64-bit integer
/// is a `Long`, any JSON value a `JsonElement`.
pub fn type_of(ty: &FieldType) -> Result<String, String> {
    let item = || ty.items.as_deref().ok_or_else(|| format!("a {} without its item type", ty.kind)).and_then(type_of);
    let base = match ty.kind.as_str() {
        "string" => "String".to_owned(),
        "integer" if matches!(ty.format.as_deref(), Some("uint64" | "int64")) => "Long".to_owned(),
        "integer" => "Int".to_owned(),
        "number" => "Double".to_owned(),
        "boolean" => "Boolean".to_owned(),
        "array" => format!("List<{}>", item()?),
        "map" => format!("Map<String, {}>", item()?),
        "object" => "JsonObject".to_owned(),
        "any" => "JsonElement".to_owned(),
        "ref" => reference(ty.name.as_deref(), REFERENCES, "Kotlin")?.to_owned(),
        other => return Err(format!("no Kotlin type for {other}")),
    };
    Ok(if ty.nullable { format!("{base}?") } else { base })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kotlin_names_and_types() {
        assert_eq!(property_name("call_id"), "callId");
        assert_eq!(property_name("delay_ms"), "delayMs");
        assert_eq!(property_name("is_error"), "isError");
        let integer = |format: &str| FieldType { format: Some(format.into()), ..FieldType::of("integer") };
        assert_eq!(type_of(&integer("uint64")).unwrap(), "Long");
        assert_eq!(type_of(&integer("uint32")).unwrap(), "Int");
        assert_eq!(type_of(&FieldType { nullable: true, ..FieldType::of("string") }).unwrap(), "String?");
        let call = FieldType { name: Some("ToolCall".into()), ..FieldType::of("ref") };
        assert_eq!(type_of(&call).unwrap(), "ToolCallRequest");
        assert_eq!(
            type_of(&FieldType { items: Some(Box::new(call)), ..FieldType::of("array") }).unwrap(),
            "List<ToolCallRequest>"
        );
    }
}
