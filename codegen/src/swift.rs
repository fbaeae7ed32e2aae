//! Swift's names and types for the schema's: labels in lower camel case with
//! Swift's initialisms (`call_id` → `callID`), and the Swift type of each field.

use serde::Serialize;
use serde_json::Value;

use crate::model::{Field, FieldType, FlatField, FlatMember, UnionVariant};
use crate::names::{camel, reference};

/// The Swift type of each definition a field may refer to, where it is not the
/// definition's own name (`names::reference`).
const REFERENCES: &[(&str, &str)] = &[
    ("Content", "[Part]"),
    ("ToolCall", "ToolCallRequest"),
    ("ToolResult", "ToolResult"),
    ("Error", "FerruleError"),
    ("RunResult", "RunResult"),
    ("RunStatus", "Status"),
    ("RunState", "JSONValue"),
    ("CallOutcome", "JSONValue"),
    ("HookToolCall", "PayloadCall"),
    ("AgentConfig", "AgentConfig"),
    ("ModelConfig", "ModelConfig"),
    ("HistoryConfig", "History"),
    ("BuiltinToolsConfig", "BuiltinTools"),
    ("SandboxConfig", "Sandbox"),
    ("SandboxMode", "String"),
    ("ToolChoice", "ToolChoice"),
    ("Execution", "String"),
    ("ProviderKind", "String"),
    ("ThinkingLevel", "String"),
    ("RecordConfig", "Recording"),
    ("TraceConfig", "Tracing"),
    ("OtlpConfig", "OTLPExporter"),
    ("RecordMode", "String"),
    ("ToolCompletion", "ToolResult"),
    ("OnError", "String"),
    ("HandoffMessages", "String"),
    ("ScriptTurn", "JSONValue"),
    ("Origin", "String"),
    ("StopReason", "String"),
    ("McpServerStatus", "String"),
    ("McpServerConfig", "MCPServer"),
    ("NeedsApproval", "JSONValue"),
    ("Event", "Event"),
];

/// Stored properties a Swift struct has beyond its JSON (never read or
/// written by its `Codable`, visible only inside the package): the
/// definition, the property's declaration and its doc comment.
const HOST_MEMBERS: &[(&str, &str, &str)] = &[(
    "ToolResult",
    "var rawJSON: String? = nil",
    "Result JSON sent as it is, in place of the fields above (`ToolResult.json`).",
)];

/// A stored property beyond the JSON: its declaration and doc comment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HostMember {
    pub declaration: String,
    pub doc: String,
}

/// The stored properties a Swift struct has beyond the JSON of `definition`.
pub fn host_members(definition: &str) -> Vec<HostMember> {
    let members = HOST_MEMBERS.iter().filter(|(of, ..)| *of == definition);
    members
        .map(|(_, declaration, doc)| HostMember { declaration: (*declaration).to_owned(), doc: (*doc).to_owned() })
        .collect()
}

/// The Swift case of each choice of a hook decision that is not its key in
/// lower camel case, by key (`""` is `{}`), for every decision (`*`) or one.
const CASES: &[(&str, &str, &str)] = &[
    ("*", "", "proceed"),
    ("FinalAnswerDecision", "", "accept"),
    ("*", "messages", "replaceMessages"),
    ("*", "arguments", "replaceArguments"),
    ("*", "result", "replace"),
];

/// The Swift case of the choice `key` of the decision `definition`.
pub fn case_name(key: &str, definition: &str) -> String {
    let named = |of: &str| CASES.iter().find(|(d, k, _)| *d == of && *k == key).map(|(_, _, case)| (*case).to_owned());
    named(definition).or_else(|| named("*")).unwrap_or_else(|| camel(key))
}

/// A field as a stored property of a Swift struct.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Member {
    pub label: String,
    /// Its type, with `?` when it may be nil.
    pub ty: String,
    /// ` = <value>` for the memberwise initialiser, when it may be left out.
    pub default: String,
    /// The statement of `init(from:)` that reads it.
    pub decode: String,
    /// The statement of `encode(to:)` that writes it: as ferrule does, a field
    /// the schema neither requires nor gives a default is left out when empty.
    pub encode: String,
    pub doc: String,
}

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

