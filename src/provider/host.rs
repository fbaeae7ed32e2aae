//! A model the host runs (`"provider": "host"`): an on-device model, a local
//! engine, a gateway with a protocol of its own. Each request goes to the host
//! as provider-neutral JSON ([`request_json`]); the answer streams back, from any
//! thread, into a [`HostReply`], which the run reads as it reads any
//! provider's stream ([`receive`]). Calls are assembled and bounded as a
//! provider's are, and a call that comes without an id gets one made up.

use std::future::Future;
use std::sync::{Mutex, MutexGuard};

use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;

use super::http::{EncodedTranscript, JsonObject, ModelSettings, RetryPolicy, WireFormat, MAX_STREAM_BYTES};
use super::response::ResponseBuilder;
use super::{DeltaSink, GenerationRequest, ToolChoice, WireCache};
use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Message, StopReason, Usage};

/// The messages of a host request: ferrule's own transcript JSON.
pub(crate) struct HostWire;

impl WireFormat for HostWire {
    fn name(&self) -> &'static str {
        "host"
    }

    fn encode_message(&self, _: &ModelSettings, message: &Message, out: &mut EncodedTranscript) -> Result<(), Error> {
        out.item(message);
        Ok(())
    }
}

/// What a host model request says beside the messages.
pub(crate) struct HostSettings {
    /// The name the configuration gave the model.
    pub(crate) name: String,
    /// `model.max_tokens`.
    pub(crate) max_tokens: Option<u32>,
    /// Retries of a failed request that the host says may succeed.
    pub(crate) retries: RetryPolicy,
}

/// A request as the host reads it, three ways.
pub(crate) struct RequestJson {
    /// `{"first_new_message", "max_tokens", "message_count", "messages",
    /// "model", "output_schema", "run_id", "system", "tool_choice", "tools",
    /// "turn"}`.
    pub(crate) full: String,
    /// The same without `messages`: what a binding reads on every request.
    pub(crate) options: String,
    /// The messages from `first_new_message` on, as a JSON array.
    pub(crate) new_messages: String,
}

/// The request. The messages are encoded once each, into `wire`, as the HTTP
/// providers' are; `first_new_message` is the index of the first message the
/// run's previous request did not hold (0 for a run's first request, and after
/// the history was compacted), for engines that keep their own cache.
pub(crate) fn request_json(
    settings: &HostSettings,
    request: &GenerationRequest<'_>,
    wire: &mut WireCache,
) -> Result<RequestJson, Error> {
    let model = ModelSettings {
        name: settings.name.clone(),
        max_tokens: settings.max_tokens,
        stream: true,
        image_input: true,
        strict_tools: true,
        encrypted_reasoning: false,
        server_history: false,
        thinking: None,
    };
    let first_new = match &wire.transcript {
        Some(_) => wire.host_messages_sent.min(request.messages.len()),
        None => 0,
    };
    let transcript = EncodedTranscript::update(&mut wire.transcript, &HostWire, &model, request.messages)?;
    wire.host_messages_sent = request.messages.len();
    let tools: Vec<ToolJson<'_>> = request
        .tools
        .iter()
        .map(|t| ToolJson {
            description: &t.description,
            input_schema: &t.input_schema,
            name: &t.name,
            strict: t.strict,
        })
        .collect();
    let write = |messages: Option<&EncodedTranscript>, capacity: usize| {
        let mut body = Vec::with_capacity(capacity + 1024);
        let mut fields = JsonObject::new(&mut body);
        fields.field("first_new_message", &first_new);
        fields.field("max_tokens", &settings.max_tokens);
        fields.field("message_count", &request.messages.len());
        if let Some(transcript) = messages {
            fields.raw("messages", |out| transcript.write_array(0, None, out));
        }
        fields.field("model", &settings.name);
        fields.field("output_schema", &request.output_schema);
        fields.field("run_id", &request.run_id);
        fields.field("system", &request.system);
        fields.field("tool_choice", &tool_choice_json(request.tool_choice));
        fields.field("tools", &tools);
        fields.field("turn", &request.turn);
        fields.finish();
        json_text(body)
    };
    let mut new_messages = Vec::new();
    transcript.write_array(first_new, None, &mut new_messages);
    Ok(RequestJson {
        full: write(Some(transcript), transcript.encoded_len()),
        options: write(None, 0),
        new_messages: json_text(new_messages),
    })
}

