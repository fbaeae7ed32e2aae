//! The HTTP providers' shared machinery: one request per model turn, streamed over
//! SSE (or whole, with `stream: false`), with timeouts, classified errors and
//! retries. Each wire format is a [`Protocol`]: how to build the request body and
//! how to decode the response.

mod cassette;
mod error;
mod redirect;
mod reply;
pub(crate) mod sse;
mod transcript;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use serde_json::Value;

pub use cassette::{UnusedExchange, UnusedRecordings};
pub(crate) use error::{in_band, Failure, Secret};
pub(crate) use redirect::{policy as same_origin_redirects, refusal as redirect_refusal};
pub(crate) use sse::{SseEvent, SseParser};
pub(crate) use transcript::{json_bytes, EncodedTranscript, JsonObject};

use self::cassette::{Cassette, Tape};
use self::reply::Reply;
use super::response::ResponseBuilder;
use super::{strict_tools_check, DeltaSink, GenerationRequest, Generator, ModelConfig, Timeouts, WireCache};
use crate::error::{Error, ErrorCode};
use crate::message::{AssistantMessage, Message};
use crate::trace::SpanContext;
use crate::BoxFuture;

/// Largest stream event, and largest whole response body, ferrule reads.
pub(crate) const MAX_EVENT_BYTES: usize = 16 << 20;
/// Most bytes read of one streamed response.
pub(crate) const MAX_STREAM_BYTES: usize = 64 << 20;
/// Most bytes of an error body kept for the message.
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;
/// Most bytes, and longest time, spent reading past the end of a response's
/// content to keep its connection.
const MAX_DRAINED_BYTES: usize = 64 << 10;
const DRAIN_TIME: Duration = Duration::from_millis(20);
/// Room for what a body holds beside the transcript (model, tools, options).
const BODY_HEADROOM: usize = 4096;
/// Longest wait between attempts, whatever the provider asks.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// How a wire format writes a transcript's messages (see [`EncodedTranscript`]).
pub(crate) trait WireFormat: Send + Sync + 'static {
    /// The provider's name in messages (`"openai"`).
    fn name(&self) -> &'static str;
    /// The key of a user message's parts: the message that carries the parts
    /// left pending by a round's tool results is `{"<key>": [parts], "role": "user"}`.
    fn user_parts_key(&self) -> &'static str {
        "content"
    }
    /// Appends one message of the transcript to `out` (items, parts of the
    /// pending user message, or system text). Called once per message, in
    /// transcript order.
    fn encode_message(
        &self,
        model: &ModelSettings,
        message: &Message,
        out: &mut EncodedTranscript,
    ) -> Result<(), Error>;
}

/// What an HTTP wire format decides beside its messages: the rest of a request
/// body, and how a response reads.
pub(crate) trait Protocol: WireFormat {
    /// The decoder of one response.
    type Decoder: Decoder;
    /// Writes the fields of the request body for one turn, its messages from
    /// `transcript` (which holds `request.messages`): those after `previous`
    /// when it is given (only to a protocol whose server keeps history).
    fn body(
        &self,
        model: &ModelSettings,
        request: &GenerationRequest<'_>,
        transcript: &EncodedTranscript,
        previous: Option<&StoredResponse>,
        body: &mut JsonObject<'_>,
    );
}

/// Reads one response into a [`ResponseBuilder`].
pub(crate) trait Decoder: Default + Send {
    /// One stream event; `Ok(true)` once the response is complete.
    fn event(&mut self, event: &SseEvent, out: &mut ResponseBuilder) -> Result<bool, Error>;
    /// A whole response body (`stream: false`).
    fn whole(&mut self, body: &Value, out: &mut ResponseBuilder) -> Result<(), Error>;
    /// Whether a stream that ends now, without its closing event, still holds a
    /// complete response (the stop reason has arrived).
    fn complete_at_end(&self) -> bool;
}

