//! Kotlin's names and types for the schema's: properties in lower camel case
//! (`call_id` → `callId`), and the Kotlin type and default of each field.

use serde::Serialize;
use serde_json::Value;

use crate::model::{Field, FieldType, FlatField, FlatMember};
use crate::names::{camel_with, reference};
use crate::outputs::Rename;

/// The Kotlin type of each definition a field may refer to, where it is not the
/// definition's own name (`names::reference`).
const REFERENCES: &[(&str, &str)] = &[
    ("Content", "List<Part>"),
    ("ToolCall", "ToolCallRequest"),
    ("ToolResult", "JsonObject"),
    ("Error", "RunError"),
    ("RunResult", "RunResult"),
    ("RunStatus", "Status"),
    ("RunState", "JsonElement"),
    ("CallOutcome", "JsonElement"),
    ("HookToolCall", "PayloadCall"),
    ("AgentConfig", "AgentConfig"),
    ("ModelConfig", "ModelConfig"),
    ("HistoryConfig", "History"),
    ("BuiltinToolsConfig", "BuiltinTools"),
    ("SandboxConfig", "Sandbox"),
    ("SandboxMode", "String"),
    ("ToolChoice", "JsonElement"),
    ("Execution", "String"),
    ("ProviderKind", "String"),
    ("ThinkingLevel", "String"),
    ("RecordConfig", "Recording"),
    ("TraceConfig", "Tracing"),
    ("OtlpConfig", "OtlpExporter"),
    ("RecordMode", "String"),
    ("ToolCompletion", "ToolResult"),
    ("OnError", "String"),
    ("HandoffMessages", "String"),
    ("ScriptTurn", "JsonElement"),
    ("Origin", "String"),
    ("StopReason", "String"),
    ("McpServerStatus", "String"),
    ("McpServerConfig", "McpServer"),
    ("NeedsApproval", "JsonElement"),
    ("Event", "@Serializable(with = NestedEventSerializer::class) Event"),
];

/// The fields of a message or part Kotlin holds in one property although
/// their JSON differs (see `model::read_flat`): a part's `data` is text,
/// base64 for an image or a file and opaque for redacted_thinking.
pub const FLAT_RENAMES: &[Rename] = &[("Part", "redacted_thinking", "data", "data")];

/// The records the hand-written layer gives factory functions
/// (`ToolResult.text`): their classes have a companion object.
pub const COMPANIONS: &[&str] = &["ToolResult", "Message", "Part"];

/// The name of the Kotlin type generated for the schema definition
/// `definition`. A definition whose fields elsewhere hold its raw JSON (a
/// tool result in an event, which a hostile tool may have shaped) keeps its
/// own name for its class.
pub fn type_name(definition: &str) -> Result<String, String> {
    let name = reference(Some(definition), REFERENCES, "Kotlin")?;
    Ok(if name.starts_with("Json") { definition.to_owned() } else { name.to_owned() })
}

/// A JSON name as a Kotlin class name: initialisms too are words
/// (`mcp_server` → `McpServer`, as Kotlin writes them).
pub fn class_name(json: &str) -> String {
    crate::names::pascal_with(json, &[])
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
        "integer" if matches!(ty.format.as_deref(), Some("uint64" | "int64" | "uint")) => "Long".to_owned(),
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

/// The Kotlin class of each choice of a hook decision, by key (`""` is
/// `{}`), and the name of its value's property (none for `{}` and flags).
const CHOICES: &[(&str, &str, &str)] = &[
    ("", "Proceed", ""),
    ("abort", "Abort", "reason"),
    ("messages", "ReplaceMessages", "messages"),
    ("tools", "Tools", "names"),
    ("inject", "Inject", "messages"),
    ("deny", "Deny", "text"),
    ("arguments", "ReplaceArguments", "arguments"),
    ("approve", "Approve", ""),
    ("interrupt", "Interrupt", ""),
    ("result", "ReplaceResult", "result"),
    ("retry", "Retry", "feedback"),
];

/// A choice of a hook decision as a subclass of `HookDecision`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ChoiceClass {
    pub class: String,
    pub property: String,
}

/// The subclass of `HookDecision` for the choice `key`: a new choice needs
/// its names here.
pub fn choice_class(key: &str) -> Result<ChoiceClass, String> {
    let (_, class, property) = CHOICES
        .iter()
        .find(|(k, ..)| *k == key)
        .ok_or_else(|| format!("the decision choice {key:?} has no Kotlin class in codegen/src/kotlin.rs"))?;
    Ok(ChoiceClass { class: (*class).to_owned(), property: (*property).to_owned() })
}

