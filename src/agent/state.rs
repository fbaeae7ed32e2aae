//! The portable state of an interrupted run, and resuming from it.
//!
//! The state is plain JSON with a version, so a host can store it anywhere and
//! resume in another process with an agent built from the same configuration and
//! tools: the run's [progress](RunProgress), field for field, with the state's
//! `version`, the calls that wait for a decision (`awaiting`) or for the host
//! to run them (`returned`), and what the waiting batch carries over when an
//! agent it called stopped for approval ([`CarriedOver`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::approval::{self, split_key, Decision, Interruption};
use super::built::AgentInner;
use super::host_calls::CallOutcome;
use super::nesting::MAX_AGENT_DEPTH;
use super::progress::RunProgress;
use super::transcript;
use crate::error::{Error, Result};
use crate::message::{AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage};

/// The version of the state this ferrule writes and reads.
const STATE_VERSION: u64 = 1;

/// What an interrupted run needs to go on (`"state"` in its result).
#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    /// The run's progress; its transcript ends with the assistant message whose
    /// calls wait.
    progress: RunProgress,
    /// The keys of the calls that wait for a decision, in call order (those
    /// of an agent the run called after that call's).
    awaiting: Vec<String>,
    /// The ids of the calls the run returned for the host to run, in call
    /// order (run input `"calls": "return"`); none while calls wait for a
    /// decision.
    returned: Vec<String>,
    /// What the waiting batch carries over from the run that stopped.
    carried: CarriedOver,
}

/// What the batch a run stopped in carries over to the run that resumes it,
/// when an agent it called stopped for approval: the results of its calls
/// that had run, the states of its agents that wait, and (once the host
/// decided) the decisions for the calls those agents wait on. Each is taken
/// by its call when the batch runs again.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct CarriedOver {
    /// Results of calls that ran, by call id.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) ran: BTreeMap<String, ToolResultMessage>,
    /// The calls of `ran` whose result asked the run to end (`terminate`),
    /// which counts when the batch ends.
    #[serde(rename = "ran_terminating", skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) terminating: BTreeSet<String>,
    /// States of the agents that wait, by the id of the call that runs them.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) nested: BTreeMap<String, RunState>,
    /// Decisions for the calls those agents wait on, by the agent call's id,
    /// then by the calls' keys inside its run.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) nested_decided: BTreeMap<String, BTreeMap<String, Decision>>,
    /// How the calls the run returned ended when the host ran them, by call
    /// id: given when resuming, and taken when the batch runs again (never in
    /// a state).
    #[serde(skip)]
    pub(crate) results: BTreeMap<String, CallOutcome>,
}

impl CarriedOver {
    /// The ids of the calls that go on from the run that stopped: they were
    /// let run then, so they are not asked about again.
    pub(crate) fn calls(&self) -> BTreeSet<String> {
        self.ran.keys().chain(self.nested.keys()).chain(self.results.keys()).cloned().collect()
    }

    /// The result the call `id` ran to before the run stopped, and whether
    /// it asked the run to end: taken, once.
    pub(crate) fn take_ran(&mut self, id: &str) -> Option<(ToolResultMessage, bool)> {
        let result = self.ran.remove(id)?;
        Some((result, self.terminating.remove(id)))
    }
}

/// The state as it is written.
#[derive(Serialize)]
struct Written<'a> {
    version: u64,
    #[serde(flatten)]
    progress: &'a RunProgress,
    awaiting: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    returned: &'a [String],
    #[serde(flatten)]
    carried: &'a CarriedOver,
}

impl Serialize for RunState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let RunState { progress, awaiting, returned, carried } = self;
        Written { version: STATE_VERSION, progress, awaiting, returned, carried }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunState {
    /// Reads a state as [`RunState::from_value`] does, unchecked (a resume checks
    /// it again).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RunState::read(Value::deserialize(d)?).map_err(|e| serde::de::Error::custom(e.message))
    }
}

