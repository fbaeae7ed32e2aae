//! What the generator makes code of, read from the schema: the error codes
//! (`ErrorCode`, with each code's number in `x-ferrule-code`) and the string
//! enums (a `oneOf` of string constants), each with the descriptions the Rust
//! doc comments gave them.

use serde::Serialize;
use serde_json::Value;

/// One value of an enum: its JSON spelling, its number (error codes only) and
/// its description.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Variant {
    pub value: String,
    pub number: Option<u64>,
    pub doc: String,
}

/// An enum of the schema: its definition's name, description and values.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Enum {
    pub name: String,
    pub doc: String,
    pub variants: Vec<Variant>,
}

/// The enum the schema defines as `$defs/<name>`: a `oneOf` of string
/// constants, each of them numbered when `numbered`.
pub fn read_enum(schema: &Value, name: &str, numbered: bool) -> Result<Enum, String> {
    let definition =
        schema.pointer(&format!("/$defs/{name}")).ok_or_else(|| format!("the schema defines no {name}"))?;
    let branches = definition["oneOf"].as_array().ok_or_else(|| format!("{name} is not a oneOf of constants"))?;
    let variants = branches
        .iter()
        .map(|branch| {
            let value = branch["const"].as_str().ok_or_else(|| format!("{name}: a branch is not a string constant"))?;
            let number = match numbered {
                true => {
                    Some(branch["x-ferrule-code"].as_u64().ok_or_else(|| format!("{name}: {value} has no number"))?)
                }
                false => None,
            };
            Ok(Variant { value: value.to_owned(), number, doc: doc_of(branch) })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if variants.is_empty() {
        return Err(format!("{name} has no values"));
    }
    Ok(Enum { name: name.to_owned(), doc: doc_of(definition), variants })
}

/// A definition's description, on one line per paragraph.
fn doc_of(definition: &Value) -> String {
    let text = definition["description"].as_str().unwrap_or_default();
    text.split("\n\n")
        .map(|paragraph| paragraph.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_enum_reads_with_its_numbers_and_docs() {
        let schema = json!({"$defs": {"ErrorCode": {"description": "A code.", "oneOf": [
            {"const": "NULL_ARG", "x-ferrule-code": 1, "description": "A NULL\npointer."},
            {"const": "PANIC", "x-ferrule-code": 7}
        ]}}});
        let codes = read_enum(&schema, "ErrorCode", true).unwrap();
        assert_eq!(
            codes.variants[0],
            Variant { value: "NULL_ARG".into(), number: Some(1), doc: "A NULL pointer.".into() }
        );
        assert_eq!(codes.variants[1].doc, "");
        assert!(read_enum(&schema, "RunStatus", false).unwrap_err().contains("no RunStatus"));
        let unnumbered = json!({"$defs": {"ErrorCode": {"oneOf": [{"const": "X"}]}}});
        assert!(read_enum(&unnumbered, "ErrorCode", true).unwrap_err().contains("no number"));
    }
}
