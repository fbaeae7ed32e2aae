//! The Codex apply_patch scenarios from the shared fixtures, each run through a
//! full scripted agent run: the resulting tree must match, failures must say
//! which file and why, and a failed patch must change nothing.
//!
//! One deliberate difference: upstream's 015 leaves the files of earlier
//! sections changed when a later one fails; ferrule writes nothing unless every
//! section applies, so after 015 the tree is the input tree.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::fixtures::fixtures_dir;
use crate::common::*;
use serde_json::json;

/// Scenarios that fail, with a piece of the message.
const FAILURES: &[(&str, &str)] = &[
    ("005_rejects_empty_patch", "no changes"),
    ("006_rejects_missing_context", "could not find these lines"),
    ("007_rejects_missing_file_delete", "Could not read missing.txt: No such file"),
    ("008_rejects_empty_update_hunk", "has no changes"),
    ("009_requires_existing_file_for_update", "Could not read"),
    ("012_delete_directory_fails", "directory"),
    ("013_rejects_invalid_hunk_header", "not a valid section header"),
    ("015_failure_after_partial_success_leaves_changes", "missing.txt"),
];

/// Every file (with its bytes) and directory under `root`.
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut entries = BTreeMap::new();
    if !root.exists() {
        return entries;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                entries.insert(format!("{name}/"), None);
                stack.push(path);
            } else {
                entries.insert(name, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    entries
}

fn copy(from: &Path, to: &Path) {
    for (name, content) in tree(from) {
        match content {
            None => std::fs::create_dir_all(to.join(name)).unwrap(),
            Some(bytes) => {
                let target = to.join(&name);
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                std::fs::write(target, bytes).unwrap();
            }
        }
    }
}

#[test]
fn every_scenario_gives_its_tree_and_message() {
    let Some(fixtures) = fixtures_dir() else { return };
    let scenarios_dir = fixtures.join("apply_patch");
    let mut scenarios: Vec<_> = std::fs::read_dir(&scenarios_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("patch.txt").is_file())
        .collect();
    scenarios.sort();
    assert_eq!(scenarios.len(), 23, "the suite has 23 scenarios");
    for scenario in scenarios {
        let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
        let work = tempfile::tempdir().unwrap();
        copy(&scenario.join("input"), work.path());
        let patch = std::fs::read_to_string(scenario.join("patch.txt")).unwrap();
        let script = json!([{"tool_calls": [{"id": "p", "name": "apply_patch", "arguments": {"input": patch}}]}, {"text": "done"}]);
        let builtins = json!({"working_directory": work.path().to_str().unwrap(), "allowed": ["apply_patch"]});
        let (result, _) = run(&agent(script, json!({"builtin_tools": builtins}), vec![]), "patch");
        let message = &tool_results(&result)[0];
        let (output, is_error) = (text(message), message["is_error"].as_bool().unwrap());
        match FAILURES.iter().find(|(failing, _)| *failing == name) {
            Some((_, needle)) => {
                assert!(is_error, "{name}: expected a failure, got {output}");
                assert!(output.contains(needle), "{name}: {output}");
                assert!(output.contains("Nothing was changed"), "{name}: {output}");
                assert_eq!(tree(work.path()), tree(&scenario.join("input")), "{name}: a failed patch changed files");
            }
            None => {
                assert!(!is_error, "{name}: {output}");
                assert_eq!(tree(work.path()), tree(&scenario.join("expected")), "{name}: {output}");
            }
        }
    }
}