impl JsonSchema for RunState {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunState".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = RunProgress::json_schema(generator);
        let properties = schema.ensure_object().entry("properties").or_insert_with(|| Map::new().into());
        if let Some(properties) = properties.as_object_mut() {
            properties.insert(
                "version".to_owned(),
                serde_json::json!({"type": "integer", "const": STATE_VERSION, "description": "The state format's version."}),
            );
            properties.insert(
                "awaiting".to_owned(),
                serde_json::json!({"type": "array", "items": {"type": "string"},
                                   "description": "The keys of the calls that wait for a decision (an interruption's `key`), in call order."}),
            );
            properties.insert(
                "returned".to_owned(),
                serde_json::json!({"type": "array", "items": {"type": "string"},
                                   "description": "The ids of the calls the run returned for the host to run (run input `\"calls\": \"return\"`), in call order."}),
            );
            let result = generator.subschema_for::<ToolResultMessage>();
            let decision = generator.subschema_for::<Decision>();
            properties.insert(
                "ran".to_owned(),
                serde_json::json!({"type": "object", "additionalProperties": result,
                                   "description": "Results of calls of the waiting batch that ran before an agent it called stopped for approval, by call id."}),
            );
            properties.insert(
                "ran_terminating".to_owned(),
                serde_json::json!({"type": "array", "items": {"type": "string"},
                                   "description": "The calls of `ran` whose result asked the run to end (`terminate`)."}),
            );
            properties.insert(
                "nested".to_owned(),
                serde_json::json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/RunState"},
                                   "description": "The states of the agents the waiting batch called that stopped for approval, by call id."}),
            );
            properties.insert(
                "nested_decided".to_owned(),
                serde_json::json!({"type": "object", "additionalProperties": {"type": "object", "additionalProperties": decision},
                                   "description": "Decisions given for calls those agents wait on, by the agent call's id, then by key."}),
            );
        }
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.extend(["version".into(), "awaiting".into()]);
        }
        schema.insert(
            "description".to_owned(),
            "What an interrupted run needs to go on: store it as it is and give it back as run input `resume`.".into(),
        );
        schema
    }
}

impl RunState {
    /// The state of a run that stopped for approval: its progress (the transcript
    /// ending with the waiting message), the calls it waits on, and the states
    /// of the agents it called that wait.
    pub(crate) fn capture(progress: &RunProgress, interruptions: &[Interruption], carried: CarriedOver) -> Self {
        let awaiting = interruptions.iter().map(|i| i.key.clone()).collect();
        RunState { progress: progress.clone(), awaiting, returned: Vec::new(), carried }
    }

    /// The state of a run that returned `calls` for the host to run: its
    /// progress (the transcript ending with their message) and the results
    /// of the calls of that message that ran.
    pub(crate) fn returning(progress: &RunProgress, calls: &[ToolCall], carried: CarriedOver) -> Self {
        let returned = calls.iter().map(|call| call.id.clone()).collect();
        RunState { progress: progress.clone(), awaiting: Vec::new(), returned, carried }
    }

    /// The handoffs the run had made, by name, in order.
    pub(crate) fn handed_to(&self) -> &[String] {
        &self.progress.handed_to
    }

    /// Reads a state from run input: its version first (so a state from a later
    /// ferrule is refused as such), then every field, then its consistency.
    pub(crate) fn from_value(value: Value) -> Result<Self> {
        let state = RunState::read(value)?;
        state.check()?;
        Ok(state)
    }

    /// Reads a state's fields, checking its version first.
    fn read(value: Value) -> Result<Self> {
        RunState::read_nested(value, 0)
    }

    /// Reads a state `depth` agent calls deep in another.
    fn read_nested(value: Value, depth: u32) -> Result<Self> {
        let Value::Object(mut fields) = value else {
            return Err(refuse("the state must be the object an interrupted run's result gave"));
        };
        let version = match fields.remove("version") {
            Some(version) => version
                .as_u64()
                .ok_or_else(|| refuse(format!("the state's version must be a whole number, not {version}")))?,
            None => return Err(refuse("the state has no \"version\"")),
        };
        if version != STATE_VERSION {
            return Err(refuse(format!(
                "state version {version} is not supported (this ferrule reads version {STATE_VERSION})"
            )));
        }
        let awaiting = fields.remove("awaiting").ok_or_else(|| refuse("state: missing field `awaiting`"))?;
        let awaiting = serde_json::from_value(awaiting).map_err(|e| refuse(format!("state: awaiting: {e}")))?;
        let returned = take_field(&mut fields, "returned")?;
        let ran = take_field(&mut fields, "ran")?;
        let terminating = take_field(&mut fields, "ran_terminating")?;
        let nested_decided = take_field(&mut fields, "nested_decided")?;
        let mut nested = BTreeMap::new();
        match fields.remove("nested") {
            None => {}
            Some(Value::Object(states)) if depth < MAX_AGENT_DEPTH => {
                for (call_id, state) in states {
                    nested.insert(call_id, RunState::read_nested(state, depth + 1)?);
                }
            }
            Some(Value::Object(_)) => {
                return Err(refuse(format!("state: agents nest more than {MAX_AGENT_DEPTH} deep in it")))
            }
            Some(other) => return Err(refuse(format!("state: nested must be an object, not {other}"))),
        }
        let progress = serde_json::from_value(Value::Object(fields)).map_err(|e| refuse(format!("state: {e}")))?;
        let carried = CarriedOver { ran, terminating, nested, nested_decided, results: BTreeMap::new() };
        Ok(RunState { progress, awaiting, returned, carried })
    }

