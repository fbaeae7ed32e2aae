//! A scenario's runs and what each must show: its `expect` (or, for a resume
//! that must be refused, its `start_error`), and the event invariants every run
//! holds to.

use std::path::Path;

use serde_json::Value;

use crate::matching::{contains, equal};

/// One scenario of `tests/conformance/`: its name (the file name without
/// `.json`) and its document.
#[derive(Debug, Clone)]
pub struct Scenario {
    name: String,
    doc: Value,
}

/// One run of a scenario, as the scenario expects it.
#[derive(Clone, Copy)]
pub(crate) enum Step<'a> {
    /// The run starts; its `expect`.
    Run(&'a Value),
    /// The start is refused; its `start_error` (`code`, `contains`).
    Refused(&'a Value),
}

impl Scenario {
    /// Reads the scenario file at `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let name = path.file_stem().and_then(|s| s.to_str()).ok_or("a scenario file needs a name")?.to_owned();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Scenario::from_document(name, doc).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A scenario from its name and document.
    pub fn from_document(name: impl Into<String>, doc: Value) -> Result<Self, String> {
        if !doc.get("expect").is_some_and(Value::is_object) {
            return Err("the scenario has no \"expect\"".to_owned());
        }
        Ok(Scenario { name: name.into(), doc })
    }

    /// Every scenario in `dir`, sorted by name.
    pub fn read_all(dir: &Path) -> Result<Vec<Self>, String> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        paths.iter().map(|path| Scenario::read(path)).collect()
    }

    /// The scenario's name, such as `001_plain_answer`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The scenario document.
    pub fn document(&self) -> &Value {
        &self.doc
    }

    /// The runs: the first, then one per resume step.
    pub(crate) fn steps(&self) -> impl Iterator<Item = Step<'_>> {
        let resumes = self.doc.get("resumes").and_then(Value::as_array).into_iter().flatten();
        std::iter::once(Step::Run(&self.doc["expect"])).chain(resumes.map(|step| match step.get("start_error") {
            Some(refusal) => Step::Refused(refusal),
            None => Step::Run(step.get("expect").unwrap_or(&Value::Null)),
        }))
    }
}

fn event_type(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("?")
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|event| event_type(event) == kind).count()
}

/// What every run shows: `run_start` first, exactly one `run_end` and it last, a
/// `tool_execution_end` for every `tool_execution_start` (but the call of an
/// agent that stopped for approval), a `turn_end` for every `turn_start`, one
/// `run_id` in all the events that carry one, and no event the binding did not
/// know (written as `{"type": "unknown", "json": ...}`). The events of each
/// nested run (`agent_event`, by call) show the same.
pub(crate) fn check_invariants(events: &[Value]) -> Vec<String> {
    check_events(events, true, 0)
}

/// The invariants of the events of a run `depth` deep (0: the run the host
/// started) and of its nested runs'. Each `agent_event` comes while its call
/// is open (after its start, before its end), one deeper, naming the call's
/// tool as its agent. A run that is not `whole` (a nested run whose events
/// stopped at its call's end, as when the calling run was cancelled) may end
/// anywhere after its `run_start`, leaving turns and calls open.
fn check_events(events: &[Value], whole: bool, depth: u64) -> Vec<String> {
    let mut problems = check_run(events, whole);
    let mut open: Vec<(&Value, &Value)> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        match event_type(event) {
            "tool_execution_start" => open.push((
                event.pointer("/call/id").unwrap_or(&Value::Null),
                event.pointer("/call/name").unwrap_or(&Value::Null),
            )),
            "tool_execution_end" => open.retain(|(id, _)| Some(*id) != event.get("call_id")),
            "agent_event" => {
                let call = event.get("call_id").unwrap_or(&Value::Null);
                match open.iter().find(|(id, _)| *id == call) {
                    None => problems.push(format!("event {index}: an agent_event of call {call}, which is not open")),
                    Some((_, name)) if event.get("agent") != Some(*name) => problems.push(format!(
                        "event {index}: an agent_event of call {call} names agent {}, not {name}",
                        event.get("agent").unwrap_or(&Value::Null)
                    )),
                    Some(_) => {}
                }
                if event.get("depth").and_then(Value::as_u64) != Some(depth + 1) {
                    problems.push(format!(
                        "event {index}: an agent_event at depth {}, not {}",
                        event["depth"],
                        depth + 1
                    ));
                }
            }
            _ => {}
        }
    }
    for (call_id, nested) in nested_runs(events) {
        let whole = nested.iter().any(|event| event_type(event) == "run_end");
        let found = check_events(&nested, whole, depth + 1);
        problems.extend(found.into_iter().map(|p| format!("the agent of call {call_id}: {p}")));
    }
    problems
}