/// A field as a constructor parameter of a `@Serializable` data class, with
/// its annotations and default. In a document the host writes (`input`),
/// every field the schema does not require is nullable and null by default
/// (left out, for ferrule's default). In one ferrule writes, a field takes
/// the schema's default, written out (`@EncodeDefault`), or else its type's
/// empty value, which ferrule leaves out and so Kotlin does too; an unsigned
/// 64-bit count saturates at `Long.MAX_VALUE`.
pub fn parameter(field: &Field, input: bool) -> Result<String, String> {
    let name = property_name(&field.json);
    let mut annotations = String::new();
    let optional = !field.required;
    let ty = FieldType { nullable: field.ty.nullable || (input && optional), ..field.ty.clone() };
    let default = match (&field.default, optional) {
        (_, false) => None,
        _ if ty.nullable => Some("null".to_owned()),
        (Some(value), true) if !value.is_null() => {
            annotations.push_str("@EncodeDefault ");
            Some(literal(value, &ty)?)
        }
        _ => Some(empty(&ty)?),
    };
    if !input && ty.format.as_deref() == Some("uint64") {
        annotations.push_str("@Serializable(with = SaturatingCount::class) ");
    }
    if name != field.json {
        annotations.push_str(&format!("@SerialName(\"{}\") ", field.json));
    }
    let default = default.map(|value| format!(" = {value}")).unwrap_or_default();
    Ok(format!("{annotations}val {name}: {}{default}", type_of(&ty)?))
}

/// A field of a message or part as a constructor parameter: a list is empty
/// and a flag false by default, anything else nullable and null.
pub fn flat_parameter(field: &FlatField) -> Result<String, String> {
    let name = property_name(&field.key);
    let serial = if name != field.key { format!("@SerialName(\"{}\") ", field.key) } else { String::new() };
    let list = field.ty.kind == "array" || field.ty.name.as_deref() == Some("Content");
    let (ty, default) = match field.ty.kind.as_str() {
        _ if list => (type_of(&FieldType { nullable: false, ..field.ty.clone() })?, "emptyList()"),
        "boolean" => ("Boolean".to_owned(), "false"),
        _ => (type_of(&FieldType { nullable: true, ..field.ty.clone() })?, "null"),
    };
    Ok(format!("{serial}val {name}: {ty} = {default}"))
}

/// A field of a message or part as its builder's argument, read from the
/// JSON object's fields (`FlatFields` in `Message.kt`): `toolCalls =
/// list("tool_calls", ToolCallRequest.serializer())`.
pub fn flat_argument(field: &FlatField) -> Result<String, String> {
    let key = &field.key;
    let ty = type_of(&FieldType { nullable: false, ..field.ty.clone() })?;
    let reader = match ty.as_str() {
        "List<Part>" => format!("parts(\"{key}\")"),
        "String" => format!("string(\"{key}\")"),
        "Boolean" => format!("flag(\"{key}\")"),
        _ if ty.starts_with("List<") => format!("list(\"{key}\", {}.serializer())", &ty[5..ty.len() - 1]),
        "Int" | "Long" | "Double" | "JsonObject" | "JsonElement" => {
            return Err(format!("no Kotlin reader of a {ty} ({key}) in FlatFields"))
        }
        _ => format!("value(\"{key}\", {ty}.serializer())"),
    };
    Ok(format!("{} = {reader}", property_name(key)))
}

/// The JSON a variant's field written always holds when the Kotlin value is
/// null: its type's empty value (none for a field left out when empty).
pub fn empty_json(member: &FlatMember) -> Result<String, String> {
    let ty = &member.field.ty;
    Ok(match ty.kind.as_str() {
        _ if !member.written => "null".to_owned(),
        _ if member.as_text => "JsonPrimitive(\"\")".to_owned(),
        "string" => "JsonPrimitive(\"\")".to_owned(),
        "boolean" => "JsonPrimitive(false)".to_owned(),
        "array" => "JsonArray(emptyList())".to_owned(),
        "ref" if ty.name.as_deref() == Some("Content") => "JsonArray(emptyList())".to_owned(),
        other => return Err(format!("no empty JSON of a written {other} ({})", member.field.json)),
    })
}

/// The Kotlin expression of the schema default `value` of a field of type `ty`.
fn literal(value: &Value, ty: &FieldType) -> Result<String, String> {
    match value {
        Value::Bool(_) | Value::Number(_) => Ok(value.to_string()),
        Value::String(_) => Ok(value.to_string()),
        Value::Array(items) if items.is_empty() => Ok("emptyList()".to_owned()),
        Value::Object(fields) if fields.is_empty() && ty.kind == "map" => Ok("emptyMap()".to_owned()),
        _ => Err(format!("no Kotlin literal for the default {value}")),
    }
}