/// The model settings a protocol reads.
#[derive(Debug, Clone)]
pub(crate) struct ModelSettings {
    pub(crate) name: String,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) stream: bool,
    pub(crate) image_input: bool,
    pub(crate) strict_tools: bool,
    /// OpenAI Responses: ask for reasoning items' encrypted content (they are
    /// sent back on later turns).
    pub(crate) encrypted_reasoning: bool,
    /// OpenAI Responses: the server stores responses and a request continues
    /// from the previous one.
    pub(crate) server_history: bool,
    /// Gemini: how the model thinks.
    pub(crate) thinking: Option<super::config::Thinking>,
}

/// How to reach the provider.
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) headers: HeaderMap,
    pub(crate) key: Option<Secret>,
}

/// A [`Generator`] that speaks `P` over HTTP.
pub(crate) struct HttpGenerator<P: Protocol> {
    protocol: P,
    model: ModelSettings,
    /// Parsed once, not per request.
    url: reqwest::Url,
    /// The API key and the values of `model.headers`, kept to scrub them from
    /// provider messages.
    secrets: Vec<Secret>,
    client: reqwest::Client,
    timeouts: Timeouts,
    retries: RetryPolicy,
    /// The cassette requests are recorded to or answered from (`model.record`).
    cassette: Option<Arc<Cassette>>,
}

/// How a model asks again after a failed attempt: at most `max_retries` more
/// attempts, after exponential backoff from `backoff` (or as long as the
/// provider asked), each announced to the run. Shared by the HTTP providers
/// and the host's model.
pub(crate) struct RetryPolicy {
    pub(crate) max_retries: u32,
    pub(crate) backoff: Duration,
}

impl RetryPolicy {
    pub(crate) fn new(config: &ModelConfig) -> Self {
        RetryPolicy { max_retries: config.max_retries, backoff: Duration::from_millis(config.retry_backoff_ms) }
    }

    /// After attempt `*attempt` failed with `error` (which may be asked again,
    /// nothing having streamed): whether another attempt follows. If so, it is
    /// announced, waited for (`asked`, when the provider said how long, else the
    /// backoff; at most [`MAX_RETRY_DELAY`]), and counted in `attempt`.
    pub(crate) async fn again(
        &self,
        attempt: &mut u32,
        error: &Error,
        asked: Option<Duration>,
        deltas: &mut dyn DeltaSink,
    ) -> bool {
        if *attempt > self.max_retries {
            return false;
        }
        let delay = asked.unwrap_or_else(|| backoff(self.backoff, *attempt)).min(MAX_RETRY_DELAY);
        *attempt += 1;
        deltas.retry(*attempt, error, delay).await;
        tokio::time::sleep(delay).await;
        true
    }
}

