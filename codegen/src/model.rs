//! What the generator makes code of, read from the schema: the error codes
//! (`ErrorCode`, with each code's number in `x-ferrule-code`), the string enums
//! (a `oneOf` of string constants) and the tagged unions (a `oneOf` of objects
//! told apart by a constant `type`, such as the events), each with the
//! descriptions the Rust doc comments gave them.

use serde::{Deserialize, Serialize};
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
/// constants, each of them numbered when `numbered` (or, without
/// descriptions or numbers, an `enum` of strings).
pub fn read_enum(schema: &Value, name: &str, numbered: bool) -> Result<Enum, String> {
    let definition =
        schema.pointer(&format!("/$defs/{name}")).ok_or_else(|| format!("the schema defines no {name}"))?;
    let listed: Vec<Value>;
    let branches = match definition.get("enum").and_then(Value::as_array) {
        Some(values) => {
            listed = values.iter().map(|value| serde_json::json!({"const": value})).collect();
            &listed
        }
        None => definition["oneOf"].as_array().ok_or_else(|| format!("{name} is not a oneOf of constants"))?,
    };
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

/// A field of an object: its JSON name, description and type, and whether the
/// JSON always has it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Field {
    pub json: String,
    pub doc: String,
    pub ty: FieldType,
    pub required: bool,
    /// The schema's `default`, for a field the JSON may leave out.
    pub default: Option<Value>,
    /// The schema's `minimum`, for a number.
    pub minimum: Option<f64>,
}

/// `schema` with each variant of a union that declares no field order
/// declaring its properties' (the tag, then the rest by name), for tests
/// whose order does not matter.
#[cfg(test)]
pub fn in_property_order(mut schema: Value) -> Value {
    let definitions = schema["$defs"].as_object_mut().into_iter().flat_map(|d| d.values_mut());
    let branches = definitions.filter_map(|d| d.get_mut("oneOf").and_then(Value::as_array_mut)).flatten();
    for branch in branches.filter(|b| b.get("properties").is_some() && b.get("x-ferrule-order").is_none()) {
        let properties = branch["properties"].as_object().into_iter().flatten();
        let (tags, others): (Vec<_>, Vec<_>) = properties.partition(|(_, p)| p.get("const").is_some());
        let order: Vec<String> = tags.into_iter().chain(others).map(|(key, _)| key.clone()).collect();
        branch["x-ferrule-order"] = serde_json::json!(order);
    }
    schema
}

#[cfg(test)]
impl Field {
    /// A field the JSON may leave out, with no description, default or minimum.
    pub fn optional(json: &str, ty: FieldType) -> Field {
        Field { json: json.to_owned(), doc: String::new(), ty, required: false, default: None, minimum: None }
    }
}

/// A field's type: a JSON scalar, a list or map of another type, any JSON
/// value, or another definition of the schema; perhaps null as well.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FieldType {
    /// `string`, `integer`, `number`, `boolean`, `ref`, `array` (of `items`),
    /// `map` (string keys, values of `items`), `object` (any JSON object) or
    /// `any` (any JSON value).
    pub kind: String,
    /// The definition, for a `ref`.
    pub name: Option<String>,
    /// The schema's `format` of an integer (`uint32`, `uint64`, `uint`).
    pub format: Option<String>,
    /// The element type of an `array`, the value type of a `map`.
    pub items: Option<Box<FieldType>>,
    pub nullable: bool,
    /// The schema's `contentEncoding` of a string (`base64`).
    #[serde(default)]
    pub encoding: Option<String>,
}

impl FieldType {
    /// A type of `kind`, not nullable, without a name, format or items.
    pub fn of(kind: &str) -> Self {
        FieldType { kind: kind.to_owned(), name: None, format: None, items: None, nullable: false, encoding: None }
    }
}

/// One object type of a union: its tag's value, description and fields
/// (the tag aside).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UnionVariant {
    pub tag: String,
    pub doc: String,
    pub fields: Vec<Field>,
    /// A field holds a value of the union itself (an event in an event), which
    /// a language may have to hold by reference (Swift's `indirect`).
    #[serde(default)]
    pub recursive: bool,
}

