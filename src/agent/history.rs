//! The history budget (`history.max_input_tokens`): before a request whose
//! estimated input exceeds it, the oldest messages are left out of the request
//! (the transcript keeps them).
//!
//! The estimate is the input tokens the provider reported for the last request
//! plus one token per 4 bytes of transcript JSON added since, or one per 4 bytes
//! of everything when no usage was reported. Messages leave in units, oldest
//! first: an assistant message with its tool results, or a user message. Always
//! kept: system messages, the first user message, the latest user message, the
//! live tool exchange (the last assistant message when results follow it) and
//! injected messages the model has not answered yet.

use schemars::JsonSchema;
use serde::Deserialize;

use super::transcript_json::TranscriptJson;
use crate::message::{Message, Origin};

/// The `history` configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryConfig {
    /// The estimated input tokens a request may reach before old messages are
    /// left out of it.
    pub max_input_tokens: u64,
}

/// A run's view of its history budget.
pub(crate) struct HistoryBudget {
    max_input_tokens: u64,
    /// Input tokens the provider reported for the last request, and the bytes of
    /// the messages that request sent.
    last_report: Option<(u64, usize)>,
}

impl HistoryBudget {
    pub(crate) fn new(config: HistoryConfig) -> Self {
        HistoryBudget { max_input_tokens: config.max_input_tokens, last_report: None }
    }

    /// The history was replaced: the last report no longer describes what a
    /// request would send.
    pub(crate) fn forget(&mut self) {
        self.last_report = None;
    }

    /// The indices of the messages the next request sends, or `None` for all of
    /// them; `json` is the messages' JSON, synced. `fixed_bytes` is what every
    /// request sends besides the messages (the system prompt and the tools),
    /// counted while no usage was reported.
    pub(crate) fn select(&self, messages: &[Message], json: &TranscriptJson, fixed_bytes: usize) -> Option<Vec<usize>> {
        let all_bytes: usize = json.sizes().sum();
        // Anchored on the last report: bytes beyond what it counted add, and
        // bytes left out take away, a token per 4 bytes.
        let estimate = |bytes: usize| match self.last_report {
            Some((tokens, sent)) if bytes >= sent => tokens.saturating_add((bytes - sent) as u64 / 4),
            Some((tokens, sent)) => tokens.saturating_sub((sent - bytes) as u64 / 4),
            None => ((bytes + fixed_bytes) / 4) as u64,
        };
        if estimate(all_bytes) <= self.max_input_tokens {
            return None;
        }
        let mut bytes = all_bytes;
        let mut dropped = vec![false; messages.len()];
        for unit in droppable_units(messages) {
            if estimate(bytes) <= self.max_input_tokens {
                break;
            }
            for index in unit {
                dropped[index] = true;
                bytes -= json.size(index);
            }
        }
        if !dropped.contains(&true) {
            // Nothing may go: the request is sent whole (and stays cheap to encode).
            return None;
        }
        Some((0..messages.len()).filter(|&i| !dropped[i]).collect())
    }

    /// The provider reported `input_tokens` for a request that sent the messages
    /// `sent` (indices into the transcript, or all of it, as `json` has it).
    pub(crate) fn reported(&mut self, input_tokens: u64, json: &TranscriptJson, sent: Option<&[usize]>) {
        if input_tokens == 0 {
            return;
        }
        let bytes = match sent {
            Some(indices) => indices.iter().map(|&i| json.size(i)).sum(),
            None => json.sizes().sum(),
        };
        self.last_report = Some((input_tokens, bytes));
    }
}