impl<P: Protocol> HttpGenerator<P> {
    pub(crate) fn new(
        protocol: P,
        config: &ModelConfig,
        model: ModelSettings,
        endpoint: Endpoint,
    ) -> Result<Self, Error> {
        let Endpoint { url, mut headers, key } = endpoint;
        let url = reqwest::Url::parse(&url)
            .map_err(|e| Error::invalid_arg(format!("model.base_url: {url:?} does not make a valid URL: {e}")))?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let cassette_key = key.as_ref().map(|key| key.expose().to_owned());
        let mut secrets: Vec<Secret> = key.into_iter().collect();
        for (name, value) in &config.headers {
            secrets.extend(Secret::header_value(value));
            let name = HeaderName::try_from(name.as_str())
                .map_err(|_| Error::invalid_arg(format!("model.headers: {name:?} is not a valid header name")))?;
            let value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                Error::invalid_arg(format!("model.headers: the value of {name} is not a valid header value"))
            })?;
            headers.insert(name, value);
        }
        let cassette = match &config.record {
            Some(record) => {
                Some(Arc::new(Cassette::open(record, &url, cassette_key.as_deref(), &config.headers, &headers)?))
            }
            None => None,
        };
        // Every request carries these headers; the client adds them, so no request
        // copies them.
        let mut client = reqwest::Client::builder()
            .user_agent(concat!("ferrule/", env!("CARGO_PKG_VERSION")))
            .redirect(redirect::policy())
            .default_headers(headers);
        if config.timeouts.connect_ms > 0 {
            client = client.connect_timeout(Duration::from_millis(config.timeouts.connect_ms));
        }
        let client = client
            .build()
            .map_err(|e| Error::invalid_arg(format!("model: the HTTP client could not be built: {e}")))?;
        Ok(HttpGenerator {
            protocol,
            model,
            url,
            secrets,
            client,
            timeouts: config.timeouts,
            retries: RetryPolicy::new(config),
            cassette,
        })
    }

    /// Sends the request until it succeeds, fails for good, or output has
    /// streamed. A failure's error is scrubbed of secrets.
    async fn generate_with_retries(
        &self,
        body: bytes::Bytes,
        trace: Option<&SpanContext>,
        deltas: &mut dyn DeltaSink,
    ) -> Result<ResponseBuilder, Failure> {
        // The body as a cassette holds it, secrets masked: what a recorded
        // exchange is matched on, and what made-up call ids follow from.
        let masked = self.cassette.as_ref().map(|cassette| cassette.masked_body(&body));
        let mut attempt = 1;
        loop {
            let mut out = ResponseBuilder::default();
            if let Some(masked) = &masked {
                out.seed_made_up_ids(super::tool_calls::stable_hash(masked));
            }
            // Shared with the attempt, which a whole-request timeout drops.
            let tape = masked.as_ref().map(|_| Tape::default());
            let request = Request { body: &body, masked: masked.as_deref(), tape: tape.as_ref(), trace };
            let outcome = match self.timeouts.total_ms {
                0 => self.attempt(request, &mut out, deltas).await,
                ms => tokio::time::timeout(Duration::from_millis(ms), self.attempt(request, &mut out, deltas))
                    .await
                    .unwrap_or_else(|_| Err(timeout("the whole request", ms))),
            };
            // The exchange is written here, before any wait for the next
            // attempt, with the failure that ended it (also one its reading
            // did not see: the whole request's timeout, a stream that did not
            // decode).
            if let (Some(tape), Err(failure)) = (tape, &outcome) {
                tape.failed(&failure.error);
            }
            let mut failure = match outcome {
                Ok(unfinished) => {
                    // Off the request's clock: the response is complete already.
                    if let Some(reply) = unfinished {
                        reply.release().await;
                    }
                    return Ok(out);
                }
                Err(failure) => failure,
            };
            failure.error = self.scrub(failure.error);
            if out.has_streamed()
                || !failure.is_retryable()
                || !self.retries.again(&mut attempt, &failure.error, failure.retry_after, deltas).await
            {
                return Err(failure);
            }
        }
    }

    fn scrub(&self, error: Error) -> Error {
        if self.secrets.is_empty() {
            return error;
        }
        let message = self.secrets.iter().fold(error.message, |message, secret| secret.scrub(&message));
        Error::new(error.code, message)
    }

    /// One request. On success, the response when its content ended before its
    /// body did (see [`Reply::release`]).
    async fn attempt(
        &self,
        request: Request<'_>,
        out: &mut ResponseBuilder,
        deltas: &mut dyn DeltaSink,
    ) -> Result<Option<Reply>, Failure> {
        let mut reply = self.send(request).await?;
        let status = reply.status();
        if !(200..300).contains(&status) {
            let headers = reply.headers().clone();
            let body = self.read_body(&mut reply, MAX_ERROR_BODY_BYTES).await.unwrap_or_default();
            return Err(error::from_response(self.protocol.name(), status, &headers, &String::from_utf8_lossy(&body)));
        }
        if !self.model.stream {
            let body = self.read_body(&mut reply, MAX_EVENT_BYTES).await?;
            decode_whole::<P::Decoder>(self.protocol.name(), &body, out)?;
            out.flush(deltas).await;
            return Ok(None);
        }
        self.read_stream(reply, out, deltas).await
    }

    /// Sends the request, or answers it from the cassette; a cassette that
    /// records gets a tape of the response.
    async fn send(&self, request: Request<'_>) -> Result<Reply, Failure> {
        let cassette = self.cassette.as_ref().zip(request.masked);
        let mut records = false;
        if let Some((cassette, masked)) = cassette {
            if let Some(exchange) = cassette.answer(masked).map_err(Failure::not_retried)? {
                return Ok(Reply::replayed(exchange));
            }
            records = cassette.records().map_err(Failure::not_retried)?;
        }
        // Bytes are shared, not copied, between attempts.
        let mut sent = self.client.post(self.url.clone()).body(request.body.clone());
        if let Some(trace) = request.trace {
            sent = sent.header("traceparent", trace.traceparent());
            if let Some(state) = &trace.tracestate {
                sent = sent.header("tracestate", state);
            }
        }
        let response = match self.timeouts.first_byte_ms {
            0 => sent.send().await,
            ms => tokio::time::timeout(Duration::from_millis(ms), sent.send())
                .await
                .map_err(|_| timeout("the first byte of the response", ms))?,
        }
        .map_err(|e| network(self.protocol.name(), &e))?;
        let tape = match (cassette, request.tape) {
            (Some((cassette, masked)), Some(tape)) if records => {
                cassette.record(tape, masked, &response);
                Some(tape.clone())
            }
            _ => None,
        };
        Ok(Reply::live(response, tape))
    }

    /// Reads a stream until its response is complete; returns the response when
    /// its body has not ended yet.
    async fn read_stream(
        &self,
        mut reply: Reply,
        out: &mut ResponseBuilder,
        deltas: &mut dyn DeltaSink,
    ) -> Result<Option<Reply>, Failure> {
        let mut stream = StreamDecoding::<P::Decoder>::new(self.protocol.name());
        loop {
            let chunk = reply.chunk(self.protocol.name(), self.timeouts.idle_ms).await?;
            let done = stream.push(chunk.as_deref(), out)?;
            out.flush(deltas).await;
            if done {
                reply.complete();
                return Ok(chunk.is_some().then_some(reply));
            }
        }
    }

    async fn read_body(&self, reply: &mut Reply, limit: usize) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        while let Some(chunk) = reply.chunk(self.protocol.name(), self.timeouts.idle_ms).await? {
            if body.len() + chunk.len() > limit {
                body.extend_from_slice(&chunk[..limit - body.len()]);
                if limit == MAX_ERROR_BODY_BYTES {
                    break;
                }
                return Err(Error::new(
                    ErrorCode::ProviderMalformedStream,
                    format!("the response body is larger than {limit} bytes"),
                )
                .into());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl<P: Protocol> Generator for HttpGenerator<P> {
    fn generate<'a>(
        &'a self,
        request: GenerationRequest<'a>,
        wire: &'a mut WireCache,
        deltas: &'a mut dyn DeltaSink,
    ) -> BoxFuture<'a, Result<AssistantMessage, Error>> {
        Box::pin(async move {
            let previous = wire.stored_response.take().filter(|stored| stored.continues(request.messages));
            let body = encode_body(&self.protocol, &self.model, &request, previous.as_ref(), wire)?;
            let response = match self.generate_with_retries(body.into(), request.trace, deltas).await {
                Err(failure) if previous.is_some() && lost_previous_response(&failure) => {
                    // The server no longer has the response (expired or deleted):
                    // the whole history goes instead.
                    let body = encode_body(&self.protocol, &self.model, &request, None, wire)?;
                    self.generate_with_retries(body.into(), request.trace, deltas).await
                }
                response => response,
            };
            let mut response = response.map_err(|failure| failure.error)?;
            deltas.described(response.response_id.as_deref(), response.response_model.as_deref());
            if self.model.server_history {
                wire.stored_response =
                    response.response_id.take().map(|id| StoredResponse { id, next: request.messages.len() + 1 });
            }
            Ok(response.finish())
        })
    }

    fn unused_recordings(&self) -> Option<Vec<UnusedExchange>> {
        self.cassette.as_ref().filter(|cassette| cassette.replays()).map(|cassette| cassette.unused())
    }
}

