//! Builds one assistant message from a provider's stream, and queues the deltas
//! the run turns into events.

use super::tool_calls::{made_up_call_id, made_up_call_id_from, ToolCallAssembler};
use super::{Delta, DeltaSink};
use crate::error::Error;
use crate::message::{AssistantMessage, Part, StopReason, Usage};

/// A delta waiting to be forwarded.
enum Pending {
    Text(String),
    Thinking(String),
    ToolCall { index: u32, id: Option<String>, name: Option<String>, arguments: String },
}

/// Deltas taken from a [`ResponseBuilder`], waiting to be forwarded.
pub(crate) struct PendingDeltas(Vec<Pending>);

impl PendingDeltas {
    /// Forwards them, in order.
    pub(crate) async fn send(self, deltas: &mut dyn DeltaSink) {
        for pending in &self.0 {
            let delta = match pending {
                Pending::Text(text) => Delta::Text(text),
                Pending::Thinking(text) => Delta::Thinking(text),
                Pending::ToolCall { index, id, name, arguments } => {
                    Delta::ToolCall { index: *index, id: id.as_deref(), name: name.as_deref(), arguments }
                }
            };
            deltas.send(delta).await;
        }
    }
}

/// Collects a response as a decoder reads it. Decoders are synchronous; the
/// transport forwards what they queued after each event (`flush`).
#[derive(Default)]
pub(crate) struct ResponseBuilder {
    parts: Vec<Part>,
    /// The last part may still grow (its block has not ended).
    part_open: bool,
    calls: ToolCallAssembler,
    pending: Vec<Pending>,
    streamed: bool,
    /// Token counts, as the provider reports them.
    pub(crate) usage: Usage,
    /// The stop reason, once known.
    pub(crate) stop_reason: Option<StopReason>,
    /// The provider's id for the response: for continuing from it with
    /// server-side history (OpenAI Responses), and for its span.
    pub(crate) response_id: Option<String>,
    /// The model that answered, as the provider names it.
    pub(crate) response_model: Option<String>,
    /// What the ids of calls that came without one follow from when they must
    /// be the same for the same request (a cassette's), and how many were
    /// made; else they are random.
    made_up_ids: Option<(u64, u32)>,
}

impl ResponseBuilder {
    /// Takes the response's id and model from the fields `id` and `model` of
    /// `object` (a chunk, or the response), where it has them.
    pub(crate) fn describe(&mut self, object: Option<&serde_json::Value>, id: &str, model: &str) {
        let field = |key: &str| object.and_then(|o| o.get(key)).and_then(serde_json::Value::as_str).map(str::to_owned);
        if let Some(id) = field(id) {
            self.response_id = Some(id);
        }
        if let Some(model) = field(model) {
            self.response_model = Some(model);
        }
    }

    /// Makes the ids made up for calls without one follow from `seed`.
    pub(crate) fn seed_made_up_ids(&mut self, seed: u64) {
        self.made_up_ids = Some((seed, 0));
    }

    /// An id for a call that came without one.
    pub(crate) fn made_up_call_id(&mut self) -> String {
        match &mut self.made_up_ids {
            Some((seed, made)) => {
                *made += 1;
                made_up_call_id_from(*seed, *made)
            }
            None => made_up_call_id(),
        }
    }

