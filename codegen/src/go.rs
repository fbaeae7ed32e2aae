//! Go's names and types for the schema's: exported field names with Go's
//! initialisms (`call_id` → `CallID`, `delay_ms` → `DelayMS`), and the Go type of
//! each field.

use serde::Serialize;
use serde_json::Value;

use crate::decisions::Choice;
use crate::model::{Field, FieldType, FlatMember};
use crate::names::{pascal_with, reference, INITIALISMS};
use crate::outputs::Rename;

/// The Go type of each definition a field may refer to, where it is not the
/// definition's own name (`names::reference`).
const REFERENCES: &[(&str, &str)] = &[
    ("Content", "[]Part"),
    ("ToolCall", "ToolCall"),
    ("ToolResult", "ToolResult"),
    ("Error", "Error"),
    ("RunResult", "*Result"),
    ("RunStatus", "Status"),
    ("RunState", "json.RawMessage"),
    ("CallOutcome", "json.RawMessage"),
    ("HookToolCall", "PayloadCall"),
    ("AgentConfig", "Config"),
    ("ModelConfig", "Model"),
    ("HistoryConfig", "History"),
    ("BuiltinToolsConfig", "BuiltinTools"),
    ("SandboxConfig", "Sandbox"),
    ("SandboxMode", "string"),
    ("NamedTool", "ToolChoiceName"),
    ("ToolChoice", "any"),
    ("Execution", "string"),
    ("ProviderKind", "string"),
    ("ThinkingLevel", "string"),
    ("RecordConfig", "Recording"),
    ("TraceConfig", "Tracing"),
    ("OtlpConfig", "OTLPExporter"),
    ("RecordMode", "string"),
    ("ScriptTurn", "json.RawMessage"),
    ("Origin", "string"),
    ("StopReason", "string"),
    ("McpServerStatus", "string"),
    ("McpServerConfig", "MCPServer"),
    ("NeedsApproval", "any"),
    ("Event", "NestedEvent"),
];

/// The fields of a message or part Go holds under a name of their own: a
/// redacted_thinking part's data is opaque text, where an image's or a file's
/// is bytes.
pub const FLAT_RENAMES: &[Rename] = &[("Part", "redacted_thinking", "data", "redacted")];

/// Fields a Go document has beyond its JSON (never written): the document's
/// definition, the field's name and type, and its doc comment.
const HOST_FIELDS: &[(&str, &str, &str, &str)] = &[
    ("AgentConfig", "Hooks", "[]Hook", "Hooks are consulted at their stages of every run (see Hook)."),
    ("ModelConfig", "Host", "HostModel", "Host is the model a \"host\" provider runs (see HostModel)."),
];

/// A field of a document the host writes, as Go declares it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InputField {
    /// The Go field's name.
    pub name: String,
    /// Its Go type.
    pub ty: String,
    /// Its JSON name (empty for a field beyond the JSON).
    pub json: String,
    /// Its JSON name and `omitempty` when the JSON may leave it out.
    pub tag: String,
    /// `millis` or `seconds` for a duration (a JSON count of milliseconds or
    /// seconds), which the wire form converts.
    pub unit: Option<&'static str>,
    pub doc: String,
}

/// The name of the Go type generated for the schema definition `definition` (a pointer's, for Go, without its `*`).
pub fn type_name(definition: &str) -> Result<String, String> {
    Ok(reference(Some(definition), REFERENCES, "Go")?.trim_start_matches('*').to_owned())
}

/// A JSON field name as an exported Go field name.
pub fn field_name(json: &str) -> String {
    let mut initialisms = INITIALISMS.to_vec();
    initialisms.extend(["MS", "API"]);
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
        // A list of documents Go does not decode is one document.
        "array" if item()? == "json.RawMessage" => "json.RawMessage".to_owned(),
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

/// A field of a document the host writes (a configuration), as Go declares
/// it: the zero value is the default and is left out, so a field is a pointer
/// only where zero is a setting of its own that differs from the default (a
/// count that defaults to 2, a flag that defaults to true or to "not said", a
/// signed count that defaults to "not said");
/// a count of milliseconds or seconds (`*_ms`, `*_s`) is a `time.Duration`; a
/// document the JSON may leave out is a pointer; a list that may be null keeps
/// null (the default) apart from empty.
pub fn input_field(field: &Field) -> Result<InputField, String> {
    let ty = &field.ty;
    let unit = match ty.kind.as_str() {
        "integer" if field.json.ends_with("_ms") => Some(("_ms", "millis")),
        "integer" if field.json.ends_with("_s") => Some(("_s", "seconds")),
        _ => None,
    };
    let name = field_name(unit.map_or(&field.json[..], |(suffix, _)| field.json.trim_end_matches(suffix)));
    let zero_is_default = match &field.default {
        // Not said, a flag may be either; a count that may be negative takes
        // zero as a setting (a thinking budget of 0 turns thinking off).
        None | Some(Value::Null) => match ty.kind.as_str() {
            "boolean" => !ty.nullable,
            "integer" => !(ty.nullable && field.minimum.is_none()),
            _ => true,
        },
        Some(Value::Bool(on)) => !on,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0) || field.minimum.is_some_and(|min| min >= 1.0),
        Some(_) => true,
    };
    let go = type_of(&FieldType { nullable: false, ..ty.clone() })?;
    let scalar = matches!(ty.kind.as_str(), "integer" | "number" | "boolean");
    let document = go.starts_with(|c: char| c.is_ascii_uppercase());
    let pointer = !field.required && ((scalar && !zero_is_default) || document);
    let go = match (unit, pointer) {
        (Some(_), false) => "time.Duration".to_owned(),
        (Some(_), true) => "*time.Duration".to_owned(),
        (None, true) => format!("*{go}"),
        (None, false) => go,
    };
    // A Go duration is no count of a unit: the JSON's unit is the wire's business.
    let doc = match unit {
        Some(_) => field.doc.replace(" in milliseconds", "").replace(" in seconds", ""),
        None => field.doc.clone(),
    };
    let keeps_null = ty.nullable && matches!(ty.kind.as_str(), "array" | "map");
    let omit = if field.required || keeps_null { "" } else { ",omitempty" };
    Ok(InputField {
        name,
        ty: go,
        json: field.json.clone(),
        tag: format!("{}{omit}", field.json),
        unit: unit.map(|(_, convert)| convert),
        doc,
    })
}