/// The request body: the transcript's new messages encoded into `wire`, the
/// rest copied from it; only what follows `previous` when the request continues
/// from a response the server keeps.
pub(crate) fn encode_body<P: Protocol>(
    protocol: &P,
    model: &ModelSettings,
    request: &GenerationRequest<'_>,
    previous: Option<&StoredResponse>,
    wire: &mut WireCache,
) -> Result<Vec<u8>, Error> {
    strict_tools_check(protocol.name(), model, request)?;
    let transcript = EncodedTranscript::update(&mut wire.transcript, protocol, model, request.messages)?;
    let mut body = Vec::with_capacity(transcript.encoded_len() + BODY_HEADROOM);
    let mut fields = JsonObject::new(&mut body);
    protocol.body(model, request, transcript, previous, &mut fields);
    fields.finish();
    Ok(body)
}

/// A response the server keeps (OpenAI Responses with `server_history`): the next
/// request names it and sends only the messages after it.
#[derive(Debug)]
pub(crate) struct StoredResponse {
    /// The provider's response id.
    pub(crate) id: String,
    /// The index of the first message after the response's own.
    pub(crate) next: usize,
}

impl StoredResponse {
    /// Whether `messages` goes on from this response: its message is there, and
    /// is the assistant's.
    fn continues(&self, messages: &[Message]) -> bool {
        self.next <= messages.len() && matches!(messages[self.next - 1], Message::Assistant(_))
    }
}

