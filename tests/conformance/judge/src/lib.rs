//! The one judge of ferrule's conformance scenarios.
//!
//! Every runner (C, Rust, Go, Swift, Kotlin) drives the scenarios of
//! `tests/conformance/` with tools written in its own language and writes what it
//! observed, one [observation](#observations) per scenario. This crate judges each
//! observation against its scenario with one set of [matching rules](matching),
//! so that a scenario passes or fails in every language for the same reason.
//!
//! # Observations
//!
//! ```json
//! {"runner": "go", "scenario": "020_approval_interrupts_the_batch",
//!  "steps": [
//!    {"events": [{"type": "run_start", ...}, ...], "result": {"status": ...},
//!     "hook_calls": [{"stage": "tool_call", "payload": {...}}], "cancel_handlers": 0},
//!    {"start_error": {"code": "INVALID_ARG", "message": "..."}}
//!  ]}
//! ```
//!
//! One step per run: the scenario's first run, then one per entry of its
//! `resumes`. A run that started has its events (as the binding gave them, in
//! order), its result, the hook consultations and how many cancel handlers ran;
//! a start that was refused has its error (the code by name, or by number). A
//! step the runner could not set up (a tool it could not register) has its
//! `runner_error` instead, which fails the step.

pub mod matching;
mod scenario;
mod spans;

use std::collections::HashMap;

use serde_json::Value;

pub use scenario::Scenario;

/// Judges observations. Knows the error codes by number, for runners that
/// observe codes as numbers (C).
#[derive(Debug, Default, Clone)]
pub struct Judge {
    code_names: HashMap<u64, String>,
}

impl Judge {
    /// A judge that reads numeric error codes with the `ErrorCode` definition of
    /// ferrule's schema (`schema/ferrule.schema.json`): each variant's `const`
    /// name and its `x-ferrule-code` number.
    pub fn with_schema(schema: &Value) -> Self {
        let variants = schema.pointer("/$defs/ErrorCode/oneOf").and_then(Value::as_array);
        let code_names = variants
            .into_iter()
            .flatten()
            .filter_map(|variant| {
                let name = variant.get("const")?.as_str()?;
                let code = variant.get("x-ferrule-code")?.as_u64()?;
                Some((code, name.to_owned()))
            })
            .collect();
        Judge { code_names }
    }

    /// What is wrong with `observation` of `scenario`; empty when it passes.
    pub fn judge(&self, scenario: &Scenario, observation: &Value) -> Vec<String> {
        let mut failures = Vec::new();
        if observation.get("scenario").and_then(Value::as_str) != Some(scenario.name()) {
            failures.push(format!(
                "the observation is of scenario {}",
                observation.get("scenario").unwrap_or(&Value::Null)
            ));
            return failures;
        }
        let observed: &[Value] = observation.get("steps").and_then(Value::as_array).map_or(&[], Vec::as_slice);
        for (index, step) in scenario.steps().enumerate() {
            let name = if index == 0 { "the first run".to_owned() } else { format!("resume {index}") };
            let Some(got) = observed.get(index) else {
                failures.push(format!("{name} was not observed"));
                continue;
            };
            for problem in self.judge_step(step, got) {
                failures.push(format!("{name}: {problem}"));
            }
        }
        if observed.len() > scenario.steps().count() {
            failures.push(format!(
                "{} runs were observed, the scenario has {}",
                observed.len(),
                scenario.steps().count()
            ));
        }
        failures
    }

    fn judge_step(&self, step: scenario::Step<'_>, got: &Value) -> Vec<String> {
        if let Some(problem) = got.get("runner_error") {
            return vec![format!("the runner could not run it: {problem}")];
        }
        match step {
            scenario::Step::Refused(want) => self.judge_refusal(want, got),
            scenario::Step::Run(expect) => {
                let Some(result) = got.get("result").filter(|r| r.is_object()) else {
                    return vec![match got.get("start_error") {
                        Some(error) => format!("the start was refused: {error}"),
                        None => "no run result".to_owned(),
                    }];
                };
                let events: &[Value] = got.get("events").and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let mut problems = scenario::check_invariants(events);
                problems.extend(scenario::check_consistency(result, events, got));
                problems.extend(scenario::check_expectations(expect, result, events, got));
                problems
            }
        }
    }