/// The units that may leave a request, oldest first: each an assistant message
/// with the tool results that follow it, or a user message, except those always
/// kept.
fn droppable_units(messages: &[Message]) -> Vec<Vec<usize>> {
    let is_user = |m: &Message| matches!(m, Message::User(_));
    let first_user = messages.iter().position(is_user);
    let latest_user = messages.iter().rposition(is_user);
    let last_assistant = messages.iter().rposition(|m| matches!(m, Message::Assistant(_)));
    let live_exchange = last_assistant.filter(|&i| matches!(messages.get(i + 1), Some(Message::Tool(_))));
    let unanswered_injection = |i: usize| {
        last_assistant.is_none_or(|a| i > a)
            && matches!(&messages[i], Message::User(m) if m.origin == Some(Origin::Injection))
    };
    let mut units = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        let end = match &messages[index] {
            Message::Assistant(_) => {
                let results = messages[index + 1..].iter().take_while(|m| matches!(m, Message::Tool(_))).count();
                index + 1 + results
            }
            _ => index + 1,
        };
        let keep = match &messages[index] {
            Message::System(_) => true,
            Message::User(_) => Some(index) == first_user || Some(index) == latest_user || unanswered_injection(index),
            Message::Assistant(_) => Some(index) == live_exchange,
            // A result without its assistant message (a replaced history): kept.
            Message::Tool(_) => true,
        };
        if !keep {
            units.push((index..end).collect());
        }
        index = end;
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_of(messages: &[Message]) -> TranscriptJson {
        let mut json = TranscriptJson::default();
        json.sync(messages);
        json
    }

    fn messages(value: serde_json::Value) -> Vec<Message> {
        serde_json::from_value(value).unwrap()
    }

    fn exchange(id: &str, text: &str) -> [serde_json::Value; 2] {
        [
            json!({"role": "assistant", "content": [], "tool_calls": [{"id": id, "name": "t", "arguments": "{}"}]}),
            json!({"role": "tool", "tool_call_id": id, "name": "t", "content": text}),
        ]
    }

    #[test]
    fn the_oldest_units_go_first_and_the_kept_ones_stay() {
        let big = "x".repeat(400);
        let [a1, r1] = exchange("c1", &big);
        let [a2, r2] = exchange("c2", &big);
        let [a3, r3] = exchange("c3", &big);
        let transcript = messages(json!([
            {"role": "user", "content": "first"}, a1, r1,
            {"role": "system", "content": "rule"},
            {"role": "user", "content": "middle"}, a2, r2,
            {"role": "user", "content": "latest"}, a3, r3
        ]));
        let budget = HistoryBudget::new(HistoryConfig { max_input_tokens: 250 });
        let kept = budget.select(&transcript, &json_of(&transcript), 0).expect("over budget");
        // c1's exchange and the middle user message go; c2's goes too if needed.
        assert_eq!(kept, [0, 3, 7, 8, 9]);
        let roomy = HistoryBudget::new(HistoryConfig { max_input_tokens: 100_000 });
        assert_eq!(roomy.select(&transcript, &json_of(&transcript), 0), None);
    }

    #[test]
    fn a_reported_count_anchors_the_estimate() {
        let transcript = messages(json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "x".repeat(4000)}]},
            {"role": "user", "content": "latest"}
        ]));
        let json = json_of(&transcript);
        let mut budget = HistoryBudget::new(HistoryConfig { max_input_tokens: 500 });
        assert!(budget.select(&transcript, &json, 0).is_some(), "1000 tokens by bytes");
        budget.reported(300, &json, None);
        assert_eq!(budget.select(&transcript, &json, 0), None, "the provider said 300");
    }

    #[test]
    fn a_report_over_the_budget_leaves_out_only_what_it_must() {
        let big = "x".repeat(400);
        let [a1, r1] = exchange("c1", &big);
        let [a2, r2] = exchange("c2", &big);
        let [a3, r3] = exchange("c3", &big);
        let transcript = messages(json!([{"role": "user", "content": "first"}, a1, r1, a2, r2, a3, r3]));
        let json = json_of(&transcript);
        let mut budget = HistoryBudget::new(HistoryConfig { max_input_tokens: 1000 });
        // The whole transcript was reported 5% over the budget: leaving out
        // the oldest exchange (over 100 tokens of bytes) brings it within.
        budget.reported(1050, &json, None);
        assert_eq!(budget.select(&transcript, &json, 0).expect("over budget"), [0, 3, 4, 5, 6]);
    }

    #[test]
    fn a_request_with_nothing_to_leave_out_goes_whole() {
        let transcript = messages(json!([{"role": "user", "content": "x".repeat(4000)}]));
        let budget = HistoryBudget::new(HistoryConfig { max_input_tokens: 10 });
        assert_eq!(budget.select(&transcript, &json_of(&transcript), 0), None);
    }

    #[test]
    fn unanswered_injections_and_lone_results_stay() {
        let transcript = messages(json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": "x".repeat(4000), "origin": "injection"},
            {"role": "user", "content": "y".repeat(4000), "origin": "injection"}
        ]));
        let budget = HistoryBudget::new(HistoryConfig { max_input_tokens: 10 });
        assert_eq!(budget.select(&transcript, &json_of(&transcript), 0), Some(vec![0, 2, 3]));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, ..Default::default() })]

        /// On any transcript, under any budget, with or without a report: the
        /// kept messages are in order; system messages, the first and latest
        /// user messages, the live exchange, unanswered injections and lone
        /// results always stay; an assistant message and its results stay or
        /// go together; what goes is the oldest of what may go.
        #[test]
        fn the_budget_keeps_what_it_must_and_leaves_out_the_oldest(
            transcript in crate::test_transcripts::transcript(true),
            max_input_tokens in 0u64..400,
            report in proptest::option::of(0u64..600),
        ) {
            let json = json_of(&transcript);
            let mut budget = HistoryBudget::new(HistoryConfig { max_input_tokens });
            if let Some(tokens) = report {
                budget.reported(tokens, &json, None);
            }
            let Some(kept) = budget.select(&transcript, &json, 16) else { return Ok(()) };
            assert!(kept.windows(2).all(|pair| pair[0] < pair[1]) && kept.iter().all(|&i| i < transcript.len()));
            let units = droppable_units(&transcript);
            let droppable: Vec<usize> = units.iter().flatten().copied().collect();
            for index in (0..transcript.len()).filter(|i| !droppable.contains(i)) {
                assert!(kept.contains(&index), "message {index} ({:?}) may not go: {kept:?}", transcript[index]);
            }
            let is_user = |m: &Message| matches!(m, Message::User(_));
            let pinned = [transcript.iter().position(is_user), transcript.iter().rposition(is_user)];
            for index in pinned.into_iter().flatten() {
                assert!(kept.contains(&index), "the first or latest user message {index} went: {kept:?}");
            }
            for (index, message) in transcript.iter().enumerate() {
                if matches!(message, Message::System(_)) {
                    assert!(kept.contains(&index), "system message {index} went");
                }
                if matches!(message, Message::Tool(_)) {
                    let owner = transcript[..index].iter().rposition(|m| !matches!(m, Message::Tool(_)));
                    let owner_kept = owner.is_none_or(|owner| kept.contains(&owner));
                    assert_eq!(kept.contains(&index), owner_kept, "result {index} parted from its call: {kept:?}");
                }
            }
            let gone: Vec<bool> = units.iter().map(|unit| unit.iter().all(|i| !kept.contains(i))).collect();
            assert!(gone.windows(2).all(|pair| pair[0] || !pair[1]), "a newer unit went before an older one: {gone:?}");
            assert!(gone.contains(&true), "a selection that leaves out nothing");
        }
    }
}
