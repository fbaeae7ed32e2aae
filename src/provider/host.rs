//! A model the host runs (`"provider": "host"`): an on-device model, a local
//! engine, a gateway with a protocol of its own. Each request goes to the host
//! as provider-neutral JSON ([`request_json`]); the answer streams back, from any
//! thread, into a [`HostReply`], which the run reads as it reads any
//! provider's stream ([`receive`]). Calls are assembled and bounded as a
//! provider's are, and a call that comes without an id gets one made up.

use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;

use super::http::{EncodedTranscript, JsonObject, ModelSettings, WireFormat, MAX_STREAM_BYTES};
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
    pub(crate) max_retries: u32,
    /// The first retry's delay (doubling, with jitter).
    pub(crate) retry_backoff: Duration,
}

/// The request as the host reads it: `{"first_new_message", "max_tokens",
/// "messages", "model", "output_schema", "system", "tool_choice", "tools",
/// "turn"}`. The messages are encoded once each, into `wire`, as the HTTP
/// providers' are; `first_new_message` is the index of the first message the
/// run's previous request did not hold (0 for a run's first request, and after
/// the history was compacted), for engines that keep their own cache.
pub(crate) fn request_json(
    settings: &HostSettings,
    request: &GenerationRequest<'_>,
    wire: &mut WireCache,
) -> Result<Vec<u8>, Error> {
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
    let mut body = Vec::with_capacity(transcript.encoded_len() + 1024);
    let mut fields = JsonObject::new(&mut body);
    fields.field("first_new_message", &first_new);
    fields.field("max_tokens", &settings.max_tokens);
    fields.raw("messages", |out| transcript.write_array(0, None, out));
    fields.field("model", &settings.name);
    fields.field("output_schema", &request.output_schema);
    fields.field("system", &request.system);
    fields.field("tool_choice", &tool_choice_json(request.tool_choice));
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
    fields.field("tools", &tools);
    fields.field("turn", &request.turn);
    fields.finish();
    Ok(body)
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
}

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
    pub(crate) fn usage(&self, usage: Usage) {
        self.state().builder.usage = usage;
    }

    /// One piece, within the bounds of an answer: a piece past them breaks
    /// the answer (the request fails with the same error).
    fn piece(&self, size: usize, add: impl FnOnce(&mut ResponseBuilder) -> Result<(), Error>) -> Result<(), Error> {
        let mut state = self.state();
        if let Some(broken) = &state.broken {
            return Err(broken.clone());
        }
        state.bytes = state.bytes.saturating_add(size);
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
    let answer = loop {
        tokio::select! {
            biased;
            answer = &mut answer => break answer,
            _ = reply.arrived.notified() => reply.forward(deltas).await,
        }
    };
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
