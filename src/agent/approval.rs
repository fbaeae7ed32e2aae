//! Human approval: which calls of a batch may run, which are rejected, and which
//! stop the run until the host decides (DESIGN section 9).
//!
//! A call of a tool with `needs_approval` (or that a `tool_call` hook interrupted)
//! runs only when a decision covers it: the host's decision for that call id
//! (given when resuming), a hook's approval, or a standing decision for its tool
//! (a decision given with `always`). When a valid call is covered by none, no call
//! of its batch runs and the run is interrupted.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::validation::{HookApproval, ValidCall};
use crate::message::ToolCall;

/// The host's answer for one interrupted call, as run input gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Run the call (true) or answer it with an error result (false).
    pub approve: bool,
    /// The error result's text for a rejected call; absent or blank: a default
    /// saying the user rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Let the decision stand for every later call of the same tool in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always: bool,
}

/// A call the run stopped for: it needs a decision before it can run. The
/// call is the run's own, or one of an agent the run called as a tool (then
/// `path` leads to it).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Interruption {
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The call's arguments, parsed (they passed validation).
    pub arguments: Value,
    /// What the decision for the call is keyed by in run input `decisions`:
    /// the ids of `path` and the call's, each with `%` written `%25` and `/`
    /// written `%2F`, joined by `/` (for a call of the run's own whose id has
    /// neither, its id).
    pub key: String,
    /// The ids of the agent calls, from the run's own batch inward, inside
    /// whose nested runs the call waits; empty for a call of the run's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<String>,
    /// The agent (by the name its caller knows it by) whose call waits; null
    /// for a call of the run's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Interruption {
    /// A call of the run's own that waits.
    fn own(call: &ToolCall, arguments: Value) -> Self {
        Interruption {
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments,
            key: escape(&call.id),
            path: Vec::new(),
            agent: None,
        }
    }

    /// This interruption of the run nested by the call `call_id` of the agent
    /// `agent`, as the calling run reports it.
    pub(crate) fn nested_in(mut self, call_id: &str, agent: &str) -> Self {
        self.key = format!("{}/{}", escape(call_id), self.key);
        self.path.insert(0, call_id.to_owned());
        self.agent.get_or_insert_with(|| agent.to_owned());
        self
    }
}

/// A call id as a piece of a decision key: `%` and `/` escaped.
fn escape(id: &str) -> String {
    id.replace('%', "%25").replace('/', "%2F")
}

/// A decision key's first piece, unescaped, and the key of the rest inside
/// the run of that agent call (none for a call of the run's own).
pub(crate) fn split_key(key: &str) -> (String, Option<&str>) {
    let (first, rest) = match key.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (key, None),
    };
    (unescape(first), rest)
}

/// Whether every piece of `key` is escaped as [`escape`] writes it, so that
/// one call has one key.
pub(crate) fn is_canonical(key: &str) -> bool {
    key.split('/').all(|piece| escape(&unescape(piece)) == piece)
}

/// A piece of a decision key as the call id it is.
fn unescape(piece: &str) -> String {
    let mut id = String::with_capacity(piece.len());
    let mut rest = piece;
    while let Some(at) = rest.find('%') {
        id.push_str(&rest[..at]);
        let escaped = &rest[at..];
        let (char, skip) = match escaped.get(..3) {
            Some("%25") => ('%', 3),
            Some("%2F") => ('/', 3),
            _ => ('%', 1),
        };
        id.push(char);
        rest = &escaped[skip..];
    }
    id.push_str(rest);
    id
}

/// The decisions a run holds (kept in its [progress](super::progress::RunProgress)):
/// the ones for the calls of the batch it runs first, given when resuming, and
/// the standing ones per tool.
#[derive(Clone, Copy)]
pub(crate) struct Approvals<'a> {
    /// Decisions by call id.
    pub(crate) decided: &'a BTreeMap<String, Decision>,
    /// Decisions given with `always`, by tool name.
    pub(crate) standing: &'a BTreeMap<String, Decision>,
    /// Calls that go on from the run that stopped (they ran, or their agent
    /// waits): they were let run then.
    pub(crate) continued: &'a BTreeSet<String>,
}

