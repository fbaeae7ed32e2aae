//! What bash commands see of the environment: the model provider's key variables
//! are removed unless the configuration passes them on. The test sets process
//! environment variables that no other test reads (`FERRULE_TEST_API_KEY` is the
//! other tests' key).

use crate::common::*;
use serde_json::json;

#[test]
fn provider_keys_are_hidden_from_commands_unless_passed_on() {
    std::env::set_var("OPENAI_API_KEY", "sk-openai-visible-123");
    std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-visible-456");
    std::env::set_var("FERRULE_MODEL_KEY", "sk-model-visible-789");
    std::env::set_var("FERRULE_HARMLESS", "plain-value");
    let dir = tempfile::tempdir().unwrap();
    let bash_env = |pass: serde_json::Value| {
        let builtins =
            json!({"working_directory": dir.path().to_str().unwrap(), "allowed": ["bash"], "bash_pass_env": pass});
        let script = json!([{"tool_calls": [call("b", "bash", json!({"command": "env"}))]}, {"text": "done"}]);
        let model = json!({"provider": "scripted", "script": script, "api_key_env": "FERRULE_MODEL_KEY"});
        let config = json!({"model": model, "builtin_tools": builtins});
        let agent = ferrule::agent::AgentBuilder::from_json(&config.to_string()).unwrap().build().unwrap();
        let (result, events) = run(&agent, "go");
        (text(&tool_results(&result)[0]), serde_json::to_string(&events).unwrap())
    };
    let (output, events) = bash_env(json!([]));
    assert!(output.contains("FERRULE_HARMLESS=plain-value"), "{output}");
    for secret in ["sk-openai-visible", "sk-ant-visible", "sk-model-visible"] {
        assert!(!output.contains(secret) && !events.contains(secret), "{secret} reached the command");
    }
    let (output, _) = bash_env(json!(["ANTHROPIC_API_KEY"]));
    assert!(output.contains("ANTHROPIC_API_KEY=sk-ant-visible-456"), "{output}");
    assert!(!output.contains("sk-openai-visible") && !output.contains("sk-model-visible"), "{output}");
}