    fn check(&self) -> Result<()> {
        let (progress, carried) = (&self.progress, &self.carried);
        let Some(Message::Assistant(pending)) = progress.messages.last() else { return Err(no_waiting_message()) };
        match (self.awaiting.is_empty(), self.returned.is_empty()) {
            (true, true) => return Err(refuse("state: no call waits for a decision or a result")),
            (false, false) => return Err(refuse("state: calls wait for decisions and for results at once")),
            _ => {}
        }
        if !progress.execute_only && !matches!(pending.stop_reason, StopReason::ToolUse | StopReason::EndTurn) {
            return Err(refuse("state: the waiting message did not end normally, so its calls never run"));
        }
        let call_named = |id: &str| pending.tool_calls.iter().find(|call| call.id == id);
        let in_message = |id: &String| call_named(id).is_some();
        for (i, key) in self.awaiting.iter().enumerate() {
            if self.awaiting[..i].contains(key) {
                return Err(refuse(format!("state: the call \"{key}\" waits twice")));
            }
            let (id, inside) = split_key(key);
            if !in_message(&id) {
                return Err(refuse(format!("state: the waiting call \"{key}\" is not in the last assistant message")));
            }
            let settled = match inside {
                None => progress.decided.contains_key(&id) || carried.nested.contains_key(&id),
                Some(_) => !carried.nested.contains_key(&id),
            };
            if settled || carried.ran.contains_key(&id) || !approval::is_canonical(key) {
                return Err(refuse(format!("state: the call \"{key}\" does not wait as the state says")));
            }
        }
        for (i, id) in self.returned.iter().enumerate() {
            let twice = self.returned[..i].contains(id);
            if twice || !in_message(id) || carried.ran.contains_key(id) || carried.nested.contains_key(id) {
                return Err(refuse(format!("state: the returned call \"{id}\" does not wait as the state says")));
            }
        }
        for (id, state) in &carried.nested {
            let under: Vec<&str> = self
                .awaiting
                .iter()
                .filter_map(|key| match split_key(key) {
                    (first, Some(rest)) if &first == id => Some(rest),
                    _ => None,
                })
                .collect();
            // Its calls wait here, or were decided when the run resumed before.
            let decided = carried.nested_decided.get(id);
            let covered: BTreeSet<&str> =
                under.iter().copied().chain(decided.into_iter().flat_map(|d| d.keys().map(String::as_str))).collect();
            let overlap = under.iter().any(|key| decided.is_some_and(|d| d.contains_key(*key)));
            if overlap || covered != state.awaiting.iter().map(String::as_str).collect::<BTreeSet<_>>() {
                return Err(refuse(format!(
                    "state: the agent of call \"{id}\" waits on other calls than the state says"
                )));
            }
            state.check().map_err(|e| Error::invalid_arg(format!("{} (in the agent of call \"{id}\")", e.message)))?;
        }
        for (id, result) in &carried.ran {
            let agrees = call_named(id).is_some_and(|call| call.name == result.name) && &result.tool_call_id == id;
            if !agrees || carried.nested.contains_key(id) {
                return Err(refuse(format!("state: the result of call \"{id}\" does not fit the waiting message")));
            }
        }
        if let Some(id) =
            carried.terminating.iter().find(|id| carried.ran.get(*id).is_none_or(|result| result.is_error))
        {
            return Err(refuse(format!("state: call \"{id}\" asks to end the run with no result of its own")));
        }
        if let Some(id) = carried.nested_decided.keys().find(|id| !carried.nested.contains_key(*id)) {
            return Err(refuse(format!("state: decisions are kept for call \"{id}\", which no agent waits in")));
        }
        if let Some(id) = progress.decided.keys().find(|id| !in_message(id)) {
            return Err(refuse(format!("state: the decided call \"{id}\" is not in the last assistant message")));
        }
        if progress.input_messages >= progress.messages.len() {
            return Err(refuse("state: input_messages must count messages before the waiting one"));
        }
        let waiting = progress.messages.len() - 1;
        transcript::check_messages(&progress.messages[..waiting])
            .map_err(|e| refuse(format!("state: {}", e.message)))?;
        if let Some(i) = progress.injections.iter().position(|m| !matches!(m, Message::User(_) | Message::System(_))) {
            return Err(refuse(format!("state: injections[{i}] is not a user or system message")));
        }
        transcript::check_parts(&progress.messages[waiting])
            .map_err(|e| refuse(format!("state: messages[{waiting}]: {e}")))
    }

