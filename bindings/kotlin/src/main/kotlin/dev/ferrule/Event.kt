package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive

/** One event of a run, in order. Types added to ferrule later arrive as [Unknown]. */
sealed class Event {
    abstract val runId: String

    /** The event's type name, as the JSON spells it ("run_start"). */
    abstract val type: String

    @Serializable
    data class RunStart(@SerialName("run_id") override val runId: String) : Event() {
        override val type get() = "run_start"
    }

    @Serializable
    data class TurnStart(@SerialName("run_id") override val runId: String, val turn: Int) : Event() {
        override val type get() = "turn_start"
    }

    /** A piece of streamed text or reasoning. */
    @Serializable
    data class MessageDelta(
        @SerialName("run_id") override val runId: String, val turn: Int, val text: String = "", val thinking: String = "",
    ) : Event() {
        override val type get() = "message_delta"
    }

    /** A piece of a streamed tool call. */
    @Serializable
    data class ToolCallDelta(
        @SerialName("run_id") override val runId: String, val turn: Int, val index: Int, val id: String? = null,
        val name: String? = null, @SerialName("arguments_delta") val argumentsDelta: String = "",
    ) : Event() {
        override val type get() = "tool_call_delta"
    }

    /** A complete assistant message. */
    @Serializable
    data class MessageEnd(@SerialName("run_id") override val runId: String, val turn: Int, val message: Message) : Event() {
        override val type get() = "message_end"
    }

    /** A call begins (invalid calls too). */
    @Serializable
    data class ToolExecutionStart(@SerialName("run_id") override val runId: String, val call: ToolCallRequest) : Event() {
        override val type get() = "tool_execution_start"
    }

    /** A provisional result ([partial] is its JSON); it never reaches the model. */
    @Serializable
    data class ToolExecutionUpdate(
        @SerialName("run_id") override val runId: String, @SerialName("call_id") val callId: String, val name: String,
        val partial: JsonObject,
    ) : Event() {
        override val type get() = "tool_execution_update"

        /** [partial] decoded. */
        val partialResult: ToolResult get() = ToolResult.decode(partial)
    }

    /** A call's final result ([result] is its JSON), as the transcript records it. */
    @Serializable
    data class ToolExecutionEnd(
        @SerialName("run_id") override val runId: String, @SerialName("call_id") val callId: String, val name: String,
        val result: JsonObject, @SerialName("is_error") val isError: Boolean = false,
    ) : Event() {
        override val type get() = "tool_execution_end"

        /** [result] decoded. */
        val toolResult: ToolResult get() = ToolResult.decode(result)
    }

    /** A failed model request is tried again after [delayMs]. */
    @Serializable
    data class Retry(
        @SerialName("run_id") override val runId: String, val attempt: Int, val error: RunError,
        @SerialName("delay_ms") val delayMs: Long = 0,
    ) : Event() {
        override val type get() = "retry"
    }

    /** A message entered the transcript from outside the model. */
    @Serializable
    data class MessageInjected(@SerialName("run_id") override val runId: String, val message: Message) : Event() {
        override val type get() = "message_injected"
    }

    /** A request left out the oldest messages to stay within the history budget. */
    @Serializable
    data class HistoryCompacted(@SerialName("run_id") override val runId: String, val turn: Int, val dropped: Int) : Event() {
        override val type get() = "history_compacted"
    }

    @Serializable
    data class TurnEnd(@SerialName("run_id") override val runId: String, val turn: Int) : Event() {
        override val type get() = "turn_end"
    }

    /** Always the last event of a run. */
    @Serializable
    data class RunEnd(@SerialName("run_id") override val runId: String, val status: Status, val result: RunResult) : Event() {
        override val type get() = "run_end"
    }

    /** An event of a type this package does not know yet, with its JSON. */
    data class Unknown(override val runId: String, override val type: String, val json: JsonObject) : Event()

    internal companion object {
        /** Each known event type's serializer, by the type's JSON name. */
        val serializers: Map<String, KSerializer<out Event>> = mapOf(
            "run_start" to RunStart.serializer(),
            "turn_start" to TurnStart.serializer(),
            "message_delta" to MessageDelta.serializer(),
            "tool_call_delta" to ToolCallDelta.serializer(),
            "message_end" to MessageEnd.serializer(),
            "tool_execution_start" to ToolExecutionStart.serializer(),
            "tool_execution_update" to ToolExecutionUpdate.serializer(),
            "tool_execution_end" to ToolExecutionEnd.serializer(),
            "retry" to Retry.serializer(),
            "message_injected" to MessageInjected.serializer(),
            "history_compacted" to HistoryCompacted.serializer(),
            "turn_end" to TurnEnd.serializer(),
            "run_end" to RunEnd.serializer(),
        )

        /** Reads one event's JSON; one that does not decode is [Unknown]. */
        fun decode(text: String): Event {
            val json = FerruleJson.parseToJsonElement(text).jsonObject
            val type = json["type"]?.jsonPrimitive?.content ?: ""
            val serializer = serializers[type]
            val runId = json["run_id"]?.jsonPrimitive?.content ?: ""
            return serializer?.let { runCatching { FerruleJson.decodeFromJsonElement(it, json) }.getOrNull() }
                ?: Unknown(runId, type, json)
        }
    }
}