/// Whether a request failed because the response it continued from is gone.
fn lost_previous_response(failure: &Failure) -> bool {
    matches!(failure.error.code, ErrorCode::ProviderInvalidRequest | ErrorCode::ProviderNotFound)
        && (failure.provider_code.as_deref() == Some("previous_response_not_found")
            || failure.param.as_deref() == Some("previous_response_id"))
}

/// One streamed response on its way through the SSE parser and a decoder.
struct StreamDecoding<D> {
    provider: &'static str,
    parser: SseParser,
    decoder: D,
    events: Vec<SseEvent>,
    bytes: usize,
}

impl<D: Decoder> StreamDecoding<D> {
    fn new(provider: &'static str) -> Self {
        StreamDecoding {
            provider,
            parser: SseParser::new(MAX_EVENT_BYTES),
            decoder: D::default(),
            events: Vec::new(),
            bytes: 0,
        }
    }

    /// Takes the next chunk (`None` at the end of the stream); `Ok(true)` once the
    /// response is complete.
    fn push(&mut self, chunk: Option<&[u8]>, out: &mut ResponseBuilder) -> Result<bool, Error> {
        let parsed = match chunk {
            Some(bytes) => {
                self.bytes += bytes.len();
                if self.bytes > MAX_STREAM_BYTES {
                    return Err(Error::new(
                        ErrorCode::ProviderMalformedStream,
                        format!("the response stream is larger than {MAX_STREAM_BYTES} bytes"),
                    ));
                }
                self.parser.feed(bytes, &mut self.events)
            }
            None => self.parser.finish(&mut self.events),
        };
        // The events before a fault in the stream are decoded first: the end of
        // the response, or an earlier fault, comes before it whatever chunks
        // the stream arrived in (below the stream's size bound).
        for event in self.events.drain(..) {
            if self.decoder.event(&event, out)? {
                return Ok(true);
            }
        }
        parsed?;
        if chunk.is_none() && !self.decoder.complete_at_end() {
            return Err(Error::new(
                ErrorCode::ProviderNetwork,
                format!("{}: the stream ended before the response was complete", self.provider),
            ));
        }
        Ok(chunk.is_none())
    }
}

fn decode_whole<D: Decoder>(provider: &str, body: &[u8], out: &mut ResponseBuilder) -> Result<(), Error> {
    let value: Value = serde_json::from_slice(body).map_err(|e| malformed(provider, &e).error)?;
    D::default().whole(&value, out)
}

