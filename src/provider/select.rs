//! The generator a `model` configuration names, with its endpoint and key.
//!
//! Base URLs follow each vendor's SDK: for `openai`, `openai-responses` and
//! `openai-compatible` the base includes the version path and ferrule appends
//! `/chat/completions` or `/responses`; for `anthropic` it is the root and ferrule
//! appends `/v1/messages`; for `gemini` too it is the root, as Google's SDKs
//! read `GOOGLE_GEMINI_BASE_URL`, and ferrule appends
//! `/v1beta/models/<name>:streamGenerateContent?alt=sse` (or `:generateContent`). Keys
//! come from the environment: `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
//! `GEMINI_API_KEY`, or the variable `api_key_env` names; Gemini's goes in the
//! `x-goog-api-key` header, never in the URL. An
//! `openai-compatible` server gets a key only when `api_key_env` names one, so an
//! OpenAI key never goes to another server.

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};

use super::anthropic::Messages;
use super::gemini::Gemini;
use super::http::{Endpoint, HttpGenerator, ModelSettings, Secret};
use super::openai_chat::ChatCompletions;
use super::openai_responses::Responses;
use super::{Generator, ModelConfig, ProviderKind, RecordMode, ScriptedGenerator};
use crate::error::{Error, ErrorCode, Result};

/// The smallest `max_output_tokens` the Responses API accepts.
const RESPONSES_MIN_OUTPUT_TOKENS: u32 = 16;

const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
const ANTHROPIC_VERSION: &str = "2023-06-01";
const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// Builds the generator `config` names.
pub(crate) fn generator_for(config: &ModelConfig) -> Result<Box<dyn Generator>> {
    let provider = config.provider;
    if let Some(thinking) = &config.thinking {
        if provider != ProviderKind::Gemini {
            return Err(Error::invalid_arg("model.thinking: only the gemini provider takes it"));
        }
        if thinking.budget_tokens.is_some() && thinking.level.is_some() {
            return Err(Error::invalid_arg(
                "model.thinking: give budget_tokens (Gemini 2.5) or level (Gemini 3), not both; Gemini refuses both",
            ));
        }
    }
    if config.record.is_some() && matches!(provider, ProviderKind::Scripted | ProviderKind::Host) {
        return Err(Error::invalid_arg(
            "model.record: only the HTTP providers have exchanges to record; the scripted and host models have none",
        ));
    }
    if provider == ProviderKind::Scripted {
        return Ok(Box::new(ScriptedGenerator::new(config.script.clone())?));
    }
    if provider == ProviderKind::Host {
        return Err(Error::invalid_arg(
            "model.provider is \"host\", but no model was set: set it with ferrule_agent_builder_set_model (or the binding's model option)",
        ));
    }
    if config.server_history && provider != ProviderKind::OpenaiResponses {
        return Err(Error::invalid_arg(
            "model.server_history: only the openai-responses provider keeps the history on the server",
        ));
    }
    let name = config
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| Error::invalid_arg("model.name is required for this provider"))?;
    let settings = ModelSettings {
        max_tokens: config.max_tokens,
        stream: config.stream,
        image_input: config.image_input,
        strict_tools: config
            .strict_tools
            .unwrap_or(matches!(provider, ProviderKind::Openai | ProviderKind::OpenaiResponses)),
        // A server that keeps the history keeps the reasoning too.
        encrypted_reasoning: provider == ProviderKind::OpenaiResponses
            && !config.server_history
            && config.encrypted_reasoning.unwrap_or_else(|| is_reasoning_model(&name)),
        server_history: config.server_history,
        thinking: config.thinking,
        name,
    };
    Ok(match provider {
        ProviderKind::Openai => {
            let endpoint = openai_endpoint(config, "/chat/completions", Some("OPENAI_API_KEY"))?;
            Box::new(HttpGenerator::new(ChatCompletions { is_openai: true }, config, settings, endpoint)?)
        }
        ProviderKind::OpenaiResponses => {
            if let Some(max) = config.max_tokens.filter(|&max| max < RESPONSES_MIN_OUTPUT_TOKENS) {
                return Err(Error::invalid_arg(format!(
                    "model.max_tokens: the Responses API takes at least {RESPONSES_MIN_OUTPUT_TOKENS} output tokens, not {max}"
                )));
            }
            let endpoint = openai_endpoint(config, "/responses", Some("OPENAI_API_KEY"))?;
            Box::new(HttpGenerator::new(Responses, config, settings, endpoint)?)
        }
        ProviderKind::OpenaiCompatible => {
            if config.base_url.is_none() {
                return Err(Error::invalid_arg("model.base_url is required for the openai-compatible provider"));
            }
            let endpoint = openai_endpoint(config, "/chat/completions", None)?;
            Box::new(HttpGenerator::new(ChatCompletions { is_openai: false }, config, settings, endpoint)?)
        }
        ProviderKind::Anthropic => {
            let base = base_url(config, "ANTHROPIC_BASE_URL", ANTHROPIC_BASE_URL);
            let key = api_key(config, Some("ANTHROPIC_API_KEY"))?;
            let mut headers = HeaderMap::new();
            headers.insert("anthropic-version", HeaderValue::from_static(ANTHROPIC_VERSION));
            if let Some(key) = &key {
                headers.insert("x-api-key", sensitive(key.expose())?);
            }
            let endpoint = Endpoint { url: format!("{base}/v1/messages"), headers, key };
            Box::new(HttpGenerator::new(Messages, config, settings, endpoint)?)
        }
        ProviderKind::Gemini => {
            let endpoint = gemini_endpoint(config, &settings.name)?;
            Box::new(HttpGenerator::new(Gemini, config, settings, endpoint)?)
        }
        ProviderKind::Scripted | ProviderKind::Host => unreachable!("handled above"),
    })
}

