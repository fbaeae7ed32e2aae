//! The transcript as JSON, each message serialized once: what `turn_start` hook
//! payloads and the history budget's byte counts are made of, so that a long run
//! does not serialize its whole history again every round.

use serde_json::value::RawValue;

use crate::message::Message;

/// The JSON of a transcript's messages, in order. It follows a transcript that
/// only grows; one that was replaced must be [`reset`](Self::reset).
#[derive(Default)]
pub(crate) struct TranscriptJson {
    items: Vec<Box<RawValue>>,
    /// How many times the transcript was replaced.
    revision: u64,
}

impl TranscriptJson {
    /// Serializes the messages added since the last call.
    pub(crate) fn sync(&mut self, messages: &[Message]) {
        for message in &messages[self.items.len().min(messages.len())..] {
            let json = serde_json::value::to_raw_value(message).unwrap_or_else(|_| RawValue::NULL.to_owned());
            self.items.push(json);
        }
    }

    /// Forgets everything: the transcript was replaced.
    pub(crate) fn reset(&mut self) {
        self.items.clear();
        self.revision += 1;
    }

    /// Changes whenever the transcript is replaced: two lengths of one
    /// revision are of one transcript that grew.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The JSON size of message `index` (synced).
    pub(crate) fn size(&self, index: usize) -> usize {
        self.items[index].get().len()
    }

    /// The JSON sizes of the synced messages.
    pub(crate) fn sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.items.iter().map(|item| item.get().len())
    }

    /// The synced messages' JSON, each written as it is when serialized.
    pub(crate) fn messages(&self) -> &[Box<RawValue>] {
        &self.items
    }
}