    /// Appends answer text.
    pub(crate) fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Text { text: current, .. }) if self.part_open => current.push_str(text),
            _ => {
                self.parts.push(Part::text(text));
                self.part_open = true;
            }
        }
        self.pending.push(Pending::Text(text.to_owned()));
    }

    /// Starts a text part that carries a signature (Gemini's `thoughtSignature`),
    /// with `text`, which may be empty; unsigned text that follows joins it.
    pub(crate) fn signed_text(&mut self, text: &str, signature: &str) {
        self.parts.push(Part::Text { text: String::new(), signature: Some(signature.to_owned()) });
        self.part_open = true;
        self.text(text);
    }

    /// Appends reasoning text.
    pub(crate) fn thinking(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.parts.last_mut() {
            Some(Part::Thinking { thinking, .. }) if self.part_open => thinking.push_str(text),
            _ => {
                self.parts.push(Part::Thinking { thinking: text.to_owned(), signature: None, id: None });
                self.part_open = true;
            }
        }
        self.pending.push(Pending::Thinking(text.to_owned()));
    }

    /// Sets the signature of the current reasoning part.
    pub(crate) fn thinking_signature(&mut self, signature: &str) {
        match self.parts.last_mut() {
            Some(Part::Thinking { signature: current, .. }) if self.part_open => {
                current.get_or_insert_with(String::new).push_str(signature)
            }
            _ => {
                self.parts.push(Part::Thinking {
                    thinking: String::new(),
                    signature: Some(signature.to_owned()),
                    id: None,
                });
                self.part_open = true;
            }
        }
    }

    /// Ends an OpenAI Responses reasoning item: the reasoning part its summary
    /// streamed into (or a new one, when it had no summary) gets the item's id and
    /// encrypted content, so the item can be sent back.
    pub(crate) fn reasoning_item(&mut self, id: &str, encrypted_content: Option<&str>) {
        if !matches!(self.parts.last(), Some(Part::Thinking { id: None, .. }) if self.part_open) {
            self.parts.push(Part::Thinking { thinking: String::new(), signature: None, id: None });
        }
        if let Some(Part::Thinking { signature, id: item_id, .. }) = self.parts.last_mut() {
            *item_id = Some(id.to_owned());
            *signature = encrypted_content.map(str::to_owned);
        }
        self.part_open = false;
    }

    /// Adds encrypted reasoning.
    pub(crate) fn redacted_thinking(&mut self, data: &str) {
        self.parts.push(Part::RedactedThinking { data: data.to_owned() });
        self.part_open = false;
    }

    /// Ends the current text or reasoning part; the next piece starts a new one.
    pub(crate) fn end_part(&mut self) {
        self.part_open = false;
    }

    /// Adds a piece of a tool call at a provider position.
    pub(crate) fn tool_call(
        &mut self,
        position: u64,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> Result<(), Error> {
        let index = self.calls.piece(position, id, name, arguments)?;
        self.part_open = false;
        self.pending.push(Pending::ToolCall {
            index: index as u32,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
        });
        Ok(())
    }

    /// Sets the signature of the call at a provider position (Gemini's
    /// `thoughtSignature` on a `functionCall` part).
    pub(crate) fn tool_call_signature(&mut self, position: u64, signature: &str) {
        self.calls.sign(position, signature);
    }

    /// Whether any output has been forwarded (after which a request is not retried).
    pub(crate) fn has_streamed(&self) -> bool {
        self.streamed
    }

    /// Forwards queued deltas.
    pub(crate) async fn flush(&mut self, deltas: &mut dyn DeltaSink) {
        self.take_pending().send(deltas).await;
    }

    /// Takes the queued deltas, to forward them without holding the builder
    /// (which a lock may guard).
    pub(crate) fn take_pending(&mut self) -> PendingDeltas {
        self.streamed |= !self.pending.is_empty();
        PendingDeltas(std::mem::take(&mut self.pending))
    }

    /// The message. Without a stop reason from the provider: `tool_use` when there
    /// are calls, `end_turn` otherwise.
    pub(crate) fn finish(self) -> AssistantMessage {
        self.finish_with(ToolCallAssembler::finish)
    }

    /// The message, with an id made up for each call that came without one
    /// (a host model's), instead of dropping the call.
    pub(crate) fn finish_making_up_ids(self) -> AssistantMessage {
        self.finish_with(ToolCallAssembler::finish_making_up_ids)
    }

    fn finish_with(self, calls: fn(ToolCallAssembler) -> Vec<crate::message::ToolCall>) -> AssistantMessage {
        let has_calls = !self.calls.is_empty();
        let tool_calls = calls(self.calls);
        let stop_reason = self.stop_reason.unwrap_or(if has_calls { StopReason::ToolUse } else { StopReason::EndTurn });
        // An empty text part stays only for the signature it carries.
        let content = self
            .parts
            .into_iter()
            .filter(|p| !matches!(p, Part::Text { text, signature: None } if text.is_empty()))
            .collect();
        AssistantMessage { content, tool_calls, stop_reason, usage: self.usage }
    }
}