/// `{base}/v1beta/models/<name>:streamGenerateContent?alt=sse` (or `:generateContent`),
/// with the key in `x-goog-api-key`. The name may say `models/` or
/// `tunedModels/` itself; it may not leave the path.
fn gemini_endpoint(config: &ModelConfig, name: &str) -> Result<Endpoint> {
    let path = match name.starts_with("models/") || name.starts_with("tunedModels/") {
        true => name.to_owned(),
        false => format!("models/{name}"),
    };
    let resource = path.split_once('/').map_or("", |(_, id)| id);
    if resource.is_empty() || !resource.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) {
        return Err(Error::invalid_arg(format!(
            "model.name: {name:?} is not a Gemini model name (letters, digits, '.', '-' and '_', after an optional models/ or tunedModels/)"
        )));
    }
    let method = if config.stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
    let base = base_url(config, "GOOGLE_GEMINI_BASE_URL", GEMINI_BASE_URL);
    let key = api_key(config, Some("GEMINI_API_KEY"))?;
    let mut headers = HeaderMap::new();
    if let Some(key) = &key {
        headers.insert("x-goog-api-key", sensitive(key.expose())?);
    }
    Ok(Endpoint { url: format!("{base}/v1beta/{path}:{method}"), headers, key })
}

/// Decodes a recorded response body of `provider` into the message it holds, the
/// way a run would: an SSE stream, or a whole JSON body when `stream` is false.
/// No network; for replaying recordings and measuring the parsers. The scripted
/// provider has no wire format and is refused.
pub fn decode_recorded(provider: ProviderKind, body: &[u8], stream: bool) -> Result<crate::message::AssistantMessage> {
    decode_pieces(provider, &[body], stream)
}

/// [`decode_recorded`] of a body that arrived in `pieces`, as a stream arrives in
/// chunks of any size.
pub(crate) fn decode_pieces(
    provider: ProviderKind,
    pieces: &[&[u8]],
    stream: bool,
) -> Result<crate::message::AssistantMessage> {
    use super::http::decode_recorded;
    match provider {
        ProviderKind::Openai => decode_recorded(&ChatCompletions { is_openai: true }, pieces, stream),
        ProviderKind::OpenaiCompatible => decode_recorded(&ChatCompletions { is_openai: false }, pieces, stream),
        ProviderKind::OpenaiResponses => decode_recorded(&Responses, pieces, stream),
        ProviderKind::Anthropic => decode_recorded(&Messages, pieces, stream),
        ProviderKind::Gemini => decode_recorded(&Gemini, pieces, stream),
        ProviderKind::Scripted | ProviderKind::Host => {
            Err(Error::invalid_arg("the scripted and host providers have no wire format to decode"))
        }
    }
}

/// Whether an OpenAI model name (after any `vendor/` prefix) is a reasoning
/// model's, whose Responses can carry encrypted reasoning.
fn is_reasoning_model(name: &str) -> bool {
    let name = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let family = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', '_']) || prefix == "gpt-5")
    };
    (family("o1") || family("o3") || family("o4") || family("gpt-5") || family("gpt-oss") || family("codex"))
        && !name.contains("-chat")
}

fn openai_endpoint(config: &ModelConfig, path: &str, default_key: Option<&str>) -> Result<Endpoint> {
    let base = base_url(config, "OPENAI_BASE_URL", OPENAI_BASE_URL);
    let key = api_key(config, default_key)?;
    let mut headers = HeaderMap::new();
    if let Some(key) = &key {
        headers.insert(AUTHORIZATION, sensitive(&format!("Bearer {}", key.expose()))?);
    }
    Ok(Endpoint { url: format!("{base}{path}"), headers, key })
}

fn base_url(config: &ModelConfig, env: &str, default: &str) -> String {
    let base = match &config.base_url {
        Some(url) => url.clone(),
        None => std::env::var(env).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_owned()),
    };
    base.trim_end_matches('/').to_owned()
}

/// The key from `api_key_env`, else from `default_env`; required whenever a
/// variable is named, except by a model that only replays a cassette (a key
/// that is set is still masked out of what it matches).
fn api_key(config: &ModelConfig, default_env: Option<&str>) -> Result<Option<Secret>> {
    let Some(variable) = config.api_key_env.as_deref().or(default_env) else { return Ok(None) };
    let replays_only = config.record.as_ref().is_some_and(|record| record.mode == RecordMode::Replay);
    match std::env::var(variable) {
        Ok(key) if !key.trim().is_empty() => Ok(Some(Secret::new(key.trim().to_owned()))),
        _ if replays_only => Ok(None),
        _ => Err(Error::new(
            ErrorCode::ProviderAuth,
            format!("model: the environment variable {variable} that should hold the API key is not set"),
        )),
    }
}

fn sensitive(value: &str) -> Result<HeaderValue> {
    let mut value = HeaderValue::try_from(value)
        .map_err(|_| Error::new(ErrorCode::ProviderAuth, "model: the API key is not a valid HTTP header value"))?;
    value.set_sensitive(true);
    Ok(value)
}