/// A choice of a hook decision as a field of the stage's Go decision struct:
/// the zero value is not chosen and is left out (`omitzero`, so that an empty
/// but non-nil list is a choice: no tools); a list that may not be empty is
/// left out when empty; a flag is a `bool`; replaced arguments and results
/// are `any` (anything that marshals to one).
pub fn choice_field(choice: &Choice) -> Result<InputField, String> {
    let ty = match &choice.ty {
        None => "bool".to_owned(),
        Some(ty) if ty.kind == "object" || ty.name.as_deref() == Some("ToolCompletion") => "any".to_owned(),
        Some(ty) => type_of(ty)?,
    };
    let omit = if choice.at_least_one { "omitempty" } else { "omitzero" };
    Ok(InputField {
        name: field_name(&choice.key),
        ty,
        json: choice.key.clone(),
        tag: format!("{},{omit}", choice.key),
        unit: None,
        doc: choice.doc.clone(),
    })
}

/// The Go type of a field of a message or part: base64 text is bytes; a
/// field another variant lacks is a pointer only to a document (a string that
/// may be absent is empty).
pub fn flat_type(ty: &FieldType) -> Result<String, String> {
    let go = type_of(&FieldType { nullable: false, ..ty.clone() })?;
    Ok(match (ty.kind.as_str(), ty.encoding.as_deref()) {
        ("string", Some("base64")) => "[]byte".to_owned(),
        _ if ty.nullable && go.starts_with(|c: char| c.is_ascii_uppercase()) => format!("*{go}"),
        _ => go,
    })
}

/// A variant's field in the Go struct of that variant's JSON (`wire*`), and
/// how it converts from and to the Go field that holds it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WireMember {
    /// The Go field's name (of both structs).
    pub name: String,
    pub wire_type: String,
    /// Its JSON name.
    pub json: String,
    /// Its JSON name, and `omitempty` where ferrule leaves it out.
    pub tag: String,
    /// The wire value made of the Go value `v.<name>`.
    pub to_wire: String,
    /// The Go value made of the wire value `w.<name>`.
    pub from_wire: String,
    /// The function of decode.go that reads the wire value from parsed JSON.
    pub decode: &'static str,
}

/// How a variant's field crosses: content (`[]Part`) as the `content` type,
/// which reads a string too; bytes as `base64Bytes`, which reads any base64
/// (nil is absent, empty bytes are `""`); a variant's text as the content's
/// text (`partsText`, `textParts`). A field the variant always writes but
/// the Go struct holds by pointer, slice or map (nil for the other variants)
/// is refused: it would be written as `null`.
pub fn member(member: &FlatMember) -> Result<WireMember, String> {
    let name = field_name(&member.key);
    let go = flat_type(&member.host)?;
    let (wire_type, to_wire, from_wire) = match go.as_str() {
        _ if member.as_text => ("string".to_owned(), format!("partsText(v.{name})"), format!("textParts(w.{name})")),
        "[]Part" => ("content".to_owned(), format!("content(v.{name})"), format!("[]Part(w.{name})")),
        "[]byte" => ("base64Bytes".to_owned(), format!("base64Bytes(v.{name})"), format!("[]byte(w.{name})")),
        _ if member.written && (go.starts_with('*') || go.starts_with("[]") || go.starts_with("map[")) => {
            return Err(format!("{}: always written, but Go holds it as {go}, which may be nil", member.field.json))
        }
        _ => (go.clone(), format!("v.{name}"), format!("w.{name}")),
    };
    let omit = match (member.written, go.as_str()) {
        (true, _) => "",
        (false, "[]byte") => ",omitzero",
        (false, _) => ",omitempty",
    };
    let json = member.field.json.clone();
    let document = |rest: &str| rest.starts_with(|c: char| c.is_ascii_uppercase());
    let decode = match wire_type.as_str() {
        "string" => "decodeString",
        "bool" => "decodeBool",
        "content" => "decodeContent",
        "base64Bytes" => "decodeBase64",
        list if list.strip_prefix("[]").is_some_and(document) => "decodeList",
        pointer if pointer.strip_prefix('*').is_some_and(document) => "decodePointer",
        _ => "decodeValue",
    };
    Ok(WireMember { name, wire_type, tag: format!("{json}{omit}"), json, to_wire, from_wire, decode })
}