/// A field as a Swift struct stores it. In a document the host writes
/// (`input`), every field the schema does not require is optional and nil
/// by default (left out, for ferrule's default). In one ferrule writes, a
/// field it may leave out reads as the schema's default, or else as its
/// type's empty value; an unsigned 64-bit count saturates at `Int.max`.
pub fn member(field: &Field, input: bool) -> Result<Member, String> {
    let label = label(&field.json);
    let optional = !field.required;
    let ty = FieldType { nullable: field.ty.nullable || (input && optional), ..field.ty.clone() };
    let swift = type_of(&ty)?;
    let bare = type_of(&FieldType { nullable: false, ..ty.clone() })?;
    let fallback = match (&field.default, optional) {
        (_, false) => None,
        _ if ty.nullable => None,
        (Some(value), true) if !value.is_null() => Some(literal(value)?),
        _ => Some(empty(&ty)?),
    };
    let default = match (&fallback, ty.nullable && optional) {
        (Some(value), _) => format!(" = {value}"),
        (None, true) => " = nil".to_owned(),
        (None, false) => String::new(),
    };
    let clamped = ty.format.as_deref() == Some("uint64") && ty.kind == "integer";
    let read = if clamped { "UInt64".to_owned() } else { bare };
    let method = if ty.nullable || fallback.is_some() { "decodeIfPresent" } else { "decode" };
    let mut value = format!("try container.{method}({read}.self, forKey: .{label})");
    if let Some(fallback) = &fallback {
        value = format!("{value} ?? {fallback}");
    }
    if clamped {
        value = format!("{}(clamping: {value})", if ty.nullable { "Int?" } else { "Int" });
    }
    let write = |method: &str| format!("try container.{method}({label}, forKey: .{label})");
    let encode = match (&field.default, optional) {
        _ if ty.nullable => write("encodeIfPresent"),
        (None, true) if ty.kind == "boolean" => format!("if {label} {{ {} }}", write("encode")),
        (None, true) => format!("if {label} != {} {{ {} }}", empty(&ty)?, write("encode")),
        _ => write("encode"),
    };
    Ok(Member {
        label: label.clone(),
        ty: swift,
        default,
        decode: format!("{label} = {value}"),
        encode,
        doc: field.doc.clone(),
    })
}

/// A field of a message as a stored property: a list is empty and a flag
/// false by default, anything else optional and nil.
pub fn flat_property(field: &FlatField) -> Result<Member, String> {
    let label = label(&field.key);
    let bare = type_of(&FieldType { nullable: false, ..field.ty.clone() })?;
    let (ty, default) = match field.ty.kind.as_str() {
        _ if bare.starts_with('[') => (bare, "[]"),
        "boolean" => (bare, "false"),
        _ => (format!("{bare}?"), "nil"),
    };
    Ok(Member {
        label,
        ty,
        default: format!(" = {default}"),
        decode: String::new(),
        encode: String::new(),
        doc: field.doc.clone(),
    })
}