/// Decodes a recorded response body offline (see [`crate::provider::decode_recorded`]),
/// given as the pieces it arrived in.
pub(crate) fn decode_recorded<P: Protocol>(
    protocol: &P,
    pieces: &[&[u8]],
    stream: bool,
) -> Result<AssistantMessage, Error> {
    let mut out = ResponseBuilder::default();
    if stream {
        let mut decoding = StreamDecoding::<P::Decoder>::new(protocol.name());
        for piece in pieces {
            if decoding.push(Some(piece), &mut out)? {
                return Ok(out.finish());
            }
        }
        decoding.push(None, &mut out)?;
    } else {
        let joined;
        let body = match pieces {
            [whole] => *whole,
            _ => {
                joined = pieces.concat();
                &joined
            }
        };
        decode_whole::<P::Decoder>(protocol.name(), body, &mut out)?;
    }
    Ok(out.finish())
}

/// One attempt's request body; with a cassette, the same masked, and the tape
/// its exchange is recorded on.
#[derive(Clone, Copy)]
struct Request<'a> {
    body: &'a bytes::Bytes,
    masked: Option<&'a [u8]>,
    tape: Option<&'a Tape>,
    /// The span whose `traceparent` goes with it.
    trace: Option<&'a SpanContext>,
}

/// Exponential backoff from `base` with ±25 % jitter, at most [`MAX_RETRY_DELAY`].
fn backoff(base: Duration, attempt: u32) -> Duration {
    let doubled = base.saturating_mul(1 << (attempt - 1).min(10)).min(MAX_RETRY_DELAY);
    doubled.mul_f64(0.75 + fastrand::f64() * 0.5).min(MAX_RETRY_DELAY)
}

fn timeout(what: &str, ms: u64) -> Failure {
    Failure::new(Error::new(ErrorCode::Timeout, format!("waited {ms} ms for {what}")))
}

fn network(provider: &str, error: &reqwest::Error) -> Failure {
    if let Some(refusal) = redirect::refusal(error) {
        return Failure {
            should_retry: Some(false),
            ..Failure::new(Error::new(ErrorCode::ProviderNetwork, format!("{provider}: {refusal}")))
        };
    }
    let kind = if error.is_connect() { "could not connect" } else { "the connection failed" };
    // reqwest's Display names the URL, never headers, so no key can appear here.
    Failure::new(Error::new(ErrorCode::ProviderNetwork, format!("{provider}: {kind}: {}", source_chain(error))))
}

fn malformed(provider: &str, error: &serde_json::Error) -> Failure {
    Failure::new(Error::new(
        ErrorCode::ProviderMalformedStream,
        format!("{provider}: the response is not valid JSON: {error}"),
    ))
}

fn source_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_fails_or_ends_where_its_bytes_do_whatever_its_chunks() {
        let chat = super::super::openai_chat::ChatCompletions { is_openai: true };
        let answer = concat!(
            r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
            "\n\ndata: [DONE]\n\n"
        );
        // What follows the end of the response is never read, even a fault.
        let complete = [answer.as_bytes(), b"\xff\xfe\n\n"].concat();
        // A fault in an event before a line that is no UTF-8: the event's is the error.
        let faulty = b"data: {\"choices\": [\x01]}\n\n\xff\n\n".to_vec();
        for body in [complete, faulty] {
            let whole = decode_recorded(&chat, &[&body], true);
            for piece in 1..body.len() {
                let pieces: Vec<&[u8]> = body.chunks(piece).collect();
                assert_eq!(decode_recorded(&chat, &pieces, true), whole, "in pieces of {piece}");
            }
            match whole {
                Ok(message) => assert_eq!(message.content, [crate::message::Part::text("Hi")]),
                Err(error) => assert!(error.message.contains("not valid JSON"), "{}", error.message),
            }
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stays_capped() {
        for _ in 0..100 {
            let wait = backoff(Duration::from_millis(100), 3);
            assert!((Duration::from_millis(300)..=Duration::from_millis(500)).contains(&wait), "{wait:?}");
            // A base past what doubling can hold once panicked when the jitter was above 1.
            assert!(backoff(Duration::from_millis(u64::MAX), 11) <= MAX_RETRY_DELAY);
        }
    }
}
