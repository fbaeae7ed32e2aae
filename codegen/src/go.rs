//! Go's names and types for the schema's: exported field names with Go's
//! initialisms (`call_id` → `CallID`, `delay_ms` → `DelayMS`), and the Go type of
//! each field.

use crate::names::{pascal_with, reference, INITIALISMS};

/// The Go type of each definition a field may refer to.
const REFERENCES: &[(&str, &str)] = &[
    ("Message", "Message"),
    ("ToolCall", "ToolCall"),
    ("ToolResult", "ToolResult"),
    ("Error", "Error"),
    ("RunResult", "*Result"),
    ("RunStatus", "Status"),
];

/// A JSON field name as an exported Go field name.
pub fn field_name(json: &str) -> String {
    let mut initialisms = INITIALISMS.to_vec();
    initialisms.push("MS");
    pascal_with(json, &initialisms)
}

/// The Go type of a field of `kind` (`string`, `integer`, `boolean`, or `ref`
/// to the definition `name`); a nullable definition is a pointer. A nullable
/// scalar is the scalar itself (written with `omitempty`).
pub fn type_of(kind: &str, name: Option<&str>, nullable: bool) -> Result<String, String> {
    match kind {
        "string" => Ok("string".to_owned()),
        "integer" => Ok("int".to_owned()),
        "boolean" => Ok("bool".to_owned()),
        "ref" => {
            let go = reference(name, REFERENCES, "Go")?;
            Ok(if nullable && !go.starts_with('*') { format!("*{go}") } else { go.to_owned() })
        }
        other => Err(format!("no Go type for {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_names_and_types() {
        assert_eq!(field_name("call_id"), "CallID");
        assert_eq!(field_name("delay_ms"), "DelayMS");
        assert_eq!(field_name("arguments_delta"), "ArgumentsDelta");
        assert_eq!(type_of("ref", Some("Error"), true).unwrap(), "*Error");
        assert_eq!(type_of("ref", Some("RunResult"), false).unwrap(), "*Result");
        assert_eq!(type_of("integer", None, false).unwrap(), "int");
        assert!(type_of("ref", Some("Nothing"), false).unwrap_err().contains("Nothing"));
    }
}