/// How a variant's field crosses, as the statements of `init(from:)` and
/// `encode(to:)` of the variant, under its JSON name's coding key: content
/// reads from a string too (`decodeContent`); a variant's text is the
/// content's; a field ferrule always writes is written with its empty value
/// when nil; any other is left out when nil (a list: when empty), and
/// written when present, empty or not.
pub fn flat_coding(member: &FlatMember) -> Result<Member, String> {
    let host = FlatField { key: member.key.clone(), doc: String::new(), ty: member.host.clone(), tags: Vec::new() };
    let property = flat_property(&host)?;
    let label = &property.label;
    let coding_key = self::label(&member.field.json);
    let bare = property.ty.trim_end_matches('?');
    let read = |ty: &str| format!("try container.decodeIfPresent({ty}.self, forKey: .{coding_key})");
    let decode = match bare {
        _ if member.as_text => format!("{label} = {}.map(Part.parts) ?? []", read("String")),
        "[Part]" => format!("{label} = try container.decodeContent(forKey: .{coding_key})"),
        _ => match property.default.as_str() {
            " = nil" => format!("{label} = {}", read(bare)),
            fallback => format!("{label} = {} ?? {}", read(bare), fallback.trim_start_matches(" = ")),
        },
    };
    let value = if member.as_text { format!("{label}.text") } else { label.clone() };
    let write = |value: &str| format!("try container.encode({value}, forKey: .{coding_key})");
    let encode = match (member.written, property.default.as_str()) {
        (true, " = nil") => write(&format!("{value} ?? {}", empty(&member.field.ty)?)),
        (true, _) => write(&value),
        (false, " = nil") => format!("try container.encodeIfPresent({value}, forKey: .{coding_key})"),
        (false, " = false") => format!("if {value} {{ {} }}", write(&value)),
        (false, _) => format!("if !{value}.isEmpty {{ {} }}", write(&value)),
    };
    Ok(Member { decode, encode, ..property })
}

/// A value of a case of a union Swift holds as an enum (a part): its label
/// (none for the case's one value, or the one named as the case), its type
/// (`?` when it may be absent; `bare`, without it), and the key it crosses
/// under. Base64 text is labelled `base64`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CaseValue {
    pub label: Option<String>,
    pub binding: String,
    pub ty: String,
    pub bare: String,
    pub key: String,
    pub required: bool,
}