/// A union of object types told apart by the constant `type`, with the fields
/// every variant carries besides (`common`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Union {
    pub name: String,
    pub doc: String,
    pub common: Vec<Field>,
    pub variants: Vec<UnionVariant>,
    /// The names of every variant's fields, each once, sorted.
    pub field_names: Vec<String>,
}

/// The union the schema defines as `$defs/<name>`, told apart by `type`: a
/// field a variant may leave out must say so by being nullable (the bindings
/// make exactly those optional).
pub fn read_union(schema: &Value, name: &str) -> Result<Union, String> {
    let (definition, variants) = read_variants(schema, name, "type", false)?;
    let union = tagged(definition, name, variants)?;
    for variant in &union.variants {
        if let Some(field) = variant.fields.iter().find(|f| !f.required && !f.ty.nullable) {
            return Err(format!("{name} {}: {} may be absent but is not nullable", variant.tag, field.json));
        }
    }
    Ok(union)
}

/// The union the schema defines as `$defs/<name>`, told apart by `type`,
/// whose variants' fields may be absent for their defaults (the parts), each
/// variant's in their declared order.
pub fn read_tagged(schema: &Value, name: &str) -> Result<Union, String> {
    let (definition, variants) = read_variants(schema, name, "type", true)?;
    tagged(definition, name, variants)
}

/// The union `definition` (`$defs/<name>`) of `variants`, with the fields
/// every variant carries.
fn tagged(definition: &Value, name: &str, mut variants: Vec<UnionVariant>) -> Result<Union, String> {
    for variant in &mut variants {
        variant.recursive = variant.fields.iter().any(|field| field.ty.name.as_deref() == Some(name));
    }
    let common = fields_of(definition, "type").map_err(|e| format!("{name}: {e}"))?;
    let names: std::collections::BTreeSet<String> =
        variants.iter().flat_map(|v| v.fields.iter().map(|f| f.json.clone())).collect();
    let field_names = names.into_iter().collect();
    Ok(Union { name: name.to_owned(), doc: doc_of(definition), common, variants, field_names })
}

/// `fields` in the order the variant `branch` (`tag` of `name`) declares
/// them: its `x-ferrule-order`, which the schema gives each variant of a
/// message and a part (`src/schema.rs`), naming exactly its fields and `key`.
/// A binding takes their values in that order (a Swift case's, a Kotlin
/// constructor's).
fn in_declared_order(branch: &Value, name: &str, tag: &str, key: &str, fields: &mut [Field]) -> Result<(), String> {
    let order: Vec<&str> =
        branch["x-ferrule-order"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let named = |json: &str| order.contains(&json);
    if order.len() != fields.len() + 1 || !named(key) || !fields.iter().all(|f| named(&f.json)) {
        return Err(format!(
            "{name} {tag}: x-ferrule-order {order:?} does not name exactly its fields; src/schema.rs gives it from a \
             value with every field present"
        ));
    }
    fields.sort_by_key(|field| order.iter().position(|json| *json == field.json));
    Ok(())
}

/// The definition `$defs/<name>`, a `oneOf` of objects told apart by the
/// constant `key`, and its variants; with `declared`, each variant's fields
/// in their declared order (`x-ferrule-order`).
fn read_variants<'a>(
    schema: &'a Value,
    name: &str,
    key: &str,
    declared: bool,
) -> Result<(&'a Value, Vec<UnionVariant>), String> {
    let definition =
        schema.pointer(&format!("/$defs/{name}")).ok_or_else(|| format!("the schema defines no {name}"))?;
    let branches = definition["oneOf"].as_array().ok_or_else(|| format!("{name} is not a oneOf of objects"))?;
    let variants = branches
        .iter()
        .map(|branch| {
            let tag = branch["properties"][key]["const"].as_str();
            let tag = tag.ok_or_else(|| format!("{name}: a variant has no constant {key}"))?;
            // Fields anywhere but in `properties` (a newtype variant's `$ref`, an
            // `allOf`, a map) would be lost: refused instead.
            let known = ["type", "description", "properties", "required", "additionalProperties", "x-ferrule-order"];
            if let Some(other) =
                branch.as_object().into_iter().flatten().map(|(k, _)| k).find(|k| !known.contains(&k.as_str()))
            {
                return Err(format!("{name} {tag}: the generator reads fields only from properties, not {other}"));
            }
            let mut fields = fields_of(branch, key).map_err(|e| format!("{name} {tag}: {e}"))?;
            if declared {
                in_declared_order(branch, name, tag, key, &mut fields)?;
            }
            Ok(UnionVariant { tag: tag.to_owned(), doc: doc_of(branch), fields, recursive: false })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((definition, variants))
}

/// A union a binding holds as one type with every variant's fields (a
/// message, whichever its role): the tag's JSON name (`key`), the variants and
/// the fields.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlatUnion {
    pub name: String,
    pub doc: String,
    pub key: String,
    pub variants: Vec<FlatVariant>,
    /// Every field of any variant, once (by its host key), in the order the
    /// variants first declare them.
    pub fields: Vec<FlatField>,
    /// The JSON names of every variant's fields, each once, in that order.
    pub json_names: Vec<String>,
}

/// One variant of a [`FlatUnion`]: its tag's value, description and fields.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlatVariant {
    pub tag: String,
    pub doc: String,
    pub fields: Vec<FlatMember>,
}

