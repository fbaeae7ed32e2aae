//! The hook decisions, read from the schema: each stage's decision is a
//! `oneOf` of `{}` (go on) and objects of exactly one key, each a choice of
//! its own (`{"deny": "..."}`); a key whose value is the constant `true` is a
//! flag (`{"approve": true}`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{doc_of, field_type, FieldType};

/// One choice of a decision: its key (empty for `{}`), description, and the
/// type of its value (none for `{}` and for a flag); `at_least_one` when the
/// value is a list that may not be empty.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Choice {
    pub key: String,
    pub doc: String,
    pub ty: Option<FieldType>,
    pub at_least_one: bool,
}

/// A stage's decision: its definition's name, its stage (`run_start`), its
/// description and its choices, `{}` first.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Decision {
    pub name: String,
    pub stage: String,
    pub doc: String,
    pub choices: Vec<Choice>,
}

/// A choice as every stage that offers it has it: the stages, in order.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SharedChoice {
    #[serde(flatten)]
    pub choice: Choice,
    pub stages: Vec<String>,
}

/// The decision the schema defines as `$defs/<name>` (`<Stage>Decision`).
pub fn read_decision(schema: &Value, name: &str) -> Result<Decision, String> {
    let definition =
        schema.pointer(&format!("/$defs/{name}")).ok_or_else(|| format!("the schema defines no {name}"))?;
    let stage = name.strip_suffix("Decision").ok_or_else(|| format!("{name} does not name a stage's decision"))?;
    let branches = definition["oneOf"].as_array().ok_or_else(|| format!("{name} is not a oneOf of objects"))?;
    let mut choices = branches.iter().map(|branch| read_choice(branch).map_err(|e| format!("{name}: {e}")));
    let choices = choices.by_ref().collect::<Result<Vec<_>, String>>()?;
    if choices.first().is_none_or(|c| !c.key.is_empty()) {
        return Err(format!("{name}: the first choice is not {{}}"));
    }
    Ok(Decision { name: name.to_owned(), stage: snake(stage), doc: doc_of(definition), choices })
}

/// Every choice of `decisions`, each key once, with the stages that offer it.
pub fn shared_choices(decisions: &[Decision]) -> Result<Vec<SharedChoice>, String> {
    let mut shared: Vec<SharedChoice> = Vec::new();
    for decision in decisions {
        for choice in &decision.choices {
            match shared.iter_mut().find(|s| s.choice.key == choice.key) {
                Some(seen) if seen.choice.ty != choice.ty => {
                    return Err(format!("{}: {} has another type at another stage", decision.name, choice.key));
                }
                Some(seen) => seen.stages.push(decision.stage.clone()),
                None => shared.push(SharedChoice { choice: choice.clone(), stages: vec![decision.stage.clone()] }),
            }
        }
    }
    Ok(shared)
}

/// `{}` (no properties at all), or an object of one required key.
fn read_choice(branch: &Value) -> Result<Choice, String> {
    let doc = doc_of(branch);
    if branch["maxProperties"] == 0 {
        return Ok(Choice { key: String::new(), doc, ty: None, at_least_one: false });
    }
    let properties = branch["properties"].as_object().ok_or("a choice without properties")?;
    let required = branch["required"].as_array().map(Vec::as_slice).unwrap_or_default();
    let [(key, value)] = properties.iter().collect::<Vec<_>>()[..] else {
        return Err("a choice of more than one key".to_owned());
    };
    if required != [Value::String(key.clone())] {
        return Err(format!("the choice {key} does not require its key"));
    }
    let ty = match value.get("const") {
        Some(Value::Bool(true)) => None,
        Some(other) => return Err(format!("the choice {key} is the constant {other}, not true")),
        None => Some(field_type(value).map_err(|e| format!("{key}: {e}"))?),
    };
    Ok(Choice { key: key.clone(), doc, ty, at_least_one: value["minItems"].as_u64().is_some_and(|n| n >= 1) })
}

/// `TurnStart` → `turn_start`.
fn snake(name: &str) -> String {
    let mut snake = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_are_one_key_choices() {
        let schema = json!({"$defs": {"ToolCallDecision": {"description": "A decision.", "oneOf": [
            {"description": "Go on.", "maxProperties": 0, "type": "object"},
            {"properties": {"deny": {"type": "string"}}, "required": ["deny"], "type": "object"},
            {"properties": {"approve": {"const": true}}, "required": ["approve"], "type": "object"},
            {"properties": {"messages": {"items": {"type": "string"}, "minItems": 1, "type": "array"}},
             "required": ["messages"], "type": "object"}
        ]}}});
        let decision = read_decision(&schema, "ToolCallDecision").unwrap();
        assert_eq!(decision.stage, "tool_call");
        let keys: Vec<_> = decision.choices.iter().map(|c| (c.key.as_str(), c.ty.is_some(), c.at_least_one)).collect();
        assert_eq!(
            keys,
            [("", false, false), ("deny", true, false), ("approve", false, false), ("messages", true, true)]
        );
        let shared = shared_choices(&[decision.clone(), Decision { stage: "other".into(), ..decision }]).unwrap();
        assert_eq!(shared[1].stages, ["tool_call", "other"]);
        let two = json!({"$defs": {"XDecision": {"oneOf": [{"maxProperties": 0},
            {"properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}]}}});
        assert!(read_decision(&two, "XDecision").unwrap_err().contains("more than one key"));
        let constant = json!({"$defs": {"XDecision": {"oneOf": [{"maxProperties": 0},
            {"properties": {"a": {"const": 1}}, "required": ["a"]}]}}});
        assert!(read_decision(&constant, "XDecision").unwrap_err().contains("not true"));
    }
}
