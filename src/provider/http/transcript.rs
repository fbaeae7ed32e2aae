//! A run's transcript in one provider's wire JSON, encoded one message at a time.
//!
//! A run's transcript only grows between its model requests, so each message is
//! encoded once, when it is new, and every request copies the encoded bytes into
//! its body: a request costs what is new plus one copy, never a rebuild of the
//! history.

use serde::Serialize;

use super::{ModelSettings, WireFormat};
use crate::error::Error;
use crate::message::Message;

/// The encoded messages of a transcript prefix.
#[derive(Debug)]
pub(crate) struct EncodedTranscript {
    /// The wire format that wrote it.
    format: &'static str,
    /// The items of the messages encoded so far, comma-separated, without
    /// brackets.
    items: Vec<u8>,
    /// Where the items of each encoded message begin in `items` (a byte offset,
    /// before the separating comma): one entry per message encoded.
    starts: Vec<usize>,
    /// Content parts waiting for the current round's tool results to end: sent as
    /// one user message after them (Chat Completions' tool images, Anthropic's
    /// tool results, Gemini's function responses).
    pending: Vec<u8>,
    /// Parts of a second user message after that one (Gemini's tool images,
    /// which may not stand among its function responses).
    followup: Vec<u8>,
    /// The key of those user messages' parts.
    parts_key: &'static str,
    /// System messages, for a wire that sends them apart from the messages.
    system: Vec<String>,
}

impl EncodedTranscript {
    fn new(format: &'static str, parts_key: &'static str) -> Self {
        EncodedTranscript {
            format,
            items: Vec::new(),
            starts: Vec::new(),
            pending: Vec::new(),
            followup: Vec::new(),
            parts_key,
            system: Vec::new(),
        }
    }

    /// `cached` brought up to `messages` (started over when it belongs to another
    /// wire format or to a longer transcript). On an error the cache is emptied.
    pub(crate) fn update<'c>(
        cached: &'c mut Option<Box<EncodedTranscript>>,
        protocol: &impl WireFormat,
        model: &ModelSettings,
        messages: &[Message],
    ) -> Result<&'c EncodedTranscript, Error> {
        let reusable = cached.as_ref().is_some_and(|t| t.format == protocol.name() && t.starts.len() <= messages.len());
        let mut transcript = match cached.take() {
            Some(transcript) if reusable => transcript,
            _ => Box::new(EncodedTranscript::new(protocol.name(), protocol.user_parts_key())),
        };
        for message in &messages[transcript.starts.len()..] {
            if !matches!(message, Message::Tool(_)) {
                transcript.flush_pending();
            }
            transcript.starts.push(transcript.items.len());
            protocol.encode_message(model, message, &mut transcript)?;
        }
        Ok(cached.insert(transcript))
    }

    /// Appends one item.
    pub(crate) fn item(&mut self, value: &impl Serialize) {
        push_element(&mut self.items, value);
    }

    /// Appends a content part to the user message that follows the round's tool
    /// results.
    pub(crate) fn pending_part(&mut self, value: &impl Serialize) {
        push_element(&mut self.pending, value);
    }

    /// Appends a content part to the user message that follows the one of
    /// the round's pending parts.
    pub(crate) fn followup_part(&mut self, value: &impl Serialize) {
        push_element(&mut self.followup, value);
    }

    /// Keeps the text of a system message for [`EncodedTranscript::system`].
    pub(crate) fn system_text(&mut self, text: &str) {
        self.system.push(text.to_owned());
    }

    /// The agent's system prompt, then the system messages' texts, each
    /// paragraph apart, for a wire that sends them apart from the messages.
    pub(crate) fn system_text_after(&self, prompt: Option<&str>) -> String {
        let texts: Vec<&str> = prompt.into_iter().chain(self.system.iter().map(String::as_str)).collect();
        texts.join("\n\n")
    }

    /// The bytes of the items, for sizing a body.
    pub(crate) fn encoded_len(&self) -> usize {
        self.items.len() + self.pending.len() + self.followup.len()
    }

    /// Writes the items of messages `from..` as a JSON array, after `first` (an
    /// item of the request's own, such as the system prompt) when given.
    pub(crate) fn write_array(&self, from: usize, first: Option<&[u8]>, out: &mut Vec<u8>) {
        out.push(b'[');
        let mut items = match self.starts.get(from) {
            Some(&start) => &self.items[start..],
            None => &[][..],
        };
        if from > 0 {
            items = items.strip_prefix(b",").unwrap_or(items);
        }
        let mut empty = true;
        for piece in [first.unwrap_or_default(), items] {
            if !piece.is_empty() {
                if !empty {
                    out.push(b',');
                }
                out.extend_from_slice(piece);
                empty = false;
            }
        }
        write_user_messages(self.parts_key, [&self.pending, &self.followup], !empty, out);
        out.push(b']');
    }

    fn flush_pending(&mut self) {
        write_user_messages(self.parts_key, [&self.pending, &self.followup], !self.items.is_empty(), &mut self.items);
        self.pending.clear();
        self.followup.clear();
    }
}

/// Appends a user message for each of `parts` that holds any (the round's
/// pending parts, then their follow-up), each after a comma when an element
/// comes before it (`after_element` for the first).
fn write_user_messages(key: &str, parts: [&[u8]; 2], mut after_element: bool, out: &mut Vec<u8>) {
    for parts in parts.into_iter().filter(|parts| !parts.is_empty()) {
        if after_element {
            out.push(b',');
        }
        write_user_message(key, parts, out);
        after_element = true;
    }
}

/// `{"<key>":[parts],"role":"user"}`, keys in the order serde_json's map
/// writes them (both keys in use, `content` and `parts`, sort before `role`).
fn write_user_message(key: &str, parts: &[u8], out: &mut Vec<u8>) {
    debug_assert!(key < "role");
    out.push(b'{');
    serde_json::to_writer(&mut *out, key).expect("JSON into memory");
    out.extend_from_slice(b":[");
    out.extend_from_slice(parts);
    out.extend_from_slice(b"],\"role\":\"user\"}");
}

/// The JSON of `value`.
pub(crate) fn json_bytes(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("JSON into memory")
}

fn push_element(list: &mut Vec<u8>, value: &impl Serialize) {
    if !list.is_empty() {
        list.push(b',');
    }
    // Serialising plain data into a Vec cannot fail.
    serde_json::to_writer(&mut *list, value).expect("JSON into memory");
}

/// Writes a JSON object field by field. Callers give keys in ascending order, the
/// order serde_json's map writes them, so bodies keep the bytes they always had.
pub(crate) struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    last_key: Option<&'static str>,
}

impl<'a> JsonObject<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        JsonObject { out, last_key: None }
    }

    /// A field whose value serde writes.
    pub(crate) fn field(&mut self, key: &'static str, value: &impl Serialize) {
        self.key(key);
        serde_json::to_writer(&mut *self.out, value).expect("JSON into memory");
    }

    /// A field whose value `write` writes.
    pub(crate) fn raw(&mut self, key: &'static str, write: impl FnOnce(&mut Vec<u8>)) {
        self.key(key);
        write(self.out);
    }

    pub(crate) fn finish(self) {
        self.out.push(b'}');
    }

    fn key(&mut self, key: &'static str) {
        debug_assert!(self.last_key.is_none_or(|last| last < key), "{key} after {:?}", self.last_key);
        if self.last_key.is_some() {
            self.out.push(b',');
        }
        self.last_key = Some(key);
        serde_json::to_writer(&mut *self.out, key).expect("JSON into memory");
        self.out.push(b':');
    }
}