/// The events of the runs nested in a run, by the id of the call that started
/// each, unwrapped, in order.
fn nested_runs(events: &[Value]) -> Vec<(String, Vec<Value>)> {
    let mut runs: Vec<(String, Vec<Value>)> = Vec::new();
    for event in events.iter().filter(|event| event_type(event) == "agent_event") {
        let call_id = event.get("call_id").and_then(Value::as_str).unwrap_or("?").to_owned();
        let inner = event.get("event").cloned().unwrap_or(Value::Null);
        match runs.iter_mut().find(|(id, _)| *id == call_id) {
            Some((_, run)) => run.push(inner),
            None => runs.push((call_id, vec![inner])),
        }
    }
    runs
}

/// The invariants of one run's own events (see [`check_events`] for `whole`).
fn check_run(events: &[Value], whole: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if events.first().map(event_type) != Some("run_start") {
        problems.push("the first event is not run_start".to_owned());
    }
    if whole && events.last().map(event_type) != Some("run_end") {
        problems.push("the last event is not run_end".to_owned());
    }
    if count(events, "run_end") != usize::from(whole) {
        problems.push(format!("{} run_end events", count(events, "run_end")));
    }
    problems.extend(check_nesting(events, whole));
    let run_ids: Vec<&Value> = events.iter().filter_map(|event| event.get("run_id")).collect();
    if run_ids.windows(2).any(|pair| pair[0] != pair[1]) {
        problems.push(format!("the events name more than one run: {run_ids:?}"));
    }
    for event in events.iter().filter(|event| event_type(event) == "unknown") {
        problems.push(format!("an event the binding does not know: {}", event.get("json").unwrap_or(&Value::Null)));
    }
    problems
}

/// Turns and calls open and close in order: a turn ends before the next one
/// starts (with its number), a call's `tool_execution_end` follows its start, and
/// (for a `whole` run) nothing is left open at the end.
fn check_nesting(events: &[Value], whole: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut turn: Option<&Value> = None;
    let mut calls: Vec<&Value> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        match event_type(event) {
            "turn_start" | "turn_end" if !event.get("turn").is_some_and(Value::is_u64) => {
                problems.push(format!("event {index}: a {} without its turn number", event_type(event)))
            }
            "tool_execution_start" if !event.pointer("/call/id").is_some_and(Value::is_string) => {
                problems.push(format!("event {index}: a tool_execution_start without its call id"))
            }
            "tool_execution_end" if !event.get("call_id").is_some_and(Value::is_string) => {
                problems.push(format!("event {index}: a tool_execution_end without its call id"))
            }
            "turn_start" if turn.is_some() => problems.push(format!("event {index}: a turn starts inside another")),
            "turn_start" => turn = Some(event.get("turn").unwrap_or(&Value::Null)),
            "turn_end" => match turn.take() {
                Some(open) if open == event.get("turn").unwrap_or(&Value::Null) => {}
                Some(open) => problems.push(format!("event {index}: turn_end {} ends turn {open}", event["turn"])),
                None => problems.push(format!("event {index}: turn_end without its turn_start")),
            },
            "tool_execution_start" => calls.push(event.pointer("/call/id").unwrap_or(&Value::Null)),
            "tool_execution_end" => {
                let id = event.get("call_id").unwrap_or(&Value::Null);
                match calls.iter().position(|open| *open == id) {
                    Some(at) => {
                        calls.remove(at);
                    }
                    None => problems.push(format!("event {index}: tool_execution_end of {id}, which did not start")),
                }
            }
            _ => {}
        }
    }
    if !whole {
        return problems;
    }
    if turn.is_some() {
        problems.push("a turn never ended".to_owned());
    }
    // A run that stopped for approval leaves open the calls of the agents
    // that wait (the first call of each interruption's path).
    let waiting: Vec<&Value> = events
        .last()
        .and_then(|end| end.pointer("/result/interruptions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|interruption| interruption.pointer("/path/0"))
        .collect();
    calls.retain(|call| !waiting.contains(call));
    if !calls.is_empty() {
        problems.push(format!("calls never ended: {calls:?}"));
    }
    problems
}

/// What ties a run's parts together: the result `run_end` carries is the run's
/// result, and every hook consulted saw the run's id.
pub(crate) fn check_consistency(result: &Value, events: &[Value], step: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(end) = events.last().filter(|event| event_type(event) == "run_end") {
        match end.get("result") {
            Some(carried) if !equal(carried, result) => {
                problems.push(format!("run_end carries another result than the run's: {carried}"))
            }
            Some(_) => {}
            None => problems.push("run_end carries no result".to_owned()),
        }
    }
    let run_id = events.iter().find_map(|event| event.get("run_id"));
    let hook_calls = step.get("hook_calls").and_then(Value::as_array).into_iter().flatten();
    for call in hook_calls {
        let seen = call.pointer("/payload/run_id");
        if seen.is_none() || run_id.is_some_and(|id| Some(id) != seen) {
            problems.push(format!("a hook payload names run {}, not the run's", seen.unwrap_or(&Value::Null)));
        }
    }
    problems
}

/// The text parts of a message's content, joined.
fn text_of(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    }
}