    /// Resumes with the host's `decisions` (by interruption key) and `results`
    /// (by returned call id) on `agent`: every waiting call needs one, every
    /// decision and result must be for a call that waits for it, and the agent
    /// must have every tool the state names. The progress to go on from, the
    /// message whose batch runs first, and what its calls go on from (the
    /// states of agents, the host's results; decisions in the progress).
    pub(crate) fn resume(
        self,
        decisions: HashMap<String, Decision>,
        results: HashMap<String, CallOutcome>,
        agent: &AgentInner,
    ) -> Result<(RunProgress, AssistantMessage, CarriedOver)> {
        // Checked again: a state deserialized directly (not through run input)
        // was never checked.
        self.check()?;
        let RunState { mut progress, awaiting, returned, mut carried } = self;
        let Some(Message::Assistant(pending)) = progress.messages.pop() else { return Err(no_waiting_message()) };
        let tool_of = |id: &str| pending.tool_calls.iter().find(|c| c.id == id).map(|c| c.name.clone());
        for id in &returned {
            let tool = tool_of(id).unwrap_or_default();
            if !agent.may_offer(&tool) {
                return Err(refuse(format!(
                    "the agent has no tool \"{tool}\", which call \"{id}\" was returned to run; resume with an agent built from the same configuration and tools"
                )));
            }
            if !results.contains_key(id) {
                return Err(refuse(format!(
                    "no result for call \"{id}\" ({tool}); every returned call needs one (returned: {})",
                    listed(&returned)
                )));
            }
        }
        if let Some(id) = results.keys().find(|id| !returned.contains(id)) {
            return Err(refuse(format!(
                "\"results\" has call \"{id}\", which the run did not return to run (returned: {})",
                listed(&returned)
            )));
        }
        carried.results = results.into_iter().collect();
        for id in &awaiting {
            let tool = tool_of(&split_key(id).0).unwrap_or_default();
            if !agent.may_offer(&tool) {
                return Err(refuse(format!(
                    "the agent has no tool \"{tool}\", which call \"{id}\" waits to run; resume with an agent built from the same configuration and tools"
                )));
            }
            if !decisions.contains_key(id) {
                return Err(refuse(format!(
                    "no decision for call \"{id}\" ({tool}); every interrupted call needs one (waiting: {})",
                    listed(&awaiting)
                )));
            }
        }
        if let Some(id) = decisions.keys().find(|id| !awaiting.contains(id)) {
            let already = if progress.decided.contains_key(id) { ", it was decided already" } else { "" };
            return Err(refuse(format!(
                "there is no interrupted call \"{id}\"{already} (waiting: {})",
                listed(&awaiting)
            )));
        }
        let named = progress
            .standing
            .keys()
            .chain(&progress.disclosed)
            .chain(progress.tools.iter().flatten())
            .chain(progress.turn_tools.iter().flatten());
        if let Some(tool) = named.into_iter().find(|t| !agent.may_offer(t)) {
            return Err(refuse(format!(
                "the agent has no tool \"{tool}\", which the state names; resume with an agent built from the same configuration and tools"
            )));
        }
        let mut own = HashMap::new();
        for (key, decision) in decisions {
            match split_key(&key) {
                (id, None) => {
                    own.insert(id, decision);
                }
                (id, Some(inside)) => {
                    carried.nested_decided.entry(id).or_default().insert(inside.to_owned(), decision);
                }
            }
        }
        approval::adopt(&mut progress.standing, &mut progress.decided, own, |id| tool_of(id).unwrap_or_default())
            .map_err(refuse)?;
        Ok((progress, pending, carried))
    }
}

