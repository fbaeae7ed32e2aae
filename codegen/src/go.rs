//! Go's names and types for the schema's: exported field names with Go's
//! initialisms (`call_id` → `CallID`, `delay_ms` → `DelayMS`), and the Go type of
//! each field.

use crate::model::FieldType;
use crate::names::{pascal_with, reference, INITIALISMS};

/// The Go type of each definition a field may refer to.
const REFERENCES: &[(&str, &str)] = &[
    ("Message", "Message"),
    ("ToolCall", "ToolCall"),
    ("ToolResult", "ToolResult"),
    ("Error", "Error"),
    ("RunResult", "*Result"),
    ("RunStatus", "Status"),
    ("RunState", "json.RawMessage"),
    ("Interruption", "Interruption"),
    ("Decision", "Decision"),
    ("Usage", "Usage"),
    ("HookToolCall", "PayloadCall"),
    ("RunStartPayload", "RunStartPayload"),
    ("TurnStartPayload", "TurnStartPayload"),
    ("ToolCallPayload", "ToolCallPayload"),
    ("ToolResultPayload", "ToolResultPayload"),
    ("FinalAnswerPayload", "FinalAnswerPayload"),
];

/// The name of the Go type generated for the schema definition `definition` (a pointer's, for Go, without its `*`).
pub fn type_name(definition: &str) -> Result<String, String> {
    Ok(reference(Some(definition), REFERENCES, "Go")?.trim_start_matches('*').to_owned())
}

/// A JSON field name as an exported Go field name.
pub fn field_name(json: &str) -> String {
    let mut initialisms = INITIALISMS.to_vec();
    initialisms.push("MS");
    pascal_with(json, &initialisms)
}

/// The Go type of a field: a nullable definition is a pointer, any JSON value
/// a `json.RawMessage`; a nullable scalar, list or map is the value itself
/// (written with `omitempty`).
pub fn type_of(ty: &FieldType) -> Result<String, String> {
    let item = || ty.items.as_deref().ok_or_else(|| format!("a {} without its item type", ty.kind)).and_then(type_of);
    Ok(match ty.kind.as_str() {
        "string" => "string".to_owned(),
        "integer" => "int".to_owned(),
        "number" => "float64".to_owned(),
        "boolean" => "bool".to_owned(),
        "array" => format!("[]{}", item()?),
        "map" => format!("map[string]{}", item()?),
        "object" | "any" => "json.RawMessage".to_owned(),
        "ref" => {
            let go = reference(ty.name.as_deref(), REFERENCES, "Go")?;
            let by_reference = go.starts_with('*') || go.starts_with("[]") || go.starts_with("json.");
            if ty.nullable && !by_reference {
                format!("*{go}")
            } else {
                go.to_owned()
            }
        }
        other => return Err(format!("no Go type for {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_names_and_types() {
        assert_eq!(field_name("call_id"), "CallID");
        assert_eq!(field_name("delay_ms"), "DelayMS");
        assert_eq!(field_name("arguments_delta"), "ArgumentsDelta");
        let reference = |name: &str, nullable| FieldType { name: Some(name.into()), nullable, ..FieldType::of("ref") };
        assert_eq!(type_of(&reference("Error", true)).unwrap(), "*Error");
        assert_eq!(type_of(&reference("RunResult", false)).unwrap(), "*Result");
        assert_eq!(type_of(&FieldType::of("integer")).unwrap(), "int");
        let messages = FieldType { items: Some(Box::new(reference("Message", false))), ..FieldType::of("array") };
        assert_eq!(type_of(&messages).unwrap(), "[]Message");
        assert_eq!(type_of(&FieldType::of("any")).unwrap(), "json.RawMessage");
        assert!(type_of(&reference("Nothing", false)).unwrap_err().contains("Nothing"));
    }
}