/// A field of one variant, with the key and type of the host's field that
/// holds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlatMember {
    pub key: String,
    pub field: Field,
    /// The host field's type (every variant's field of its key, merged).
    pub host: FieldType,
    /// The variant writes the host's content (a list of parts) as its text,
    /// and reads its text as one text part (a system message's content).
    pub as_text: bool,
    /// Ferrule always writes it: the variant requires it, or it has a
    /// default and its type's empty value is one (`false`, `[]`). Other
    /// fields ferrule leaves out when empty.
    pub written: bool,
}

/// A field of the host's one type: its key (the JSON name, unless the
/// language's table renames it), its description (each variant's, by tag,
/// where they differ; followed by the tags where not), its type (nullable unless
/// every variant requires it) and the variants that have it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FlatField {
    pub key: String,
    pub doc: String,
    pub ty: FieldType,
    pub tags: Vec<String>,
}

/// The union `$defs/<name>`, told apart by `key`, as one type. `rename`
/// gives the host key of a variant's field (by tag and JSON name) that the
/// language's table names. Two variants' fields of one key have one type:
/// the same, or text and content (`Content`), which is content, written as
/// text where the variant has text. Fields of one key whose types differ
/// otherwise (base64 text and plain text) are refused unless the table names
/// the field, with a key of its own or with its JSON name as the key (held
/// together knowingly, as text). A flag, list or content field whose
/// default is not its empty value (`false`, `[]`) is refused: ferrule always
/// writes such a field, and the host's starts empty. (Any other field with a
/// default is left out while absent, for ferrule's default.)
pub fn read_flat(
    schema: &Value,
    name: &str,
    key: &str,
    rename: &dyn Fn(&str, &str) -> Option<&'static str>,
) -> Result<FlatUnion, String> {
    let (definition, variants) = read_variants(schema, name, key, true)?;
    let content = FieldType { name: Some("Content".to_owned()), ..FieldType::of("ref") };
    let string = FieldType::of("string");
    let bare = |ty: &FieldType| FieldType { nullable: false, ..ty.clone() };
    let named_anywhere =
        |key: &str| variants.iter().any(|v| v.fields.iter().any(|f| rename(&v.tag, &f.json) == Some(key)));
    let mut fields: Vec<FlatField> = Vec::new();
    let mut flat_variants = Vec::new();
    for variant in &variants {
        let mut members = Vec::new();
        for field in &variant.fields {
            let named = rename(&variant.tag, &field.json);
            let host_key = named.unwrap_or(&field.json).to_owned();
            let mut as_text = false;
            match fields.iter_mut().find(|f| f.key == host_key) {
                Some(flat) => {
                    let (one, other) = (bare(&flat.ty), bare(&field.ty));
                    let unencoded = |ty: &FieldType| FieldType { encoding: None, ..ty.clone() };
                    if one == other {
                    } else if one == content && other == string {
                        as_text = true;
                    } else if one == string && other == content {
                        flat.ty = FieldType { nullable: flat.ty.nullable, ..content.clone() };
                        for earlier in flat_variants.iter_mut().flat_map(|v: &mut FlatVariant| v.fields.iter_mut()) {
                            if earlier.key == host_key {
                                earlier.as_text = true;
                            }
                        }
                    } else if named_anywhere(&host_key) && unencoded(&one) == unencoded(&other) {
                        // The table holds both in one field: the text, encoded or not.
                        flat.ty.encoding = None;
                    } else {
                        return Err(format!(
                            "{name} {}: {host_key} is of type {} here and {} elsewhere; name it in the \
                             language's table (a key of its own, or its JSON name to hold both as text)",
                            variant.tag,
                            describe(&other),
                            describe(&one)
                        ));
                    }
                    flat.tags.push(variant.tag.clone());
                    flat.ty.nullable |= field.ty.nullable || !field.required;
                }
                None => fields.push(FlatField {
                    key: host_key.clone(),
                    doc: field.doc.clone(),
                    ty: FieldType { nullable: field.ty.nullable || !field.required, ..field.ty.clone() },
                    tags: vec![variant.tag.clone()],
                }),
            }
            let empty = match field.ty.kind.as_str() {
                "boolean" => Some(Value::Bool(false)),
                "array" => Some(Value::Array(Vec::new())),
                _ if bare(&field.ty) == content => Some(Value::Array(Vec::new())),
                _ => None,
            };
            if let (Some(default), Some(empty)) = (&field.default, &empty) {
                if default != empty {
                    return Err(format!(
                        "{name} {}: {} defaults to {default}, not its empty value, which the host's field starts with",
                        variant.tag, field.json
                    ));
                }
            }
            let written = field.required || (field.default.is_some() && empty.is_some());
            members.push(FlatMember {
                key: host_key,
                field: field.clone(),
                host: FieldType::of("any"),
                as_text,
                written,
            });
        }
        flat_variants.push(FlatVariant { tag: variant.tag.clone(), doc: variant.doc.clone(), fields: members });
    }
    for field in &mut fields {
        if field.tags.len() < variants.len() {
            field.ty.nullable = true;
        }
        // Each variant's description, by tag where they differ.
        let docs: Vec<(&str, &str)> = flat_variants
            .iter()
            .flat_map(|v| {
                v.fields.iter().filter(|m| m.key == field.key).map(|m| (v.tag.as_str(), m.field.doc.as_str()))
            })
            .collect();
        let values = string_values(schema, &field.ty).map(|values| format!(" One of {values}.")).unwrap_or_default();
        field.doc = match docs.iter().all(|(_, doc)| *doc == docs[0].1) {
            true => format!("{}{values} ({})", docs[0].1, field.tags.join(", ")),
            false => docs.iter().map(|(tag, doc)| format!("{tag}: {doc}")).collect::<Vec<_>>().join(" ") + &values,
        };
    }
    for member in flat_variants.iter_mut().flat_map(|v| v.fields.iter_mut()) {
        let flat = fields.iter().find(|f| f.key == member.key);
        member.host = flat.map(|f| f.ty.clone()).ok_or_else(|| format!("{name}: no host field {}", member.key))?;
    }
    let mut json_names: Vec<String> = Vec::new();
    for json in flat_variants.iter().flat_map(|v| v.fields.iter().map(|m| &m.field.json)) {
        if !json_names.contains(json) {
            json_names.push(json.clone());
        }
    }
    Ok(FlatUnion {
        name: name.to_owned(),
        doc: doc_of(definition),
        key: key.to_owned(),
        variants: flat_variants,
        fields,
        json_names,
    })
}