/// The fields a Go document has beyond the JSON of `definition`, as a Go
/// struct declares them (`json:"-"`).
pub fn host_fields(definition: &str) -> Vec<InputField> {
    let fields = HOST_FIELDS.iter().filter(|(of, ..)| *of == definition);
    fields
        .map(|(_, name, ty, doc)| InputField {
            name: (*name).to_owned(),
            ty: (*ty).to_owned(),
            json: String::new(),
            tag: "-".to_owned(),
            unit: None,
            doc: (*doc).to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn go_input_fields_are_pointers_only_where_zero_is_a_setting_of_its_own() {
        let count = |default: Value, minimum: Option<f64>| Field {
            default: Some(default),
            minimum,
            ..Field::optional("output_retries", FieldType::of("integer"))
        };
        let go = |field: &Field| input_field(field).unwrap();
        assert_eq!(go(&count(json!(2), Some(0.0))).ty, "*int", "0 retries is not the default 2");
        assert_eq!(go(&count(json!(50), Some(1.0))).ty, "int", "0 is no setting at all");
        assert_eq!(go(&count(json!(0), Some(0.0))).ty, "int");
        let flag = |default: Value, nullable| Field {
            default: Some(default),
            ..Field::optional("stream", FieldType { nullable, ..FieldType::of("boolean") })
        };
        assert_eq!(go(&flag(json!(true), false)).ty, "*bool");
        assert_eq!(go(&flag(Value::Null, true)).ty, "*bool", "false is not \"not said\"");
        assert_eq!(go(&flag(json!(false), false)).ty, "bool");
        let timeout = go(&Field::optional("idle_ms", FieldType::of("integer")));
        assert_eq!(
            (timeout.name.as_str(), timeout.ty.as_str(), timeout.unit),
            ("Idle", "time.Duration", Some("millis"))
        );
        assert_eq!(go(&Field::optional("bash_timeout_s", FieldType::of("integer"))).unit, Some("seconds"));
        let bounded = Field {
            default: Some(json!(60000)),
            minimum: Some(0.0),
            doc: "Bound on a decision in milliseconds; 0 means none.".into(),
            ..Field::optional("hook_timeout_ms", FieldType::of("integer"))
        };
        let bounded = go(&bounded);
        assert_eq!(bounded.ty, "*time.Duration", "0 (none) is not the default 60 s");
        assert_eq!(bounded.doc, "Bound on a decision; 0 means none.");
        let document =
            Field::optional("history", FieldType { name: Some("HistoryConfig".into()), ..FieldType::of("ref") });
        assert_eq!((go(&document).ty.as_str(), go(&document).tag.as_str()), ("*History", "history,omitempty"));
        let list =
            FieldType { items: Some(Box::new(FieldType::of("string"))), nullable: true, ..FieldType::of("array") };
        assert_eq!(go(&Field::optional("allowed", list)).tag, "allowed", "null (the default) is not []");
        let model = Field {
            required: true,
            ..Field::optional("model", FieldType { name: Some("ModelConfig".into()), ..FieldType::of("ref") })
        };
        assert_eq!((go(&model).ty.as_str(), go(&model).tag.as_str()), ("Model", "model"));
    }

    #[test]
    fn go_messages_write_present_bytes_and_refuse_a_written_field_held_by_pointer() {
        let bytes = FieldType { encoding: Some("base64".into()), nullable: true, ..FieldType::of("string") };
        let member = |field: Field, host: FieldType, written| FlatMember {
            key: field.json.clone(),
            field,
            host,
            as_text: false,
            written,
        };
        let data = member(Field::optional("data", bytes.clone()), bytes, false);
        assert_eq!(super::member(&data).unwrap().tag, "data,omitzero", "nil is absent, empty bytes are \"\"");
        let usage = FieldType { name: Some("Usage".into()), nullable: true, ..FieldType::of("ref") };
        let required = Field { required: true, ..Field::optional("usage", usage.clone()) };
        assert!(super::member(&member(required, usage.clone(), true)).unwrap_err().contains("may be nil"));
        let calls = FieldType { items: Some(Box::new(FieldType::of("string"))), ..FieldType::of("array") };
        let always = Field { default: Some(serde_json::json!([])), ..Field::optional("tool_calls", calls.clone()) };
        assert!(super::member(&member(always, calls, true)).unwrap_err().contains("[]string, which may be nil"));
        assert_eq!(
            super::member(&member(Field::optional("usage", usage.clone()), usage, false)).unwrap().tag,
            "usage,omitempty"
        );
    }
}
