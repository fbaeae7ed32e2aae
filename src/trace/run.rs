//! A run's tracing: its `invoke_agent` span, and the `chat` and
//! `execute_tool` spans started under it.

use std::sync::{Arc, Mutex};

use super::content;
use super::context::SpanContext;
use super::span::{AttributeValue, Span, SpanKind};
use super::tracer::Tracer;
use crate::agent::RunResult;
use crate::error::Error;
use crate::message::{StopReason, ToolCall, Usage};
use crate::provider::{GenerationRequest, ModelConfig, ProviderKind};

/// Where a tool comes from, for the spans of its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSource {
    /// A tool of the host's or a built-in one.
    Function,
    /// A tool of an MCP server.
    Mcp,
    /// An agent called as a tool.
    Agent,
}

/// A tool call's span as the call's function sees it: its `traceparent`, and
/// what the runs it starts (an agent called as a tool) go under.
#[derive(Debug, Clone)]
pub struct CallTrace {
    pub(crate) context: SpanContext,
    /// Where the calling run's spans go: a run started by the call records
    /// its spans there too.
    pub(crate) tracer: Arc<Tracer>,
    /// The id the runs nested under the call share with the calling run.
    pub(crate) conversation: Arc<str>,
    /// Whether requests the call makes carry its `traceparent`.
    pub(crate) propagate: bool,
}

impl CallTrace {
    /// The call's span in a run whose id is `conversation`, recorded by `tracer`.
    pub(crate) fn new(context: SpanContext, conversation: Arc<str>, tracer: Arc<Tracer>) -> CallTrace {
        CallTrace { context, conversation, tracer, propagate: false }
    }

    /// The span whose context requests of the call carry, if they carry one.
    pub(crate) fn propagated(&self) -> Option<&SpanContext> {
        self.propagate.then_some(&self.context)
    }

    /// The W3C `traceparent` of the call's span.
    pub fn traceparent(&self) -> String {
        self.context.traceparent()
    }

    /// The W3C `tracestate` the trace carries, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.context.tracestate.as_deref()
    }
}

/// The model a run's requests go to, as its spans name it.
struct ModelIdentity {
    provider: &'static str,
    model: Option<String>,
    server: Option<(String, u16)>,
}

/// A run's tracing. Shared by the run's steps; any thread.
pub(crate) struct RunTrace {
    tracer: Arc<Tracer>,
    /// The `invoke_agent` span, until the run ends.
    span: Mutex<Option<Span>>,
    context: SpanContext,
    /// The top run's id, which its nested runs share.
    conversation: Arc<str>,
    model: ModelIdentity,
    /// How many messages the previous request's span recorded, and the
    /// identity of the last of them.
    captured: Mutex<Option<(usize, u64)>>,
}

impl RunTrace {
    /// The tracing of a run starting now, under `parent` (the host's span, or
    /// the call of the run this one is nested in, whose tracer it takes) when
    /// given, else with its agent's `tracer`; `None` when nothing records spans.
    pub(crate) fn start(
        tracer: &Arc<Tracer>,
        parent: Option<&CallTrace>,
        agent_name: Option<&str>,
        run_id: &Arc<str>,
        model: &ModelConfig,
    ) -> Option<Arc<RunTrace>> {
        let tracer = parent.map_or(tracer, |parent| &parent.tracer);
        // The host's decision not to sample its trace holds for ferrule's part.
        if !tracer.is_on() || parent.is_some_and(|parent| !parent.context.sampled) {
            return None;
        }
        let (context, parent_span, conversation) = match parent {
            Some(parent) => (parent.context.child(), Some(parent.context.span_id), Arc::clone(&parent.conversation)),
            None => (SpanContext::root(), None, Arc::clone(run_id)),
        };
        let name = agent_name.map_or("invoke_agent".to_owned(), |name| format!("invoke_agent {name}"));
        let mut span = Span::start(tracer, context.clone(), parent_span, name, SpanKind::Internal);
        let model = ModelIdentity::of(model);
        span.set("gen_ai.operation.name", "invoke_agent");
        span.set("gen_ai.provider.name", model.provider);
        if let Some(name) = agent_name {
            span.set("gen_ai.agent.name", name);
        }
        if let Some(name) = &model.model {
            span.set("gen_ai.request.model", name.as_str());
        }
        span.set("gen_ai.conversation.id", &*conversation);
        span.set("ferrule.run.id", &**run_id);
        Some(Arc::new(RunTrace {
            tracer: Arc::clone(tracer),
            span: Mutex::new(Some(span)),
            context,
            conversation,
            model,
            captured: Mutex::new(None),
        }))
    }

    /// What a call whose span is `span` passes to its function.
    pub(crate) fn call(&self, span: &Span) -> CallTrace {
        let propagate = self.propagates();
        let context = span.context().clone();
        CallTrace { propagate, ..CallTrace::new(context, Arc::clone(&self.conversation), Arc::clone(&self.tracer)) }
    }

    /// What a hook consulted in the run passes on: the run span's.
    pub(crate) fn run_call(&self) -> CallTrace {
        CallTrace::new(self.context.clone(), Arc::clone(&self.conversation), Arc::clone(&self.tracer))
    }

    /// Whether spans carry what was said.
    pub(crate) fn captures_content(&self) -> bool {
        self.tracer.config.capture_content
    }

