//! The `model` object of the agent configuration: which provider, how to reach
//! it, and how long to wait.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::ScriptTurn;

/// Which provider serves the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions.
    Openai,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Any server speaking the Chat Completions wire (needs `base_url`).
    OpenaiCompatible,
    /// Google Gemini (`generateContent`).
    Gemini,
    /// The offline scripted model.
    Scripted,
    /// A model the host runs, set with `ferrule_agent_builder_set_model` (or a
    /// binding's model); `name` says which.
    Host,
}

/// Request timeouts in milliseconds; 0 means none. The defaults keep a dead
/// connection from holding a run forever while leaving slow reasoning models room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// Establishing the connection (default 30 s).
    pub connect_ms: u64,
    /// Until the response headers arrive (default 10 min).
    pub first_byte_ms: u64,
    /// Between two chunks of a stream (default 5 min).
    pub idle_ms: u64,
    /// The whole request, retries not included (default none).
    pub total_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { connect_ms: 30_000, first_byte_ms: 600_000, idle_ms: 300_000, total_ms: 0 }
    }
}

/// The `model` object.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The provider.
    pub provider: ProviderKind,
    /// The model name.
    #[serde(default)]
    pub name: Option<String>,
    /// The API base URL (see DESIGN: vendor SDK conventions).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable that holds the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The scripted model's turns.
    #[serde(default)]
    pub script: Vec<ScriptTurn>,
    /// Stream responses (default true).
    #[serde(default = "default_true")]
    pub stream: bool,
    /// Output token limit per response.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Retries of a failed request.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The first retry's delay in milliseconds (doubling, with jitter), unless
    /// the provider says how long to wait.
    #[serde(default = "default_retry_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// Whether the model takes images (default true); images it cannot take are
    /// replaced by a note.
    #[serde(default = "default_true")]
    pub image_input: bool,
    /// Whether the provider can guarantee strict tool arguments (default: true
    /// for `openai` and `openai-responses`, false otherwise).
    #[serde(default)]
    pub strict_tools: Option<bool>,
    /// OpenAI Responses: whether to ask for the encrypted content of reasoning
    /// items, so a reasoning model keeps its reasoning across tool rounds while
    /// the server stores nothing (default: true for reasoning models by name:
    /// o1, o3, o4, gpt-5 except its chat models, gpt-oss, codex). Models without
    /// reasoning refuse it.
    #[serde(default)]
    pub encrypted_reasoning: Option<bool>,
    /// OpenAI Responses: the server keeps the history (`store: true`), and each
    /// request of a run after the first names the previous response and sends
    /// only the messages that followed it. A response the server no longer has
    /// is answered by sending the whole history. Default false.
    #[serde(default)]
    pub server_history: bool,
    /// Gemini: how the model thinks (`generationConfig.thinkingConfig`); left
    /// out, the model's default. Other providers refuse it.
    #[serde(default)]
    pub thinking: Option<Thinking>,
    /// Request timeouts.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// A cassette of the model's HTTP exchanges: written as they happen, or
    /// served in their place with no network (docs/recording.md). HTTP
    /// providers only.
    #[serde(default)]
    pub record: Option<RecordConfig>,
}

/// The `model.record` object: where the cassette is and what is done with it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordConfig {
    /// The cassette file (JSON lines), relative to the process's working
    /// directory unless absolute.
    pub path: String,
    /// What is done with it (default `replay`).
    #[serde(default)]
    pub mode: RecordMode,
}

/// What a cassette is used for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordMode {
    /// Every request goes to the provider, and each exchange is written to a
    /// new cassette (an existing file is replaced when the agent is built).
    Record,
    /// Every request is answered from the cassette, never from the network; a
    /// request no recorded exchange matches fails with `REPLAY_MISMATCH`. No
    /// API key is needed.
    #[default]
    Replay,
    /// A request a recorded exchange matches is answered from it; any other
    /// goes to the provider, and its exchange is added to the cassette.
    ReplayOrRecord,
}

/// How a Gemini model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Thinking {
    /// Stream summaries of the model's thoughts (as thinking deltas and parts).
    #[serde(default)]
    pub include_thoughts: Option<bool>,
    /// Tokens the model may think with (Gemini 2.5: 0 turns thinking off where
    /// the model allows it, -1 lets the model decide).
    #[serde(default)]
    pub budget_tokens: Option<i32>,
    /// How much the model thinks (Gemini 3).
    #[serde(default)]
    pub level: Option<ThinkingLevel>,
}

/// A Gemini thinking level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// As little as the model can.
    Minimal,
    /// Little.
    Low,
    /// Some.
    Medium,
    /// As much as it needs.
    High,
}

fn default_true() -> bool {
    true
}

fn default_max_retries() -> u32 {
    2
}

fn default_retry_backoff_ms() -> u64 {
    500
}