/// Ids or keys as an error message lists them.
fn listed(ids: &[String]) -> String {
    match ids.is_empty() {
        true => "none".to_owned(),
        false => ids.join(", "),
    }
}

/// The field `name` of a state, taken out of `fields` (empty when absent).
fn take_field<T: serde::de::DeserializeOwned + Default>(fields: &mut Map<String, Value>, name: &str) -> Result<T> {
    match fields.remove(name) {
        None => Ok(T::default()),
        Some(value) => serde_json::from_value(value).map_err(|e| refuse(format!("state: {name}: {e}"))),
    }
}

fn no_waiting_message() -> Error {
    refuse("state: the transcript must end with the assistant message whose calls wait")
}

fn refuse(what: impl std::fmt::Display) -> Error {
    Error::invalid_arg(format!("run input: resume: {what}"))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::message::Usage;
    use crate::test_transcripts::{assistant, numbered, transcript};

    /// What happened to each call of the waiting message.
    #[derive(Debug, Clone, Copy)]
    enum Fate {
        Waits,
        Decided(bool),
        Ran,
    }

    /// A state as a run writes it: any transcript, then the waiting message,
    /// whose calls wait, were decided, or ran.
    fn state() -> impl Strategy<Value = RunState> {
        let fate =
            prop_oneof![2 => Just(Fate::Waits), 1 => any::<bool>().prop_map(Fate::Decided), 1 => Just(Fate::Ran)];
        (transcript(true), assistant(4), proptest::collection::vec(fate, 4), any::<(u32, u64, u64, bool)>())
            .prop_filter("a waiting message has calls", |(_, waiting, _, _)| !waiting.tool_calls.is_empty())
            .prop_map(|(mut messages, waiting, fates, (rounds, input_tokens, output_tokens, execute_only))| {
                messages.push(Message::Assistant(waiting));
                let messages = numbered(messages);
                let Some(Message::Assistant(waiting)) = messages.last() else { unreachable!() };
                let calls: Vec<(usize, &crate::message::ToolCall)> = waiting.tool_calls.iter().enumerate().collect();
                let fate_of = |i: usize| if i == 0 { Fate::Waits } else { fates[i] };
                let mut awaiting = Vec::new();
                let mut decided = BTreeMap::new();
                let mut ran = BTreeMap::new();
                for (i, call) in calls {
                    match fate_of(i) {
                        Fate::Waits => awaiting.push(call.id.clone()),
                        Fate::Decided(approve) => {
                            decided.insert(call.id.clone(), Decision { approve, message: None, always: false });
                        }
                        Fate::Ran => {
                            let result = ToolResultMessage {
                                tool_call_id: call.id.clone(),
                                name: call.name.clone(),
                                content: vec![crate::message::Part::text("ran")],
                                is_error: false,
                            };
                            ran.insert(call.id.clone(), result);
                        }
                    }
                }
                let progress = RunProgress {
                    input_messages: 1,
                    rounds,
                    usage: Usage { input_tokens, output_tokens, ..Usage::default() },
                    decided,
                    execute_only,
                    messages,
                    ..RunProgress::default()
                };
                let carried = CarriedOver { ran, ..CarriedOver::default() };
                RunState { progress, awaiting, returned: Vec::new(), carried }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// A state a run could write passes the checks, and reads back from
        /// its JSON text as itself, written the same way again.
        #[test]
        fn a_state_reads_back_from_its_json_as_itself(state in state()) {
            state.check().map_err(|e| TestCaseError::fail(e.message))?;
            let text = serde_json::to_string(&state).unwrap();
            let back = RunState::from_value(crate::json::parse_unique(&text).unwrap())
                .map_err(|e| TestCaseError::fail(e.message))?;
            prop_assert_eq!(&back, &state);
            prop_assert_eq!(serde_json::to_string(&back).unwrap(), text);
        }
    }
}