/// A type as an error message names it.
fn describe(ty: &FieldType) -> String {
    match (&ty.name, &ty.encoding) {
        (Some(name), _) => name.clone(),
        (None, Some(encoding)) => format!("{encoding} {}", ty.kind),
        (None, None) => ty.kind.clone(),
    }
}

/// The values of the string enum a field of type `ty` refers to, quoted and
/// listed (for the doc of a field a binding holds as plain text); none for
/// any other type.
fn string_values(schema: &Value, ty: &FieldType) -> Option<String> {
    let values = read_enum(schema, ty.name.as_deref()?, false).ok()?.variants;
    Some(values.iter().map(|value| format!("`{}`", value.value)).collect::<Vec<_>>().join(", "))
}

/// An object type of the schema: its definition's name, description and
/// fields.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Record {
    pub name: String,
    pub doc: String,
    pub fields: Vec<Field>,
}

/// The object type the schema defines as `$defs/<name>`.
pub fn read_record(schema: &Value, name: &str) -> Result<Record, String> {
    let definition =
        schema.pointer(&format!("/$defs/{name}")).ok_or_else(|| format!("the schema defines no {name}"))?;
    if definition["type"] != "object" || definition.get("oneOf").is_some() {
        return Err(format!("{name} is not an object type"));
    }
    let fields = fields_of(definition, "type").map_err(|e| format!("{name}: {e}"))?;
    Ok(Record { name: name.to_owned(), doc: doc_of(definition), fields })
}