/// The empty value of a Kotlin type: what a field ferrule leaves out when empty holds.
fn empty(ty: &FieldType) -> Result<String, String> {
    Ok(match ty.kind.as_str() {
        "string" => "\"\"".to_owned(),
        "integer" | "number" => "0".to_owned(),
        "boolean" => "false".to_owned(),
        "array" => "emptyList()".to_owned(),
        "map" => "emptyMap()".to_owned(),
        other => return Err(format!("no empty Kotlin value for a {other}")),
    })
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

    #[test]
    fn kotlin_parameters_default_as_ferrule_does() {
        let count = FieldType { format: Some("uint64".into()), ..FieldType::of("integer") };
        let written = Field { default: Some(serde_json::json!(0)), ..Field::optional("input_tokens", count.clone()) };
        assert_eq!(
            parameter(&written, false).unwrap(),
            "@EncodeDefault @Serializable(with = SaturatingCount::class) @SerialName(\"input_tokens\") val inputTokens: Long = 0"
        );
        let skipped = Field::optional("cached_tokens", count);
        assert_eq!(
            parameter(&skipped, false).unwrap(),
            "@Serializable(with = SaturatingCount::class) @SerialName(\"cached_tokens\") val cachedTokens: Long = 0"
        );
        let setting =
            Field { default: Some(serde_json::json!(50)), ..Field::optional("max_rounds", FieldType::of("integer")) };
        assert_eq!(parameter(&setting, true).unwrap(), "@SerialName(\"max_rounds\") val maxRounds: Int? = null");
        let required = Field { required: true, ..Field::optional("provider", FieldType::of("string")) };
        assert_eq!(parameter(&required, true).unwrap(), "val provider: String");
        let odd = Field::optional("odd", FieldType { name: Some("Usage".into()), ..FieldType::of("ref") });
        assert!(parameter(&odd, false).unwrap_err().contains("no empty Kotlin value"));
    }

    #[test]
    fn kotlin_messages_default_to_empty_and_write_what_ferrule_writes() {
        let flat = |key: &str, ty: FieldType| FlatField { key: key.into(), doc: String::new(), ty, tags: vec![] };
        let content = FieldType { name: Some("Content".into()), nullable: true, ..FieldType::of("ref") };
        assert_eq!(flat_parameter(&flat("content", content)).unwrap(), "val content: List<Part> = emptyList()");
        let id = FieldType { nullable: true, ..FieldType::of("string") };
        assert_eq!(
            flat_parameter(&flat("tool_call_id", id)).unwrap(),
            "@SerialName(\"tool_call_id\") val toolCallId: String? = null"
        );
        assert_eq!(
            flat_parameter(&flat("is_error", FieldType::of("boolean"))).unwrap(),
            "@SerialName(\"is_error\") val isError: Boolean = false"
        );
        let member = |ty: FieldType, as_text, written| FlatMember {
            key: "x".into(),
            field: Field::optional("x", ty.clone()),
            host: ty,
            as_text,
            written,
        };
        assert_eq!(empty_json(&member(FieldType::of("string"), false, false)).unwrap(), "null", "left out when empty");
        assert_eq!(empty_json(&member(FieldType::of("string"), true, true)).unwrap(), "JsonPrimitive(\"\")");
        assert_eq!(empty_json(&member(FieldType::of("boolean"), false, true)).unwrap(), "JsonPrimitive(false)");
        assert!(empty_json(&member(FieldType::of("integer"), false, true)).is_err());
        let calls = FieldType {
            items: Some(Box::new(FieldType { name: Some("ToolCall".into()), ..FieldType::of("ref") })),
            ..FieldType::of("array")
        };
        assert_eq!(
            flat_argument(&flat("tool_calls", calls)).unwrap(),
            "toolCalls = list(\"tool_calls\", ToolCallRequest.serializer())"
        );
        let content = FieldType { name: Some("Content".into()), nullable: true, ..FieldType::of("ref") };
        assert_eq!(flat_argument(&flat("content", content)).unwrap(), "content = parts(\"content\")");
        let usage = FieldType { name: Some("Usage".into()), nullable: true, ..FieldType::of("ref") };
        assert_eq!(flat_argument(&flat("usage", usage)).unwrap(), "usage = value(\"usage\", Usage.serializer())");
        assert!(flat_argument(&flat("count", FieldType::of("integer"))).is_err());
    }
}
