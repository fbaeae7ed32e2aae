//! A tool's arguments checked against its compiled input schema.

use crate::tool::InputSchema;

/// Input: a schema, a NUL, then arguments (both JSON text). Holds: a schema
/// is compiled or refused with a message, in both of its dialect readings
/// alike when it declares none; the arguments' verdict is the same twice, and
/// a refusal names at least one failing place.
pub fn tool_arguments(data: &[u8]) {
    let [schema, arguments] = super::parts(data, 2)[..] else { return };
    let (Ok(schema), Ok(arguments)) = (std::str::from_utf8(schema), std::str::from_utf8(arguments)) else { return };
    let (Ok(schema), Ok(arguments)) = (crate::json::parse_unique(schema), crate::json::parse_unique(arguments)) else {
        return;
    };
    let declares = schema.get("$schema").is_some();
    let compiled = InputSchema::compile(schema.clone());
    let declared = InputSchema::compile_declared(schema);
    if !declares {
        assert_eq!(compiled.is_ok(), declared.is_ok(), "a schema that declares no dialect compiles one way");
    }
    for schema in [compiled, declared] {
        let schema = match schema {
            Ok(schema) => schema,
            Err(error) => {
                assert!(!error.message.is_empty(), "a schema refused without a reason");
                continue;
            }
        };
        let verdict = schema.validate(&arguments);
        assert_eq!(verdict, schema.validate(&arguments), "the same arguments judged twice differ");
        if let Err(why) = verdict {
            let places = why
                .split("; ")
                .all(|line| line.starts_with("(root): ") || line.starts_with('/') || line.starts_with("... and "));
            assert!(!why.is_empty() && places, "a refusal that names no place: {why}");
        }
    }
}
