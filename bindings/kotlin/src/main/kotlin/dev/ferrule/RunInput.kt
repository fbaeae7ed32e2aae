package dev.ferrule

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.encodeToJsonElement

/** What a run starts from: a prompt, a transcript, an execute-only batch, or an interrupted run's state. */
class RunInput private constructor(private val fields: Map<String, JsonElement>) {
    /** The input limited to [tools] (host and built-in); null keeps the agent's. */
    fun limitedTo(tools: List<String>?): RunInput =
        RunInput(if (tools == null) fields - "tools" else fields + ("tools" to JsonArray(tools.map(::JsonPrimitive))))

    /**
     * The input of a run whose result leaves the transcript out: `messages` is
     * empty, and the transcript is neither written nor read, which is most of
     * what a run of many calls costs at its end. `final`, `output`, `usage` and
     * an interrupted run's `state` are as always. Refused (`INVALID_ARG`) for an
     * execute-only run and its resume, whose results are their `messages`.
     */
    fun withoutMessages(): RunInput = with("result_messages", JsonPrimitive("none"))

    /**
     * The input of a run whose spans go under the host's span, given by its
     * W3C [traceparent] and [tracestate], when spans are recorded
     * (`Library.setTracer`, `FerruleOpenTelemetry`). A malformed traceparent
     * makes the start fail with `INVALID_ARG`.
     */
    fun withTraceContext(traceparent: String, tracestate: String? = null): RunInput {
        val context = mapOf("traceparent" to JsonPrimitive(traceparent)) +
            (tracestate?.let { mapOf("tracestate" to JsonPrimitive(it)) } ?: emptyMap())
        return with("trace_context", JsonObject(context))
    }

    internal val json: String get() = JsonObject(fields).toString()

    /** The input with [key] set to [value]. */
    internal fun with(key: String, value: JsonElement) = RunInput(fields + (key to value))

    companion object {
        fun prompt(text: String) = RunInput(mapOf("prompt" to JsonPrimitive(text)))

        fun messages(messages: List<Message>) = RunInput(mapOf("messages" to FerruleJson.encodeToJsonElement(messages)))

        /** The calls of [message] (an assistant message of the host's own model) run once, after [context]. */
        fun execute(message: Message, context: List<Message> = emptyList()) = RunInput(mapOf(
            "execute" to FerruleJson.encodeToJsonElement(message.copy(role = "assistant")),
            "messages" to FerruleJson.encodeToJsonElement(context)))

        /** Goes on with an interrupted run from its state JSON, with a decision per interrupted call id. */
        fun resume(stateJson: String, decisions: Map<String, Decision>) = RunInput(mapOf(
            "resume" to runCatching { FerruleJson.parseToJsonElement(stateJson) }.getOrElse { JsonPrimitive(stateJson) },
            "decisions" to FerruleJson.encodeToJsonElement(decisions)))
    }
}