/// JSON ferrule wrote, as text (serde_json writes UTF-8).
fn json_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_default()
}

/// A tool as the host model is told of it; fields in key order.
#[derive(Serialize)]
struct ToolJson<'a> {
    description: &'a str,
    input_schema: &'a Value,
    name: &'a str,
    strict: bool,
}

/// `"auto"`, `"none"`, `"required"` or `{"name": "<tool>"}`, as the
/// configuration writes it.
fn tool_choice_json(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::Named(name) => serde_json::json!({"name": name}),
    }
}

/// How the host ended a request.
#[derive(Debug)]
pub(crate) enum HostAnswer {
    /// The answer is complete; without a stop reason, `tool_use` when calls
    /// came and `end_turn` otherwise.
    Complete(Option<StopReason>),
    /// The request failed; a retryable failure is asked again when nothing had
    /// streamed yet.
    Fail { error: Error, retryable: bool },
}

/// The answer of one request as it streams in from the host, from any thread.
#[derive(Default)]
pub(crate) struct HostReply {
    state: Mutex<ReplyState>,
    /// Wakes the run to forward what came.
    arrived: Notify,
}

#[derive(Default)]
struct ReplyState {
    builder: ResponseBuilder,
    bytes: usize,
    /// A piece that broke the answer's bounds: the request fails with it.
    broken: Option<Error>,
    /// The host answered: no piece is taken after that.
    closed: bool,
    /// The run stopped waiting: pieces are taken and dropped.
    discarding: bool,
}

/// What each piece counts against the bound beside its text (its event and
/// its place in the queue), so that many empty pieces cannot grow without end.
const PIECE_COST: usize = 64;

impl HostReply {
    fn state(&self) -> MutexGuard<'_, ReplyState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds answer text.
    pub(crate) fn text(&self, text: &str) -> Result<(), Error> {
        self.piece(text.len(), |builder| {
            builder.text(text);
            Ok(())
        })
    }

    /// Adds reasoning text.
    pub(crate) fn thinking(&self, text: &str) -> Result<(), Error> {
        self.piece(text.len(), |builder| {
            builder.thinking(text);
            Ok(())
        })
    }

