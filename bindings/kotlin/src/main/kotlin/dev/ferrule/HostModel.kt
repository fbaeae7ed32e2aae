package dev.ferrule

import com.sun.jna.Pointer
import kotlinx.coroutines.flow.Flow
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.builtins.ListSerializer
import kotlinx.serialization.json.JsonElement

/**
 * A model the host runs: an on-device model, a local engine, a gateway with a
 * protocol of its own. Give it to [Agent] with `"model": {"provider": "host",
 * "name": ...}`; everything after the model (call validation, approvals,
 * hooks, events, retries) is as for a built-in provider.
 */
fun interface HostModel {
    /**
     * The answer to [request] as a flow of [ModelDelta]s. The flow is collected
     * in a coroutine on the agent's context, cancelled when the run no longer
     * waits; its end completes the answer, and an exception fails it (a
     * [ModelException] says its code and whether it may be asked again; any other
     * is `PROVIDER_SERVER`, not retried).
     */
    fun generate(request: ModelRequest): Flow<ModelDelta>
}

/** A piece of a host model's answer. */
sealed interface ModelDelta {
    /** Answer text. */
    data class Text(val text: String) : ModelDelta

    /** Reasoning text. */
    data class Thinking(val text: String) : ModelDelta

    /**
     * A piece of the call at [index] (its position in the answer, from 0): its id
     * and name when this piece carries them, and more argument text. A call that
     * never gets an id gets one made up.
     */
    data class ToolCall(val index: Int, val id: String? = null, val name: String? = null, val arguments: String = "") :
        ModelDelta

    /** The answer's token counts (the last one wins). */
    data class Tokens(val usage: Usage) : ModelDelta

    /** The stop reason the answer completes with: end_turn, tool_use, length or content_filter. */
    data class Stop(val reason: String) : ModelDelta
}

/**
 * Fails a host model's request with [code] (a `PROVIDER_*` code, `TIMEOUT` or
 * `RESOURCE_EXHAUSTED`); a [retryable] failure is asked again, as the model's
 * `max_retries` allows, when nothing had streamed yet.
 */
class ModelException(val code: ErrorCode, message: String, val retryable: Boolean = false) : Exception(message)

/** A tool as a host model is told of it. */
@Serializable
data class ModelTool(
    val name: String,
    val description: String,
    @SerialName("input_schema") val inputSchema: JsonElement,
    val strict: Boolean = false,
)

/** One request to a host model (see docs/host-model.md). */
class ModelRequest internal constructor(options: Options, private val newMessagesJson: String) {
    /** The configuration's model name. */
    val model: String = options.model
    /** The id of the run making the request, as in its events: an engine caching per conversation keys it by this. */
    val runId: String = options.runId
    /** The run's round, from 1. */
    val turn: Int = options.turn
    /** The agent's system prompt, if any. */
    val system: String? = options.system
    /** How many messages the transcript holds. */
    val messageCount: Int = options.messageCount
    /** The index of the first message the run's previous request did not hold. */
    val firstNewMessage: Int = options.firstNewMessage
    /** The tools the model may call this round. */
    val tools: List<ModelTool> = options.tools
    /** "auto", "none", "required" or {"name": ...}. */
    val toolChoice: JsonElement = options.toolChoice
    /** The schema the final answer must meet, if any. */
    val outputSchema: JsonElement? = options.outputSchema
    /** The configuration's output limit, if any. */
    val maxTokens: Int? = options.maxTokens

    /** The messages from [firstNewMessage] on: what an engine keeping its own cache has not read. */
    fun newMessages(): List<Message> = FerruleJson.decodeFromString(ListSerializer(Message.serializer()), newMessagesJson)

    @Serializable
    internal class Options(
        val model: String,
        @SerialName("run_id") val runId: String,
        val turn: Int,
        val system: String? = null,
        @SerialName("message_count") val messageCount: Int,
        @SerialName("first_new_message") val firstNewMessage: Int,
        val tools: List<ModelTool> = emptyList(),
        @SerialName("tool_choice") val toolChoice: JsonElement,
        @SerialName("output_schema") val outputSchema: JsonElement? = null,
        @SerialName("max_tokens") val maxTokens: Int? = null,
    )
}

/** Sets [model] on a builder as its model [name], registered `nonblocking`; its requests run on [host]. */
internal fun HostModel.register(builder: Pointer, name: String, host: CoroutineHost) {
    val bytes = name.utf8()
    val memory = bytes.memory()
    val spec = ModelSpec().apply {
        struct_size = size()
        this.name = memory; name_len = bytes.length
        generate = Native.directAddress(CoroutineHost.request)
        free_user_data = Handles.release
        nonblocking = 1
    }
    val model = this
    val generate: (Pointer) -> Unit = { handle -> model.answer(ModelAnswer(handle), host) }
    Handles.handOver(generate) { key ->
        spec.user_data = key
        Native.lib.ferrule_agent_builder_set_model(builder, spec)
    }?.let { throw it }
}

private fun HostModel.answer(answer: ModelAnswer, host: CoroutineHost) = host.answer({ onCancel, key, free ->
    Native.lib.ferrule_model_request_on_cancel(answer.handle, onCancel, key, free)
}, fallback = { answer.fail(ErrorCode.PROVIDER_SERVER, "the model failed", false) }) {
    runCatching {
        val request = ModelRequest(
            FerruleJson.decodeFromString(ModelRequest.Options.serializer(),
                Native.lib.ferrule_model_request_options_json(answer.handle).text()),
            Native.lib.ferrule_model_request_new_messages_json(answer.handle).text(),
        )
        var stop = ""
        generate(request).collect { delta -> if (delta is ModelDelta.Stop) stop = delta.reason else answer.send(delta) }
        stop
    }.fold({ answer.complete(it) }, { failure ->
        when (failure) {
            is ModelException -> answer.fail(failure.code, failure.reason("the model"), failure.retryable)
            else -> answer.fail(ErrorCode.PROVIDER_SERVER, failure.reason("the model"), false)
        }
    })
}

/** The answer of one request, through its handle. */
private class ModelAnswer(val handle: Pointer) {
    fun send(delta: ModelDelta) {
        val lib = Native.lib
        FerruleException.check(when (delta) {
            is ModelDelta.Text -> delta.text.utf8().let { lib.ferrule_model_request_text_delta(handle, it, it.length) }
            is ModelDelta.Thinking ->
                delta.text.utf8().let { lib.ferrule_model_request_thinking_delta(handle, it, it.length) }
            is ModelDelta.ToolCall -> {
                val id = (delta.id ?: "").utf8()
                val name = (delta.name ?: "").utf8()
                val arguments = delta.arguments.utf8()
                lib.ferrule_model_request_tool_call_delta(handle, delta.index, id, id.length, name, name.length,
                    arguments, arguments.length)
            }
            is ModelDelta.Tokens -> with(delta.usage) {
                lib.ferrule_model_request_usage(handle, inputTokens, outputTokens, cachedTokens)
            }
            is ModelDelta.Stop -> null
        })
    }

    fun complete(stopReason: String) {
        val bytes = stopReason.utf8Or { "" }
        FerruleException.take(Native.lib.ferrule_model_request_complete(handle, bytes, bytes.length))
    }

    fun fail(code: ErrorCode, message: String, retryable: Boolean) {
        val bytes = message.utf8Or { "the model failed with a message that is not valid Unicode (${it.detail})" }
        FerruleException.take(
            Native.lib.ferrule_model_request_fail(handle, code.value, bytes, bytes.length, if (retryable) 1 else 0))
    }
}