/// Checks each field of `expect` (tests/conformance/README.md) against a run's
/// `result`, `events` and the rest of its observed `step`.
pub(crate) fn check_expectations(expect: &Value, result: &Value, events: &[Value], step: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let status = &result["status"];
    if !equal(&expect["status"], status) {
        problems.push(format!("status {status}, expected {}", expect["status"]));
    }
    if let Some(code) = expect.get("error_code") {
        let got = result.pointer("/error/code").unwrap_or(&Value::Null);
        if !equal(code, got) {
            problems.push(format!("error code {got}, expected {code}"));
        }
    }
    if let Some(types) = expect.get("events").and_then(Value::as_array) {
        let got: Vec<&str> = events.iter().map(event_type).collect();
        let want: Vec<&str> = types.iter().map(|t| t.as_str().unwrap_or("?")).collect();
        if got != want {
            problems.push(format!("events {got:?}, expected {want:?}"));
        }
    }
    for (kind, want) in expect.get("event_counts").and_then(Value::as_object).into_iter().flatten() {
        let got = count(events, kind);
        if !equal(want, &got.into()) {
            problems.push(format!("{got} {kind} events, expected {want}"));
        }
    }
    let messages = result.get("messages").unwrap_or(&Value::Null);
    if let Some(transcript) = expect.get("transcript") {
        if !equal(transcript, messages) {
            problems.push(format!("the transcript differs; got {messages}"));
        }
    }
    if let Some(results) = expect.get("results").and_then(Value::as_array) {
        problems.extend(check_results(results, messages));
    }
    let runs = nested_runs(events);
    let nested_run = |call_id: &str| runs.iter().find(|(id, _)| id == call_id).map_or(&[][..], |(_, run)| &run[..]);
    for (call_id, types) in expect.get("nested_events").and_then(Value::as_object).into_iter().flatten() {
        let got: Vec<&str> = nested_run(call_id).iter().map(event_type).collect();
        let want: Vec<&str> = types.as_array().into_iter().flatten().map(|t| t.as_str().unwrap_or("?")).collect();
        if got != want {
            problems.push(format!("the agent of call {call_id}: events {got:?}, expected {want:?}"));
        }
    }
    for (call_id, want) in expect.get("nested_event_counts").and_then(Value::as_object).into_iter().flatten() {
        let nested = nested_run(call_id);
        for (kind, want) in want.as_object().into_iter().flatten() {
            let got = count(nested, kind);
            if !equal(want, &got.into()) {
                problems.push(format!("{got} {kind} events in the agent of call {call_id}, expected {want}"));
            }
        }
    }
    for field in ["interruptions", "calls", "usage", "rounds", "output", "agent"] {
        if let Some(want) = expect.get(field) {
            let got = result.get(field).unwrap_or(&Value::Null);
            if !equal(want, got) {
                problems.push(format!("{field} differs; got {got}"));
            }
        }
    }
    if let Some(want) = expect.get("hook_calls") {
        let got = step.get("hook_calls").unwrap_or(&Value::Null);
        if !contains(want, got) {
            problems.push(format!("the hook calls differ; got {got}"));
        }
    }
    if let Some(want) = expect.get("cancel_handlers") {
        let got = step.get("cancel_handlers").unwrap_or(&Value::Null);
        if !equal(want, got) {
            problems.push(format!("{got} cancel handlers ran, expected {want}"));
        }
    }
    problems.extend(crate::spans::check_spans(expect, step));
    if let Some(want) = expect.get("unused_recordings") {
        let got = step.get("unused_recordings").unwrap_or(&Value::Null);
        if !equal(want, got) {
            problems.push(format!("the cassette's unused exchanges differ; got {got}"));
        }
    }
    problems
}

/// The transcript's tool results, in order: each with the expected call id and
/// error flag, its text containing `text_contains`.
fn check_results(want: &[Value], messages: &Value) -> Vec<String> {
    let results: Vec<&Value> = messages
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message.get("role").and_then(Value::as_str) == Some("tool"))
        .collect();
    let mut problems = Vec::new();
    if results.len() != want.len() {
        problems.push(format!("{} tool results, expected {}", results.len(), want.len()));
    }
    for (index, (want, got)) in want.iter().zip(&results).enumerate() {
        let text = text_of(got);
        for field in ["tool_call_id", "is_error"] {
            let (want, got) = (want.get(field).unwrap_or(&Value::Null), got.get(field).unwrap_or(&Value::Null));
            if !equal(want, got) {
                problems.push(format!("result {index}: {field} {got}, expected {want} (text: {text})"));
            }
        }
        if let Some(needle) = want.get("text_contains").and_then(Value::as_str) {
            if !text.contains(needle) {
                problems.push(format!("result {index}: the text \"{text}\" lacks \"{needle}\""));
            }
        }
    }
    problems
}