/// What approval makes of one valid call.
pub(crate) enum Verdict {
    /// The call runs.
    Run,
    /// The call is answered with this error text and does not run.
    Reject(String),
    /// Nothing covers the call: the batch waits for the host.
    Ask,
}

/// Adds a resumed run's new decisions to the ones it had: those given with
/// `always` stand for their tool from now on. `tool_of` names each decided
/// call's tool. Two `always` decisions that differ for one tool are refused,
/// naming both calls.
pub(crate) fn adopt(
    standing: &mut BTreeMap<String, Decision>,
    decided: &mut BTreeMap<String, Decision>,
    decisions: HashMap<String, Decision>,
    tool_of: impl Fn(&str) -> String,
) -> Result<(), String> {
    let mut decisions: Vec<(String, Decision)> = decisions.into_iter().collect();
    decisions.sort_by(|a, b| a.0.cmp(&b.0));
    let mut standing_from: BTreeMap<String, &str> = BTreeMap::new();
    for (call_id, decision) in decisions.iter().filter(|(_, d)| d.always) {
        let tool = tool_of(call_id);
        if let Some(earlier) = standing_from.get(&tool) {
            if standing.get(&tool) != Some(decision) {
                return Err(format!(
                    "the calls \"{earlier}\" and \"{call_id}\" give different decisions with always for the tool \"{tool}\""
                ));
            }
        }
        standing_from.insert(tool.clone(), call_id);
        standing.insert(tool, decision.clone());
    }
    decided.extend(decisions);
    Ok(())
}

impl Approvals<'_> {
    /// The verdict for a valid call.
    pub(crate) fn verdict(&self, call: &ToolCall, valid: &ValidCall<'_>) -> Verdict {
        if self.continued.contains(&call.id) {
            return Verdict::Run;
        }
        let decision = match self.decided.get(&call.id) {
            Some(decision) => decision,
            None => {
                let needs_approval = match valid.hook_approval {
                    HookApproval::Approved => return Verdict::Run,
                    HookApproval::Interrupt => true,
                    HookApproval::Unsaid => valid.tool.options().needs_approval,
                };
                if !needs_approval {
                    return Verdict::Run;
                }
                match self.standing.get(&call.name) {
                    Some(decision) => decision,
                    None => return Verdict::Ask,
                }
            }
        };
        if decision.approve {
            return Verdict::Run;
        }
        Verdict::Reject(match decision.message.as_deref().filter(|m| !m.trim().is_empty()) {
            Some(message) => message.to_owned(),
            None => format!("The call to \"{}\" was rejected by the user, so it was not run.", call.name),
        })
    }
}

/// Applies approval to a checked batch. When a valid call needs a decision that
/// nothing gives, returns the batch's interruptions (its valid calls that nothing
/// covers, in call order) and changes nothing: no call of the batch may run.
/// Otherwise turns every rejected call into its error text and returns none.
pub(crate) fn gate(
    approvals: Approvals<'_>,
    calls: &[ToolCall],
    checked: &mut [Result<ValidCall<'_>, String>],
) -> Vec<Interruption> {
    let verdicts: Vec<Option<Verdict>> = calls
        .iter()
        .zip(checked.iter())
        .map(|(call, check)| check.as_ref().ok().map(|valid| approvals.verdict(call, valid)))
        .collect();
    let asked: Vec<Interruption> = calls
        .iter()
        .zip(checked.iter())
        .zip(&verdicts)
        .filter_map(|((call, check), verdict)| match (check, verdict) {
            (Ok(valid), Some(Verdict::Ask)) => Some(Interruption::own(call, valid.arguments.clone())),
            _ => None,
        })
        .collect();
    if asked.is_empty() {
        for (check, verdict) in checked.iter_mut().zip(verdicts) {
            if let Some(Verdict::Reject(text)) = verdict {
                *check = Err(text);
            }
        }
    }
    asked
}