    /// Whether requests carry `traceparent`.
    pub(crate) fn propagates(&self) -> bool {
        self.tracer.config.propagate
    }

    /// Adds an event to the run's span.
    pub(crate) fn event(&self, name: &str, attributes: Vec<(&str, AttributeValue)>) {
        if let Some(span) = self.span.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            span.event(name, attributes);
        }
    }

    /// A `chat` span for the model request `request`, started now.
    pub(crate) fn chat(&self, turn: u32, request: &GenerationRequest<'_>) -> Span {
        let name = match &self.model.model {
            Some(model) => format!("chat {model}"),
            None => "chat".to_owned(),
        };
        let mut span =
            Span::start(&self.tracer, self.context.child(), Some(self.context.span_id), name, SpanKind::Client);
        span.set("gen_ai.operation.name", "chat");
        span.set("gen_ai.provider.name", self.model.provider);
        if let Some(model) = &self.model.model {
            span.set("gen_ai.request.model", model.as_str());
        }
        if let Some((address, port)) = &self.model.server {
            span.set("server.address", address.as_str());
            span.set("server.port", u32::from(*port));
        }
        span.set("gen_ai.conversation.id", &*self.conversation);
        span.set("ferrule.turn", turn);
        if self.captures_content() {
            if let Some(system) = request.system {
                span.set("gen_ai.system_instructions", content::system(system));
            }
            // What the previous request's span recorded is not repeated, so a
            // long run's spans grow with it and not with its square: when this
            // request begins with the previous one's messages (its last one in
            // the same place), only those after them are recorded. A history
            // compacted or replaced since is recorded whole.
            let messages = request.messages;
            let mut captured = self.captured.lock().unwrap_or_else(|e| e.into_inner());
            let earlier = match *captured {
                Some((count, last)) if count <= messages.len() && content::identity(&messages[count - 1]) == last => {
                    count
                }
                _ => 0,
            };
            span.set("gen_ai.input.messages", content::messages(&messages[earlier..]));
            if earlier > 0 {
                span.set("ferrule.input.messages.earlier", earlier as u64);
            }
            *captured = messages.last().map(|last| (messages.len(), content::identity(last)));
        }
        span
    }

    /// An `execute_tool` span for `call`, started now.
    pub(crate) fn tool(&self, call: &ToolCall, source: ToolSource) -> Span {
        let name = format!("execute_tool {}", call.name);
        let mut span =
            Span::start(&self.tracer, self.context.child(), Some(self.context.span_id), name, SpanKind::Internal);
        span.set("gen_ai.operation.name", "execute_tool");
        span.set("gen_ai.tool.name", call.name.as_str());
        span.set("gen_ai.tool.call.id", call.id.as_str());
        span.set("gen_ai.tool.type", if source == ToolSource::Mcp { "extension" } else { "function" });
        let source = match source {
            ToolSource::Function => "function",
            ToolSource::Mcp => "mcp",
            ToolSource::Agent => "agent",
        };
        span.set("ferrule.tool.source", source);
        span.set("gen_ai.conversation.id", &*self.conversation);
        if self.captures_content() {
            span.set("gen_ai.tool.call.arguments", call.arguments.as_str());
        }
        span
    }

    /// Ends the run's span with what the run came to.
    pub(crate) fn end(&self, result: &RunResult) {
        let Some(mut span) = self.span.lock().unwrap_or_else(|e| e.into_inner()).take() else { return };
        set_usage(&mut span, &result.usage);
        span.set("ferrule.run.status", format!("{:?}", result.status).to_lowercase());
        span.set("ferrule.run.rounds", result.rounds);
        if let Some(error) = &result.error {
            fail(&mut span, error);
        }
        span.end();
    }
}

impl ModelIdentity {
    fn of(config: &ModelConfig) -> ModelIdentity {
        let provider = match config.provider {
            ProviderKind::Openai | ProviderKind::OpenaiResponses | ProviderKind::OpenaiCompatible => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gcp.gemini",
            ProviderKind::Scripted => "ferrule.scripted",
            ProviderKind::Host => "ferrule.host",
        };
        let server = config.base_url.as_deref().and_then(|url| reqwest::Url::parse(url).ok()).and_then(|url| {
            let port = url.port_or_known_default()?;
            Some((url.host_str()?.to_owned(), port))
        });
        ModelIdentity { provider, model: config.name.clone(), server }
    }
}

/// Sets the token counts of `usage`.
pub(crate) fn set_usage(span: &mut Span, usage: &Usage) {
    span.set("gen_ai.usage.input_tokens", usage.input_tokens);
    span.set("gen_ai.usage.output_tokens", usage.output_tokens);
    if usage.cached_tokens > 0 {
        span.set("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens);
    }
}

/// Marks `span` failed with `error`: `error.type` is its code.
pub(crate) fn fail(span: &mut Span, error: &Error) {
    let code = serde_json::to_value(error.code).ok().and_then(|v| v.as_str().map(str::to_owned));
    span.fail(code.as_deref().unwrap_or("ERROR"), &error.message);
}

/// The conventions' name of a stop reason.
pub(crate) fn finish_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::Length => "length",
        StopReason::ContentFilter => "content_filter",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}
