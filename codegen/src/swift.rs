//! Swift's names and types for the schema's: labels in lower camel case with
//! Swift's initialisms (`call_id` → `callID`), and the Swift type of each field.

use crate::model::FieldType;
use crate::names::{camel, reference};

/// The Swift type of each definition a field may refer to.
const REFERENCES: &[(&str, &str)] = &[
    ("Message", "Message"),
    ("ToolCall", "ToolCallRequest"),
    ("ToolResult", "ToolResult"),
    ("Error", "FerruleError"),
    ("RunResult", "RunResult"),
    ("RunStatus", "Status"),
];

/// The name of the Swift type generated for the schema definition `definition`.
pub fn type_name(definition: &str) -> Result<String, String> {
    Ok(reference(Some(definition), REFERENCES, "Swift")?.to_owned())
}

/// A JSON field name as a Swift label or property name.
pub fn label(json: &str) -> String {
    camel(json)
}

/// The Swift type of a field, optional when it may be null; any JSON value is
/// a `JSONValue`.
pub fn type_of(ty: &FieldType) -> Result<String, String> {
    let item = || ty.items.as_deref().ok_or_else(|| format!("a {} without its item type", ty.kind)).and_then(type_of);
    let base = match ty.kind.as_str() {
        "string" => "String".to_owned(),
        "integer" => "Int".to_owned(),
        "number" => "Double".to_owned(),
        "boolean" => "Bool".to_owned(),
        "array" => format!("[{}]", item()?),
        "map" => format!("[String: {}]", item()?),
        "object" | "any" => "JSONValue".to_owned(),
        "ref" => reference(ty.name.as_deref(), REFERENCES, "Swift")?.to_owned(),
        other => return Err(format!("no Swift type for {other}")),
    };
    Ok(if ty.nullable { format!("{base}?") } else { base })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swift_names_and_types() {
        assert_eq!(label("call_id"), "callID");
        assert_eq!(label("delay_ms"), "delayMs");
        assert_eq!(label("id"), "id");
        let error = FieldType { name: Some("Error".into()), ..FieldType::of("ref") };
        assert_eq!(type_of(&error).unwrap(), "FerruleError");
        assert_eq!(type_of(&FieldType { nullable: true, ..FieldType::of("string") }).unwrap(), "String?");
        let names = FieldType { items: Some(Box::new(FieldType::of("string"))), ..FieldType::of("map") };
        assert_eq!(type_of(&names).unwrap(), "[String: String]");
    }
}