/// The values of the case of `variant`; two of one name are refused.
pub fn case_values(variant: &UnionVariant) -> Result<Vec<CaseValue>, String> {
    let alone = variant.fields.len() == 1;
    let values = variant
        .fields
        .iter()
        .enumerate()
        .map(|(place, field)| {
            let named = match field.ty.encoding.as_deref() {
                Some("base64") => "base64".to_owned(),
                _ => label(&field.json),
            };
            let unlabelled = place == 0 && (alone || field.json == variant.tag);
            let ty = FieldType { nullable: field.ty.nullable || !field.required, ..field.ty.clone() };
            Ok(CaseValue {
                label: (!unlabelled).then(|| named.clone()),
                binding: named,
                ty: type_of(&ty)?,
                bare: type_of(&FieldType { nullable: false, ..ty })?,
                key: label(&field.json),
                required: field.required,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    for (place, value) in values.iter().enumerate() {
        if values[..place].iter().any(|earlier| earlier.binding == value.binding) {
            return Err(format!("{}: two values named {} in its Swift case", variant.tag, value.binding));
        }
    }
    Ok(values)
}

/// The Swift expression of the schema default `value`.
fn literal(value: &Value) -> Result<String, String> {
    match value {
        Value::Bool(_) | Value::Number(_) | Value::String(_) => Ok(value.to_string()),
        Value::Array(items) if items.is_empty() => Ok("[]".to_owned()),
        Value::Object(fields) if fields.is_empty() => Ok("[:]".to_owned()),
        _ => Err(format!("no Swift literal for the default {value}")),
    }
}

/// The empty value of a Swift type: what a field ferrule leaves out when empty holds.
fn empty(ty: &FieldType) -> Result<String, String> {
    Ok(match ty.kind.as_str() {
        "string" => "\"\"".to_owned(),
        "integer" | "number" => "0".to_owned(),
        "boolean" => "false".to_owned(),
        "array" => "[]".to_owned(),
        "map" => "[:]".to_owned(),
        other => return Err(format!("no empty Swift value for a {other}")),
    })
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

    #[test]
    fn swift_members_read_and_write_what_ferrule_leaves_out() {
        let count = |default: Option<Value>| Member {
            doc: String::new(),
            ..member(
                &Field {
                    default,
                    ..Field::optional(
                        "cached_tokens",
                        FieldType { format: Some("uint64".into()), ..FieldType::of("integer") },
                    )
                },
                false,
            )
            .unwrap()
        };
        let skipped = count(None);
        assert_eq!(skipped.ty, "Int");
        assert_eq!(skipped.default, " = 0");
        assert_eq!(
            skipped.decode,
            "cachedTokens = Int(clamping: try container.decodeIfPresent(UInt64.self, forKey: .cachedTokens) ?? 0)"
        );
        assert_eq!(
            skipped.encode,
            "if cachedTokens != 0 { try container.encode(cachedTokens, forKey: .cachedTokens) }"
        );
        let written = count(Some(serde_json::json!(0)));
        assert_eq!(written.encode, "try container.encode(cachedTokens, forKey: .cachedTokens)");
        let flag = member(&Field::optional("always", FieldType::of("boolean")), false).unwrap();
        assert_eq!(flag.encode, "if always { try container.encode(always, forKey: .always) }");
        let setting = member(&Field::optional("max_rounds", FieldType::of("integer")), true).unwrap();
        assert_eq!((setting.ty.as_str(), setting.default.as_str()), ("Int?", " = nil"));
        assert_eq!(setting.encode, "try container.encodeIfPresent(maxRounds, forKey: .maxRounds)");
        let odd =
            Field { default: Some(serde_json::json!({"a": 1})), ..Field::optional("odd", FieldType::of("object")) };
        assert!(member(&odd, false).unwrap_err().contains("no Swift literal"));
    }

    #[test]
    fn swift_messages_write_what_ferrule_writes_and_parts_are_cases() {
        let member = |field: Field, host: FieldType, as_text, written| FlatMember {
            key: field.json.clone(),
            field,
            host,
            as_text,
            written,
        };
        let content = FieldType { name: Some("Content".into()), ..FieldType::of("ref") };
        let system = member(Field::optional("content", FieldType::of("string")), content, true, true);
        let coding = flat_coding(&system).unwrap();
        assert!(coding.decode.contains("map(Part.parts)") && coding.encode.contains("content.text"), "{coding:?}");
        let name = FieldType { nullable: true, ..FieldType::of("string") };
        let required = Field { required: true, ..Field::optional("name", FieldType::of("string")) };
        assert_eq!(
            flat_coding(&member(required, name.clone(), false, true)).unwrap().encode,
            "try container.encode(name ?? \"\", forKey: .name)"
        );
        let signature = member(Field::optional("signature", name.clone()), name.clone(), false, false);
        assert_eq!(
            flat_coding(&signature).unwrap().encode,
            "try container.encodeIfPresent(signature, forKey: .signature)",
            "nil is left out, \"\" written"
        );
        let renamed =
            FlatMember { key: "redacted".into(), ..member(Field::optional("data", name.clone()), name, false, false) };
        let coding = flat_coding(&renamed).unwrap();
        assert_eq!(coding.label, "redacted");
        assert_eq!(
            coding.decode, "redacted = try container.decodeIfPresent(String.self, forKey: .data)",
            "its JSON name"
        );
        let calls = FieldType { items: Some(Box::new(FieldType::of("string"))), ..FieldType::of("array") };
        let left_out = member(Field::optional("tool_calls", calls.clone()), calls, false, false);
        assert!(flat_coding(&left_out).unwrap().encode.starts_with("if !toolCalls.isEmpty"));
        let base64 = FieldType { encoding: Some("base64".into()), ..FieldType::of("string") };
        let variant =
            |fields: Vec<Field>| UnionVariant { tag: "thinking".into(), doc: String::new(), fields, recursive: false };
        let text = variant(vec![
            Field { required: true, ..Field::optional("thinking", FieldType::of("string")) },
            Field::optional("data", base64.clone()),
        ]);
        let values = case_values(&text).unwrap();
        assert_eq!((values[0].label.as_deref(), values[0].ty.as_str()), (None, "String"), "named as its case");
        assert_eq!((values[1].label.as_deref(), values[1].key.as_str()), (Some("base64"), "data"));
        assert_eq!((values[1].ty.as_str(), values[1].bare.as_str()), ("String?", "String"));
        let twice = variant(vec![Field::optional("data", base64.clone()), Field::optional("preview", base64)]);
        assert!(case_values(&twice).unwrap_err().contains("two values named base64"));
        assert!(case_values(&variant(vec![])).unwrap().is_empty());
    }
}