    fn judge_refusal(&self, want: &Value, got: &Value) -> Vec<String> {
        let Some(error) = got.get("start_error") else {
            return vec!["the start was not refused".to_owned()];
        };
        let code = match error.get("code") {
            Some(Value::String(name)) => name.clone(),
            Some(Value::Number(number)) => number
                .as_u64()
                .and_then(|number| self.code_names.get(&number).cloned())
                .unwrap_or_else(|| format!("code {number}")),
            other => format!("{}", other.unwrap_or(&Value::Null)),
        };
        let message = error.get("message").and_then(Value::as_str).unwrap_or_default();
        let mut problems = Vec::new();
        if let Some(wanted) = want.get("code").and_then(Value::as_str) {
            if code != wanted {
                problems.push(format!("the start was refused with {code} ({message}), expected {wanted}"));
            }
        }
        if let Some(needle) = want.get("contains").and_then(Value::as_str) {
            if !message.contains(needle) {
                problems.push(format!("the start error \"{message}\" lacks \"{needle}\""));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scenario() -> Scenario {
        let doc = json!({
            "expect": {"status": "interrupted", "event_counts": {"tool_execution_start": 0}},
            "resumes": [{"start_error": {"code": "INVALID_ARG", "contains": "version"}}]
        });
        Scenario::from_document("020_x", doc).unwrap()
    }

    fn run(events: Value) -> Value {
        json!({"events": events, "result": {"status": "interrupted"}, "hook_calls": [], "cancel_handlers": 0})
    }

    fn judge(steps: Value) -> Vec<String> {
        let schema = json!({"$defs": {"ErrorCode": {"oneOf": [{"const": "INVALID_ARG", "x-ferrule-code": 4}]}}});
        Judge::with_schema(&schema).judge(&scenario(), &json!({"runner": "t", "scenario": "020_x", "steps": steps}))
    }

    fn events() -> Value {
        json!([{"type": "run_start", "run_id": "run-1"},
               {"type": "run_end", "run_id": "run-1", "result": {"status": "interrupted"}}])
    }

    #[test]
    fn a_faithful_observation_passes_with_the_code_by_name_or_number() {
        let refused = |code: Value| json!({"start_error": {"code": code, "message": "state version 9"}});
        assert_eq!(judge(json!([run(events()), refused(json!("INVALID_ARG"))])), Vec::<String>::new());
        assert_eq!(judge(json!([run(events()), refused(json!(4))])), Vec::<String>::new());
        let wrong = judge(json!([run(events()), refused(json!(5))]));
        assert!(wrong[0].contains("code 5"), "{wrong:?}");
    }

    #[test]
    fn a_missing_step_a_runner_error_and_a_bad_invariant_fail() {
        assert_eq!(judge(json!([run(events())])), vec!["resume 1 was not observed"]);
        let failed = judge(json!([{"runner_error": "no tool"}, {"start_error": {"code": 4, "message": "version"}}]));
        assert!(failed[0].contains("could not run it"), "{failed:?}");
        let other_run = json!([{"type": "run_start", "run_id": "run-1"},
                                {"type": "run_end", "run_id": "run-2", "result": {"status": "interrupted"}}]);
        let failed = judge(json!([run(other_run), {"start_error": {"code": 4, "message": "version"}}]));
        assert!(failed[0].contains("more than one run"), "{failed:?}");
        let unknown = json!([{"type": "run_start"}, {"type": "unknown", "json": {"type": "new"}},
                              {"type": "run_end", "result": {"status": "interrupted"}}]);
        let failed = judge(json!([run(unknown), {"start_error": {"code": 4, "message": "version"}}]));
        assert!(failed[0].contains("does not know"), "{failed:?}");
    }

    #[test]
    fn events_out_of_order_and_a_run_end_with_another_result_fail() {
        let refused = json!({"start_error": {"code": 4, "message": "version"}});
        let judged = |events: Value| judge(json!([run(events), refused]));
        let swapped = json!([{"type": "run_start"}, {"type": "turn_end", "turn": 1}, {"type": "turn_start", "turn": 1},
                              {"type": "run_end", "result": {"status": "interrupted"}}]);
        assert!(judged(swapped).iter().any(|p| p.contains("without its turn_start")));
        let call_first = json!([{"type": "run_start"}, {"type": "tool_execution_end", "call_id": "c1"},
                                 {"type": "tool_execution_start", "call": {"id": "c1"}},
                                 {"type": "run_end", "result": {"status": "interrupted"}}]);
        assert!(judged(call_first).iter().any(|p| p.contains("did not start")));
        let unnumbered = json!([{"type": "run_start"}, {"type": "turn_start"}, {"type": "turn_end"},
                                 {"type": "run_end", "result": {"status": "interrupted"}}]);
        assert!(judged(unnumbered).iter().any(|p| p.contains("without its turn number")));
        let no_result = json!([{"type": "run_start"}, {"type": "run_end"}]);
        assert!(judged(no_result).iter().any(|p| p.contains("carries no result")));
        let other = json!([{"type": "run_start"}, {"type": "run_end", "result": {"status": "completed"}}]);
        assert!(judged(other).iter().any(|p| p.contains("another result")));
        let same = json!([{"type": "run_start"}, {"type": "run_end", "result": {"status": "interrupted"}}]);
        assert_eq!(judged(same), Vec::<String>::new());
    }

    #[test]
    fn a_hook_payload_of_another_run_fails() {
        let mut step = run(events());
        step["hook_calls"] = json!([{"stage": "tool_call", "payload": {"run_id": "run-9"}}]);
        let failed = judge(json!([step, {"start_error": {"code": 4, "message": "version"}}]));
        assert!(failed[0].contains("names run \"run-9\""), "{failed:?}");
    }
}
