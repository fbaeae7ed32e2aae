package dev.ferrule

import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonElement

/**
 * An agent's configuration: the configuration JSON of the C ABI, field for
 * field (docs/json.md, "Agent config"). A null field is left out and takes ferrule's
 * default.
 */
@Serializable
data class AgentConfig(
    val model: ModelConfig,
    val system: String? = null,
    /** "parallel" (the default) or "sequential". */
    @SerialName("tool_execution") val toolExecution: String? = null,
    /** "auto", "none", "required" or `{"name": "<tool>"}`. */
    @SerialName("tool_choice") val toolChoice: JsonElement? = null,
    @SerialName("max_rounds") val maxRounds: Int? = null,
    @SerialName("max_concurrent_tools") val maxConcurrentTools: Int? = null,
    @SerialName("tool_timeout_ms") val toolTimeoutMs: Long? = null,
    @SerialName("run_timeout_ms") val runTimeoutMs: Long? = null,
    @SerialName("output_schema") val outputSchema: JsonElement? = null,
    @SerialName("output_retries") val outputRetries: Int? = null,
    val history: History? = null,
    @SerialName("hook_timeout_ms") val hookTimeoutMs: Long? = null,
    @SerialName("max_tool_result_bytes") val maxToolResultBytes: Long? = null,
    @SerialName("builtin_tools") val builtinTools: BuiltinTools? = null,
)

/** The `model` object: which provider serves the agent and how to reach it. */
@Serializable
data class ModelConfig(
    /** "openai", "openai-responses", "anthropic", "openai-compatible" or "scripted". */
    val provider: String,
    val name: String? = null,
    @SerialName("base_url") val baseUrl: String? = null,
    /** The environment variable holding the API key. */
    @SerialName("api_key_env") val apiKeyEnv: String? = null,
    val headers: Map<String, String>? = null,
    /** The scripted model's turns. */
    val script: List<JsonElement>? = null,
    val stream: Boolean? = null,
    @SerialName("max_tokens") val maxTokens: Int? = null,
    @SerialName("max_retries") val maxRetries: Int? = null,
    @SerialName("retry_backoff_ms") val retryBackoffMs: Long? = null,
    val timeouts: Timeouts? = null,
    @SerialName("image_input") val imageInput: Boolean? = null,
    @SerialName("strict_tools") val strictTools: Boolean? = null,
    @SerialName("encrypted_reasoning") val encryptedReasoning: Boolean? = null,
    @SerialName("server_history") val serverHistory: Boolean? = null,
)

/** Time limits of one model request, in milliseconds. */
@Serializable
data class Timeouts(
    @SerialName("connect_ms") val connectMs: Long? = null,
    @SerialName("first_byte_ms") val firstByteMs: Long? = null,
    @SerialName("idle_ms") val idleMs: Long? = null,
    @SerialName("total_ms") val totalMs: Long? = null,
)

/** The history budget. */
@Serializable
data class History(@SerialName("max_input_tokens") val maxInputTokens: Long)

/** Selects and configures the built-in tools. */
@Serializable
data class BuiltinTools(
    @SerialName("working_directory") val workingDirectory: String? = null,
    /** The tools offered, built-in and host alike: null the default selection, empty none. */
    val allowed: List<String>? = null,
    val excluded: List<String>? = null,
    val disable: Boolean? = null,
    val confine: Boolean? = null,
    @SerialName("bash_timeout_s") val bashTimeoutS: Long? = null,
    @SerialName("bash_pass_env") val bashPassEnv: List<String>? = null,
    @SerialName("needs_approval") val needsApproval: List<String>? = null,
)
