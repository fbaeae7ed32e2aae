//! Swift's names and types for the schema's: labels in lower camel case with
//! Swift's initialisms (`call_id` → `callID`), and the Swift type of each field.

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

/// A JSON field name as a Swift label or property name.
pub fn label(json: &str) -> String {
    camel(json)
}

/// The Swift type of a field of `kind` (`string`, `integer`, `boolean`, or `ref`
/// to the definition `name`), optional when it may be null.
pub fn type_of(kind: &str, name: Option<&str>, nullable: bool) -> Result<String, String> {
    let base = match kind {
        "string" => "String",
        "integer" => "Int",
        "boolean" => "Bool",
        "ref" => reference(name, REFERENCES, "Swift")?,
        other => return Err(format!("no Swift type for {other}")),
    };
    Ok(if nullable { format!("{base}?") } else { base.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swift_names_and_types() {
        assert_eq!(label("call_id"), "callID");
        assert_eq!(label("delay_ms"), "delayMs");
        assert_eq!(label("id"), "id");
        assert_eq!(type_of("ref", Some("Error"), false).unwrap(), "FerruleError");
        assert_eq!(type_of("string", None, true).unwrap(), "String?");
    }
}