    /// Adds a piece of the call at `index` (its id and name, when this piece
    /// carries them, and more argument text).
    pub(crate) fn tool_call(
        &self,
        index: u32,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> Result<(), Error> {
        let size = arguments.len() + id.map_or(0, str::len) + name.map_or(0, str::len);
        self.piece(size, |builder| builder.tool_call(index.into(), id, name, arguments))
    }

    /// Sets the answer's token counts.
    pub(crate) fn usage(&self, usage: Usage) -> Result<(), Error> {
        let mut state = self.state();
        if state.closed {
            return Err(answered());
        }
        state.builder.usage = usage;
        Ok(())
    }

    /// The host answered (completed or failed): from now on a piece is
    /// `ALREADY_COMPLETED`, and everything taken before is in the answer.
    pub(crate) fn close(&self) {
        self.state().closed = true;
    }

    /// The run no longer waits: pieces are accepted and dropped, and what came
    /// is let go.
    pub(crate) fn discard(&self) {
        let mut state = self.state();
        state.discarding = true;
        state.builder = ResponseBuilder::default();
    }

    /// One piece, within the bounds of an answer: a piece past them breaks
    /// the answer (the request fails with the same error).
    fn piece(&self, size: usize, add: impl FnOnce(&mut ResponseBuilder) -> Result<(), Error>) -> Result<(), Error> {
        let mut state = self.state();
        if state.closed {
            return Err(answered());
        }
        if let Some(broken) = &state.broken {
            return Err(broken.clone());
        }
        if state.discarding {
            return Ok(());
        }
        state.bytes = state.bytes.saturating_add(size).saturating_add(PIECE_COST);
        let added = match state.bytes > MAX_STREAM_BYTES {
            true => Err(Error::new(
                ErrorCode::ProviderMalformedStream,
                format!("the host model's answer is larger than {MAX_STREAM_BYTES} bytes"),
            )),
            false => add(&mut state.builder),
        };
        if let Err(error) = &added {
            state.broken = Some(error.clone());
        }
        drop(state);
        self.arrived.notify_one();
        added
    }

    /// The error of a piece that broke the answer's bounds.
    fn broken(&self) -> Option<Error> {
        self.state().broken.clone()
    }

    /// Whether any output has been forwarded (after which a request is not
    /// asked again).
    pub(crate) fn has_streamed(&self) -> bool {
        self.state().builder.has_streamed()
    }

    /// Forwards what came since the last time.
    async fn forward(&self, deltas: &mut dyn DeltaSink) {
        let pending = self.state().builder.take_pending();
        pending.send(deltas).await;
    }

    /// The message, once the host has completed it.
    fn finish(&self, stop_reason: Option<StopReason>) -> Result<AssistantMessage, Error> {
        let mut state = self.state();
        if let Some(broken) = state.broken.take() {
            return Err(broken);
        }
        let mut builder = std::mem::take(&mut state.builder);
        builder.stop_reason = stop_reason;
        Ok(builder.finish_making_up_ids())
    }
}

fn answered() -> Error {
    Error::new(ErrorCode::AlreadyCompleted, "this model request was already completed or failed")
}

/// A failed request, and whether it may be asked again.
pub(crate) struct HostFailure {
    pub(crate) error: Error,
    pub(crate) retryable: bool,
}

/// Forwards the host's answer to `deltas` as it comes, until `answer` (the
/// host's `complete` or `fail`; `None` when the request went away unanswered)
/// resolves.
pub(crate) async fn receive(
    reply: &HostReply,
    answer: impl Future<Output = Option<HostAnswer>>,
    deltas: &mut dyn DeltaSink,
) -> Result<AssistantMessage, HostFailure> {
    tokio::pin!(answer);
    let broken = |error| Err(HostFailure { error, retryable: false });
    let answer = loop {
        tokio::select! {
            biased;
            answer = &mut answer => break answer,
            _ = reply.arrived.notified() => {
                // An answer past its bounds fails at once, whatever the host
                // says next (it sees the request cancelled).
                if let Some(error) = reply.broken() {
                    return broken(error);
                }
                reply.forward(deltas).await
            }
        }
    };
    if let Some(error) = reply.broken() {
        return broken(error);
    }
    reply.forward(deltas).await;
    match answer {
        Some(HostAnswer::Complete(stop_reason)) => {
            reply.finish(stop_reason).map_err(|error| HostFailure { error, retryable: false })
        }
        Some(HostAnswer::Fail { error, retryable }) => Err(HostFailure { error, retryable }),
        None => Err(HostFailure {
            error: Error::new(ErrorCode::ProviderServer, "the host model's request went away before it was answered"),
            retryable: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_piece_is_taken_after_the_answer() {
        let reply = HostReply::default();
        reply.text("kept").unwrap();
        reply.close();
        assert_eq!(reply.text("late").unwrap_err().code, ErrorCode::AlreadyCompleted);
        assert_eq!(reply.tool_call(0, Some("c1"), Some("t"), "{}").unwrap_err().code, ErrorCode::AlreadyCompleted);
        assert_eq!(reply.usage(Usage::default()).unwrap_err().code, ErrorCode::AlreadyCompleted);
        let message = reply.finish(None).unwrap();
        assert_eq!(crate::message::text_of(&message.content), "kept");
        assert!(message.tool_calls.is_empty());
    }

    #[test]
    fn empty_pieces_count_against_the_bound_and_the_break_stays() {
        let reply = HostReply::default();
        let mut taken = 0usize;
        let error = loop {
            match reply.tool_call(0, None, None, "") {
                Ok(()) => taken += 1,
                Err(error) => break error,
            }
        };
        assert_eq!(error.code, ErrorCode::ProviderMalformedStream);
        assert_eq!(taken, MAX_STREAM_BYTES / PIECE_COST);
        assert_eq!(reply.text("more").unwrap_err(), error, "the break stays");
        assert_eq!(reply.finish(None).unwrap_err(), error);
    }

    #[test]
    fn pieces_after_the_run_stopped_waiting_are_dropped() {
        let reply = HostReply::default();
        reply.text("before").unwrap();
        reply.discard();
        for _ in 0..10 {
            reply.text(&"x".repeat(1 << 20)).unwrap();
        }
        assert_eq!(reply.state().bytes, "before".len() + PIECE_COST);
        assert!(reply.finish(None).unwrap().content.is_empty());
    }
}
