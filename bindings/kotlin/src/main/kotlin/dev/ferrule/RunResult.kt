package dev.ferrule

import kotlinx.serialization.EncodeDefault
import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull

/** A failed run's error, as the result JSON names it. */
@Serializable
data class RunError(@SerialName("code") val codeName: String, val message: String) {
    /** The code, [ErrorCode.UNKNOWN] for a name this package does not know yet. */
    val code: ErrorCode get() = ErrorCode.entries.firstOrNull { it.name == codeName } ?: ErrorCode.UNKNOWN
}

/** A call that waits for the host's decision. */
@Serializable
data class Interruption(@SerialName("call_id") val callId: String, val name: String, val arguments: JsonElement)

/** A run's outcome, for every status. [messages] is the whole transcript, replayable. Written as ferrule writes it. */
@OptIn(ExperimentalSerializationApi::class)
@Serializable
data class RunResult(
    val status: Status,
    val final: Message? = null,
    @EncodeDefault val messages: List<Message> = emptyList(),
    @EncodeDefault val usage: Usage = Usage(),
    @EncodeDefault val rounds: Int = 0,
    val error: RunError? = null,
    /** The structured answer (with an `output_schema`), else null. */
    val output: JsonElement? = null,
    @EncodeDefault val interruptions: List<Interruption> = emptyList(),
    /** What an interrupted run needs to go on; null unless interrupted. */
    val state: JsonElement? = null,
) {
    /** The state as JSON text to store, null unless the run was interrupted. */
    val stateJson: String? get() = state?.takeIf { it != JsonNull }?.toString()

    /** The structured output decoded with [serializer]; `INVALID_OUTPUT` when there is none or it does not fit. */
    fun <T> output(serializer: KSerializer<T>): T {
        val output = output?.takeIf { it != JsonNull }
            ?: throw FerruleException(ErrorCode.INVALID_OUTPUT, "the run has no structured output")
        return try {
            FerruleJson.decodeFromJsonElement(serializer, output)
        } catch (error: IllegalArgumentException) {
            val why = "the output does not fit ${serializer.descriptor.serialName}: ${error.message}"
            throw FerruleException(ErrorCode.INVALID_OUTPUT, why)
        }
    }
}

/** The structured output decoded into the `@Serializable` [T]. */
inline fun <reified T> RunResult.output(): T = output(kotlinx.serialization.serializer<T>())
