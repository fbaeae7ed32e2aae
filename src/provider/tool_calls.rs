//! Tool calls assembled from streamed pieces, safely.
//!
//! Providers stream a call as pieces keyed by a position (OpenAI's `index`,
//! Anthropic's content block index, the Responses `output_index`). Broken shapes
//! are repaired here rather than sent back to the provider on the next request: a
//! call without an id, or with the id of an earlier call, is dropped; a position
//! reused for a different id becomes a second call. Calls per response and
//! argument bytes per call are bounded.

use std::collections::HashMap;

use crate::error::{Error, ErrorCode};
use crate::message::ToolCall;

/// Most tool calls one response may carry.
pub(crate) const MAX_CALLS_PER_RESPONSE: usize = 256;
/// Most argument bytes one call may carry.
pub(crate) const MAX_ARGUMENT_BYTES: usize = 4 << 20;

/// An id for a call that came without one (Gemini's usually do): unique
/// enough that no two calls of a run share it.
pub(crate) fn made_up_call_id() -> String {
    format!("call_{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..))
}

/// The `n`th id made up for a response whose ids follow from `seed`: the
/// same seed gives the same ids, in any build.
pub(crate) fn made_up_call_id_from(seed: u64, n: u32) -> String {
    let hash = |part: u8| stable_hash(&[seed.to_le_bytes().as_slice(), &n.to_le_bytes(), &[part]].concat());
    let (high, low) = (hash(0), hash(1) as u32);
    format!("call_{high:016x}{low:08x}")
}

/// FNV-1a of `bytes`: a hash that never changes with the build (where std's
/// hashers may), for what must be the same in another process.
pub(crate) fn stable_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[derive(Default)]
pub(crate) struct ToolCallAssembler {
    calls: Vec<ToolCall>,
    by_position: HashMap<u64, usize>,
}

impl ToolCallAssembler {
    /// Adds a piece at `position`; returns the call's index in the response.
    pub(crate) fn piece(
        &mut self,
        position: u64,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> Result<usize, Error> {
        let id = id.filter(|id| !id.is_empty());
        let slot = match self.by_position.get(&position) {
            Some(&slot) if id.is_none_or(|id| self.calls[slot].id.is_empty() || self.calls[slot].id == id) => slot,
            _ => {
                if self.calls.len() == MAX_CALLS_PER_RESPONSE {
                    return Err(Error::new(
                        ErrorCode::ProviderMalformedStream,
                        format!("the response has more than {MAX_CALLS_PER_RESPONSE} tool calls"),
                    ));
                }
                self.calls.push(ToolCall::new("", "", ""));
                self.by_position.insert(position, self.calls.len() - 1);
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            if call.id.is_empty() {
                call.id = id.to_owned();
            }
        }
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            if call.name.is_empty() {
                call.name = name.to_owned();
            }
        }
        if call.arguments.len() + arguments.len() > MAX_ARGUMENT_BYTES {
            return Err(Error::new(
                ErrorCode::ProviderMalformedStream,
                format!("the arguments of tool call \"{}\" are larger than {MAX_ARGUMENT_BYTES} bytes", call.name),
            ));
        }
        call.arguments.push_str(arguments);
        Ok(slot)
    }

    /// Sets the signature of the call at `position`, if there is one.
    pub(crate) fn sign(&mut self, position: u64, signature: &str) {
        if let Some(&slot) = self.by_position.get(&position) {
            self.calls[slot].signature = Some(signature.to_owned());
        }
    }

    /// Whether a call was started.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The finished calls of a host model in order, with an id made up for each
    /// that has none (a host model's calls need not carry one). A call that
    /// repeats an earlier call's id is kept: no provider will refuse the
    /// transcript for it, and the run answers it as it answers any repeated id,
    /// so the model learns of it. Arguments as [`Self::finish`].
    pub(crate) fn finish_making_up_ids(self) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .map(|mut call| {
                if call.id.is_empty() {
                    call.id = made_up_call_id();
                }
                with_default_arguments(call)
            })
            .collect()
    }

    /// The finished calls in order, without those that have no id or repeat an
    /// earlier call's id (each logged at `warn`). Arguments left empty (a call
    /// with no parameters) become `{}`.
    pub(crate) fn finish(self) -> Vec<ToolCall> {
        let mut seen = std::collections::HashSet::new();
        self.calls
            .into_iter()
            .filter(|call| {
                let why = match () {
                    _ if call.id.is_empty() => "it has no id",
                    _ if !seen.insert(call.id.clone()) => "its id is an earlier call's",
                    _ => return true,
                };
                crate::log::log!(
                    Warn,
                    "ferrule::provider",
                    format!("a tool call of the model's response was dropped: {why}"),
                    "tool" => call.name,
                    "call_id" => call.id,
                );
                false
            })
            .map(with_default_arguments)
            .collect()
    }
}

/// `call` with empty arguments (a call with no parameters) as `{}`.
fn with_default_arguments(mut call: ToolCall) -> ToolCall {
    if call.arguments.trim().is_empty() {
        call.arguments = "{}".to_owned();
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(calls: &[ToolCall]) -> Vec<&str> {
        calls.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn pieces_at_one_position_make_one_call() {
        let mut calls = ToolCallAssembler::default();
        calls.piece(0, Some("c1"), Some("get"), "").unwrap();
        calls.piece(0, None, None, "{\"a\":").unwrap();
        calls.piece(0, None, None, "1}").unwrap();
        let calls = calls.finish();
        assert_eq!(calls, vec![ToolCall::new("c1", "get", "{\"a\":1}")]);
    }

    #[test]
    fn a_position_reused_for_another_id_becomes_two_calls() {
        let mut calls = ToolCallAssembler::default();
        assert_eq!(calls.piece(0, Some("c1"), Some("a"), "{}").unwrap(), 0);
        assert_eq!(calls.piece(0, Some("c2"), Some("b"), "{\"x\"").unwrap(), 1);
        assert_eq!(calls.piece(0, None, None, ":1}").unwrap(), 1);
        let calls = calls.finish();
        assert_eq!(ids(&calls), ["c1", "c2"]);
        assert_eq!(calls[0].arguments, "{}");
        assert_eq!(calls[1].arguments, "{\"x\":1}");
    }

    #[test]
    fn calls_without_an_id_or_with_a_repeated_id_are_dropped() {
        let mut calls = ToolCallAssembler::default();
        calls.piece(0, None, Some("anonymous"), "{}").unwrap();
        calls.piece(1, Some("c1"), Some("a"), "{}").unwrap();
        calls.piece(2, Some("c1"), Some("b"), "{}").unwrap();
        calls.piece(3, Some("c2"), Some("c"), "").unwrap();
        let calls = calls.finish();
        assert_eq!(ids(&calls), ["c1", "c2"]);
        assert_eq!(calls[0].name, "a");
        assert_eq!(calls[1].arguments, "{}", "no arguments means an empty object");
    }

    #[test]
    fn a_host_models_calls_get_made_up_ids_and_keep_repeated_ones() {
        let mut calls = ToolCallAssembler::default();
        calls.piece(0, None, Some("anonymous"), "{}").unwrap();
        calls.piece(1, Some("c1"), Some("a"), "{}").unwrap();
        calls.piece(2, Some("c1"), Some("b"), "").unwrap();
        let calls = calls.finish_making_up_ids();
        assert_eq!(calls.len(), 3, "nothing the model said is dropped");
        assert!(calls[0].id.starts_with("call_") && calls[0].id.len() == 29, "{}", calls[0].id);
        assert_eq!(ids(&calls[1..]), ["c1", "c1"], "the run answers the repeated id");
        assert_eq!(calls[2].arguments, "{}");
    }

    #[test]
    fn bounds_fail_the_response() {
        let mut calls = ToolCallAssembler::default();
        for i in 0..MAX_CALLS_PER_RESPONSE as u64 {
            calls.piece(i, Some(&format!("c{i}")), Some("t"), "{}").unwrap();
        }
        let err = calls.piece(9999, Some("extra"), Some("t"), "{}").unwrap_err();
        assert_eq!(err.code, ErrorCode::ProviderMalformedStream);

        let mut calls = ToolCallAssembler::default();
        calls.piece(0, Some("c1"), Some("t"), "").unwrap();
        let big = "x".repeat(MAX_ARGUMENT_BYTES);
        calls.piece(0, None, None, &big).unwrap();
        assert_eq!(calls.piece(0, None, None, "y").unwrap_err().code, ErrorCode::ProviderMalformedStream);
    }
}