/// The fields of an object's schema but its tag (a constant `tag`): those it requires first, in
/// the order it requires them (the order the Rust type declares them), then the
/// others by name. (The schema keeps its properties sorted by name, so the
/// declared place of a field that is not required is not known: a field added
/// that way lands among the optional ones by its name.)
fn fields_of(object: &Value, tag: &str) -> Result<Vec<Field>, String> {
    let required: Vec<&str> = object["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let is_tag = |property: &Value| property.get("const").is_some();
    let properties = object["properties"].as_object().into_iter().flatten();
    let properties = properties.filter(|(key, property)| key.as_str() != tag || !is_tag(property));
    let mut fields = properties
        .map(|(key, property)| {
            let mut ty = field_type(property).map_err(|e| format!("{key}: {e}"))?;
            let required = required.contains(&key.as_str());
            // Any JSON value that may be absent, with no default, is none when
            // absent: a binding holds it as an optional value.
            ty.nullable |= ty.kind == "any" && !required && property.get("default").is_none();
            Ok(Field {
                json: key.clone(),
                doc: doc_of(property),
                ty,
                required,
                default: property.get("default").cloned(),
                minimum: property["minimum"].as_f64(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let place = |field: &Field| required.iter().position(|r| *r == field.json).unwrap_or(usize::MAX);
    fields.sort_by(|a, b| place(a).cmp(&place(b)).then_with(|| a.json.cmp(&b.json)));
    Ok(fields)
}

/// A property's type: `{"type": T}` or `{"type": [T, "null"]}` for a scalar, a
/// list (`items`) or a map (`additionalProperties`); `{"$ref": ...}` or
/// `{"anyOf": [{"$ref": ...}, {"type": "null"}]}` for a definition; no type at
/// all for any value. Any other shape is refused, so that a new one is noticed.
pub(crate) fn field_type(property: &Value) -> Result<FieldType, String> {
    let reference = |value: &Value| value["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")).map(str::to_owned);
    if let Some(name) = reference(property) {
        return Ok(FieldType { name: Some(name), ..FieldType::of("ref") });
    }
    if let Some([first, second]) = property["anyOf"].as_array().map(Vec::as_slice) {
        if let (Some(name), true) = (reference(first), second["type"] == "null") {
            return Ok(FieldType { name: Some(name), nullable: true, ..FieldType::of("ref") });
        }
        return Err("an anyOf other than a definition or null".to_owned());
    }
    let (kind, nullable) = match &property["type"] {
        Value::String(kind) => (kind.as_str(), false),
        Value::Array(kinds) if kinds.len() == 2 && kinds[1] == "null" => (kinds[0].as_str().unwrap_or_default(), true),
        Value::Null
            if ["oneOf", "anyOf", "allOf", "not", "$ref", "const", "enum"]
                .iter()
                .all(|key| property.get(key).is_none()) =>
        {
            return Ok(FieldType::of("any"));
        }
        other => return Err(format!("a type the generator does not know: {other}")),
    };
    let format = property["format"].as_str().map(str::to_owned);
    let encoding = property["contentEncoding"].as_str().map(str::to_owned);
    let ty = match kind {
        "string" | "integer" | "number" | "boolean" => FieldType { format, encoding, ..FieldType::of(kind) },
        "array" => FieldType { items: Some(Box::new(field_type(&property["items"])?)), ..FieldType::of("array") },
        "object" => match property.get("additionalProperties") {
            Some(values) if values.is_object() => {
                FieldType { items: Some(Box::new(field_type(values)?)), ..FieldType::of("map") }
            }
            _ if property.get("properties").is_some() => return Err("an object declared in place".to_owned()),
            _ => FieldType::of("object"),
        },
        other => return Err(format!("a type the generator does not know: {other}")),
    };
    Ok(FieldType { nullable, ..ty })
}

/// A definition's description, on one line per paragraph.
pub(crate) fn doc_of(definition: &Value) -> String {
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
    fn a_union_reads_its_variants_fields_in_declared_order_then_by_name() {
        let schema = json!({"$defs": {"Event": {"properties": {"run_id": {"type": "string"}}, "required": ["run_id"],
            "oneOf": [{"description": "A delta.", "required": ["type", "turn", "index"], "properties": {
                "type": {"const": "delta"}, "name": {"type": ["string", "null"]}, "index": {"type": "integer"},
                "turn": {"type": "integer"}, "error": {"anyOf": [{"$ref": "#/$defs/Error"}, {"type": "null"}]}}}]}}});
        let union = read_union(&schema, "Event").unwrap();
        assert_eq!(union.common[0].json, "run_id");
        let fields: Vec<&str> = union.variants[0].fields.iter().map(|f| f.json.as_str()).collect();
        assert_eq!(fields, ["turn", "index", "error", "name"]);
        assert_eq!(
            union.variants[0].fields[2].ty,
            FieldType { name: Some("Error".into()), nullable: true, ..FieldType::of("ref") }
        );
        let odd = json!({"$defs": {"E": {"oneOf": [{"properties": {"type": {"const": "x"}, "n": {"const": 1}}}]}}});
        assert!(read_union(&odd, "E").unwrap_err().contains("does not know"));
        let three = json!({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]});
        assert!(field_type(&three).is_err(), "an anyOf of three is no value of any type");
        assert!(field_type(&json!({"$ref": "https://example.com/x"})).is_err());
        assert_eq!(field_type(&json!({"description": "Anything."})).unwrap(), FieldType::of("any"));
        let typed = json!({"$defs": {"R": {"type": "object", "properties": {"type": {"type": "string"}}}}});
        assert_eq!(read_record(&typed, "R").unwrap().fields[0].json, "type", "a field named type is a field");
    }

    #[test]
    fn a_flat_union_holds_each_field_once_with_one_type() {
        let schema = in_property_order(json!({"$defs": {"M": {"oneOf": [
            {"properties": {"role": {"const": "system"}, "content": {"type": "string"}, "data": {"type": "string"}},
             "required": ["role", "content"]},
            {"properties": {"role": {"const": "user"}, "content": {"$ref": "#/$defs/Content", "description": "Parts."},
             "data": {"type": "string", "contentEncoding": "base64"}}, "required": ["role", "content", "data"]},
        ]}}}));
        let same = |_: &str, _: &str| None;
        let refused = read_flat(&schema, "M", "role", &same).unwrap_err();
        assert!(refused.contains("data is of type base64 string here and string elsewhere"), "{refused}");
        let together = |tag: &str, json: &str| (tag == "system" && json == "data").then_some("data");
        let flat = read_flat(&schema, "M", "role", &together).unwrap();
        let content = &flat.fields[0];
        assert_eq!((content.key.as_str(), content.doc.as_str()), ("content", "system:  user: Parts."));
        assert_eq!(content.ty, FieldType { name: Some("Content".into()), ..FieldType::of("ref") });
        assert!(flat.variants[0].fields[0].as_text && !flat.variants[1].fields[0].as_text);
        assert_eq!(flat.variants[0].fields[0].host, content.ty, "each member knows its host field's type");
        assert_eq!(flat.fields[1].ty, FieldType { nullable: true, ..FieldType::of("string") }, "text, either way");
        let renamed = |tag: &str, json: &str| (tag == "user" && json == "data").then_some("bytes");
        let flat = read_flat(&schema, "M", "role", &renamed).unwrap();
        let keys: Vec<&str> = flat.fields.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, ["content", "data", "bytes"]);
        assert_eq!(flat.json_names, ["content", "data"], "one JSON name, held in two fields");
        assert!(flat.fields.iter().all(|f| f.key == "content" || f.ty.nullable), "one variant lacks each");
        let clash = in_property_order(json!({"$defs": {"M": {"oneOf": [
            {"properties": {"role": {"const": "a"}, "n": {"type": "string"}}},
            {"properties": {"role": {"const": "b"}, "n": {"type": "integer"}}}]}}}));
        assert!(read_flat(&clash, "M", "role", &same).unwrap_err().contains("n is of type integer here and string"));
        let shared = |_: &str, _: &str| Some("n");
        assert!(read_flat(&clash, "M", "role", &shared).is_err(), "the table holds text together, not other types");
    }

    #[test]
    fn a_flat_union_refuses_a_default_its_host_field_cannot_start_with() {
        let schema = |default: Value| {
            in_property_order(json!({"$defs": {"M": {"oneOf": [{"properties": {"role": {"const": "a"},
                "is_error": {"type": "boolean", "default": default}}}]}}}))
        };
        let same = |_: &str, _: &str| None;
        let flat = read_flat(&schema(json!(false)), "M", "role", &same).unwrap();
        assert!(flat.variants[0].fields[0].written, "false is written, as ferrule writes its default");
        assert!(read_flat(&schema(json!(true)), "M", "role", &same).unwrap_err().contains("defaults to true"));
    }

    #[test]
    fn a_flat_union_names_the_values_of_a_string_enum_it_holds_as_text() {
        let schema = in_property_order(json!({"$defs": {
            "StopReason": {"oneOf": [{"const": "end_turn"}, {"const": "length"}]},
            "Origin": {"type": "string", "enum": ["injection"]},
            "M": {"oneOf": [{"properties": {"role": {"const": "a"},
                "stop_reason": {"$ref": "#/$defs/StopReason", "description": "Why."},
                "origin": {"$ref": "#/$defs/Origin", "description": "Whence."}}, "required": ["origin", "stop_reason"]}]}}}));
        let flat = read_flat(&schema, "M", "role", &|_, _| None).unwrap();
        let docs: Vec<&str> = flat.fields.iter().map(|f| f.doc.as_str()).collect();
        assert_eq!(docs, ["Whence. One of `injection`. (a)", "Why. One of `end_turn`, `length`. (a)"]);
    }

    #[test]
    fn parts_and_messages_take_their_values_in_declared_order() {
        let image = |order: Value| {
            json!({"$defs": {"Part": {"oneOf": [{"properties": {"type": {"const": "image"}, "url": {"type": "string"},
                "data": {"type": "string"}, "media_type": {"type": "string"}}, "required": ["type"],
                "x-ferrule-order": order}]}}})
        };
        let part = read_tagged(&image(json!(["type", "media_type", "data", "url"])), "Part").unwrap();
        let fields: Vec<&str> = part.variants[0].fields.iter().map(|f| f.json.as_str()).collect();
        assert_eq!(fields, ["media_type", "data", "url"], "as Part::Image declares them, not by name");
        let stale = image(json!(["type", "media_type", "data"]));
        assert!(read_tagged(&stale, "Part").unwrap_err().contains("does not name exactly its fields"));
        assert!(read_tagged(&image(Value::Null), "Part").is_err(), "a variant without its order");
        let events = json!({"$defs": {"Event": {"oneOf": [{"properties": {"type": {"const": "x"},
            "b": {"type": ["string", "null"]}, "a": {"type": ["string", "null"]}}}]}}});
        assert!(read_union(&events, "Event").is_ok(), "events are read by label");
    }

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
