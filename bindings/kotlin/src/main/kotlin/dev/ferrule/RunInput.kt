package dev.ferrule

import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.encodeToJsonElement

/**
 * What a run starts from: a prompt, a transcript, an execute-only batch, an
 * interrupted run's state, or one call a run returned.
 */
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

    /**
     * The input of a run that returns the calls it would start instead of
     * running them: it stops, status interrupted, where a batch's calls
     * passed validation, hooks and approval, with them in [RunResult.calls]
     * (at most as many as would run at once; one for a sequential batch). Run
     * each with [invoke] (or code of your own) and go on with
     * [resumeWithResults]. Calls of agents and handoffs still run inside the
     * run. Not for [execute] or [invoke].
     */
    fun returningCalls(): RunInput = with("calls", JsonPrimitive("return"))

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

        /**
         * Runs one call a run returned ([RunResult.calls]) by its tool alone:
         * the arguments checked, no hook or approval asked, the function bounded
         * by the tool's timeout, its updates as events, cancelled with the run.
         * [attempt] is which time the host runs the call (the tool reads
         * [ToolCall.attempt]); [handedTo] are the handoffs the returning run had
         * made (its state's `handed_to`). The result's [RunResult.outcome] is
         * what [resumeWithResults] takes for the call.
         */
        fun invoke(call: ToolCallRequest, attempt: Int = 1, handedTo: List<String> = emptyList()) = RunInput(mapOf(
            "invoke" to FerruleJson.encodeToJsonElement(call),
            "attempt" to JsonPrimitive(attempt),
            "handed_to" to JsonArray(handedTo.map(::JsonPrimitive))))

        /**
         * Goes on with a run that returned calls, from its state JSON, with how
         * each ended by call id: an [invoke] run's [RunResult.outcome], or
         * `{"result": <tool result>}` / `{"failed": "why"}` for a call run by code
         * of your own. Every returned call needs one.
         */
        fun resumeWithResults(stateJson: String, results: Map<String, JsonElement>) = RunInput(mapOf(
            "resume" to runCatching { FerruleJson.parseToJsonElement(stateJson) }.getOrElse { JsonPrimitive(stateJson) },
            "results" to JsonObject(results)))

        /** Goes on with an interrupted run from its state JSON, with a decision per interrupted call id. */
        fun resume(stateJson: String, decisions: Map<String, Decision>) = RunInput(mapOf(
            "resume" to runCatching { FerruleJson.parseToJsonElement(stateJson) }.getOrElse { JsonPrimitive(stateJson) },
            "decisions" to FerruleJson.encodeToJsonElement(decisions)))
    }
}
