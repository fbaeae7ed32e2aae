//! One model request: the generator streams the response, each delta becomes an
//! event of the turn, and the run's cancellation abandons the request.

use super::context::RunContext;
use super::event::EventKind;
use super::event_queue::EventEmitter;
use super::next_step::Ending;
use crate::error::Error;
use crate::message::AssistantMessage;
use crate::provider::{Delta, DeltaSink, GenerationRequest, WireCache};
use crate::trace::{chat, Span};
use crate::BoxFuture;

/// The model's response to `request` in `turn`; the run's end when the request
/// failed or the run was cancelled while it streamed.
pub(crate) async fn generate(
    run: &RunContext,
    request: GenerationRequest<'_>,
    wire: &mut WireCache,
    turn: u32,
) -> Result<AssistantMessage, Ending> {
    let span = run.trace.as_ref().map(|trace| trace.chat(turn, &request));
    let propagated = span.as_ref().filter(|_| run.trace.as_ref().is_some_and(|t| t.propagates()));
    let propagated = propagated.map(|span| span.context().clone());
    let request = GenerationRequest { trace: propagated.as_ref(), ..request };
    let mut deltas = TurnDeltas { events: &run.events, run_id: &run.id, turn, span };
    let response = tokio::select! {
        biased;
        _ = run.cancel.cancelled() => Err(Ending::Cancelled),
        response = run.agent().generator.generate(request, wire, &mut deltas) => response.map_err(Ending::Failed),
    };
    if let Some(span) = deltas.span {
        match &response {
            Ok(answer) => chat::answered(span, answer, run.trace.as_ref().is_some_and(|t| t.captures_content())),
            Err(Ending::Failed(error)) => chat::failed(span, error),
            // Dropped: a span abandoned when its run was cancelled.
            Err(_) => {}
        }
    }
    response
}

/// Forwards a turn's streamed deltas as events.
struct TurnDeltas<'a> {
    events: &'a EventEmitter,
    run_id: &'a str,
    turn: u32,
    /// The request's span, when the run is traced.
    span: Option<Span>,
}

impl DeltaSink for TurnDeltas<'_> {
    fn retry<'a>(&'a mut self, attempt: u32, error: &'a Error, delay: std::time::Duration) -> BoxFuture<'a, ()> {
        let (events, run_id, turn, span) = (self.events, self.run_id, self.turn, self.span.as_mut());
        // Queued when awaited, as `send`'s deltas are: a retry's future
        // dropped unpolled announces nothing.
        Box::pin(async move {
            if let Some(span) = span {
                chat::retried(span, attempt, error, delay);
            }
            crate::log::log!(
                Warn,
                "ferrule::provider",
                format!("the model request failed and is tried again in {} ms: {}", delay.as_millis(), error.message),
                "run_id" => run_id,
                "turn" => turn,
                "attempt" => attempt,
                "code" => error.code,
                "delay_ms" => delay.as_millis() as u64,
            );
            let kind = EventKind::Retry { attempt, error: error.clone(), delay_ms: delay.as_millis() as u64 };
            events.emit(kind).await
        })
    }

    fn described(&mut self, id: Option<&str>, model: Option<&str>) {
        if let Some(span) = &mut self.span {
            chat::described(span, id, model);
        }
    }

    fn send<'a>(&'a mut self, delta: Delta<'a>) -> BoxFuture<'a, ()> {
        let turn = self.turn;
        let events = self.events;
        Box::pin(async move {
            if !events.is_enabled() {
                return;
            }
            let kind = match delta {
                Delta::Text(text) => EventKind::MessageDelta { turn, text: Some(text.to_owned()), thinking: None },
                Delta::Thinking(thinking) => {
                    EventKind::MessageDelta { turn, text: None, thinking: Some(thinking.to_owned()) }
                }
                Delta::ToolCall { index, id, name, arguments } => EventKind::ToolCallDelta {
                    turn,
                    index,
                    id: id.map(str::to_owned),
                    name: name.map(str::to_owned),
                    arguments_delta: arguments.to_owned(),
                },
            };
            events.emit(kind).await;
        })
    }
}
