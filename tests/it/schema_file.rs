//! The committed schema (`schema/ferrule.schema.json`) is what the Rust types
//! make of it, and what ferrule writes satisfies it. `FERRULE_BLESS=1` writes the
//! file anew.

use std::path::{Path, PathBuf};

use ferrule::tool::ToolResult;
use serde_json::{json, Value};

use crate::common::{self, call, tool};

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/ferrule.schema.json")
}

/// A validator for one of the schema's documents.
fn validator(name: &str) -> jsonschema::Validator {
    let mut schema = ferrule::schema::document();
    let document = schema["x-ferrule-documents"][name]["schema"].clone();
    assert!(document.is_object(), "the schema lists the document {name}");
    let root = schema.as_object_mut().unwrap();
    root.remove("x-ferrule-documents");
    root.extend(document.as_object().unwrap().clone());
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn assert_valid(name: &str, value: &Value) {
    let validator = validator(name);
    let problems: Vec<String> =
        validator.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(problems.is_empty(), "{name} does not satisfy the schema: {problems:?}\n{value:#}");
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let generated = ferrule::schema::document_text();
    if std::env::var_os("FERRULE_BLESS").is_some() {
        std::fs::create_dir_all(schema_path().parent().unwrap()).unwrap();
        std::fs::write(schema_path(), &generated).unwrap();
    }
    let committed = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        committed == generated,
        "schema/ferrule.schema.json is stale: run `make schema` (FERRULE_BLESS=1 cargo test schema_file) and commit it"
    );
}

#[test]
fn the_schema_is_draft_2020_12_with_every_document_resolved() {
    let schema = ferrule::schema::document();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let documents = schema["x-ferrule-documents"].as_object().unwrap();
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/ferrule.h")).unwrap();
    for (name, document) in documents {
        assert!(matches!(document["direction"].as_str(), Some("in" | "out")), "{name}");
        validator(name);
        // Every function a crossing names is one of the header's.
        let crossing = document["crossing"].as_str().unwrap();
        for function in
            crossing.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("ferrule_"))
        {
            assert!(header.contains(&format!("{function}(")), "{name}: ferrule.h has no {function}");
        }
    }
    let codes = &schema["$defs"]["ErrorCode"]["oneOf"];
    let numbered: Vec<(String, u64)> = codes
        .as_array()
        .unwrap()
        .iter()
        .map(|branch| (branch["const"].as_str().unwrap().to_owned(), branch["x-ferrule-code"].as_u64().unwrap()))
        .collect();
    assert!(numbered.contains(&("INVALID_JSON".to_owned(), 3)), "{numbered:?}");
    for (name, number) in numbered {
        let code: ferrule::ErrorCode = serde_json::from_value(json!(name)).unwrap();
        assert_eq!((code.name(), code as u64), (name.as_str(), number));
    }
}

#[test]
fn an_interrupted_run_writes_documents_the_schema_describes() {
    let script = json!([
        {"text": "thinking", "tool_calls": [call("c1", "echo", json!({"text": "hi"})), call("c2", "gated", json!({}))]},
        {"text": "done"}
    ]);
    let gated = tool("gated", json!({"needs_approval": true}), |_| async {
        ferrule::tool::ToolOutcome::Completed(ToolResult::text("ran"))
    });
    let agent = common::agent(script, json!({}), vec![common::echo("echo"), gated]);
    let (result, events) = common::run(&agent, "go");
    assert_eq!(result.status, ferrule::agent::RunStatus::Interrupted);
    let written = serde_json::to_value(&*result).unwrap();
    assert_valid("run_result", &written);
    assert_valid("run_state", &written["state"]);
    for event in &events {
        assert_valid("event", event);
    }
    let input = json!({"resume": written["state"], "decisions": {"c2": {"approve": false, "message": "no"}}});
    assert_valid("run_input", &input);
    let (resumed, events) = common::run_input(&agent, ferrule::agent::RunInput::from_json(&input.to_string()).unwrap());
    assert_eq!(resumed.status, ferrule::agent::RunStatus::Completed);
    assert_valid("run_result", &serde_json::to_value(&*resumed).unwrap());
    for event in &events {
        assert_valid("event", event);
    }
}

#[test]
fn the_schema_refuses_what_ferrule_refuses() {
    let refused = [
        ("agent_config", json!({"model": {"provider": "scripted"}, "max_roundz": 3})),
        ("run_input", json!({"prompt": 3})),
        ("tool_options", json!({"execution": "sometimes"})),
        ("tool_call_decision", json!({"deny": "no", "approve": true})),
        ("turn_start_decision", json!({"deny": "no"})),
        ("decision", json!({"approve": "yes"})),
        ("run_input", json!({"execute": {"role": "user", "content": "x"}})),
        ("agent_config", json!({"model": {"provider": "scripted", "script": []}, "max_rounds": 0})),
    ];
    for (name, value) in refused {
        assert!(!validator(name).is_valid(&value), "{name} accepts {value}");
    }
    let accepted = [
        ("agent_config", json!({"model": {"provider": "scripted", "script": []}})),
        ("run_input", json!({"prompt": "hi", "tools": ["echo"]})),
        (
            "run_input",
            json!({"messages": [], "execute": {"content": [], "tool_calls": [{"id": "c1", "name": "echo", "arguments": "{}"}]}}),
        ),
        ("tool_call_decision", json!({})),
        ("tool_call_decision", json!({"deny": "no"})),
        ("tool_completion", json!("a text result")),
        ("tool_completion", json!({"content": [{"type": "text", "text": "ok"}], "is_error": false})),
        ("hook_stages", json!(["tool_call"])),
        ("hook_stages", json!({"stages": ["tool_call"], "nonblocking": true})),
    ];
    for (name, value) in accepted {
        assert_valid(name, &value);
    }
}

#[test]
fn every_conformance_scenario_gives_documents_the_schema_accepts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let valid = |document: &str, value: &Value| {
            let problems: Vec<String> = validator(document).iter_errors(value).map(|e| e.to_string()).collect();
            assert!(problems.is_empty(), "{name}: its {document} {value} does not satisfy the schema: {problems:?}");
        };
        valid("agent_config", &scenario["config"]);
        valid("run_input", &scenario["input"]);
        for tool in scenario["tools"].as_array().into_iter().flatten() {
            valid("tool_options", tool.get("options").unwrap_or(&json!({})));
        }
        for hook in scenario["hooks"].as_array().into_iter().flatten() {
            valid("hook_stages", &hook["stages"]);
        }
        for resume in scenario["resumes"].as_array().into_iter().flatten() {
            for decision in resume["decisions"].as_object().into_iter().flatten().map(|(_, d)| d) {
                valid("decision", decision);
            }
        }
        checked += 1;
    }
    assert!(checked >= 38, "{checked} scenarios");
}
