package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonNull

/** A failed run's error, as the result JSON names it. */
@Serializable
data class RunError(@SerialName("code") val codeName: String, val message: String) {
    /** The code, [ErrorCode.UNKNOWN] for a name this package does not know yet. */
    val code: ErrorCode get() = ErrorCode.entries.firstOrNull { it.name == codeName } ?: ErrorCode.UNKNOWN
}

/** The state as JSON text to store, null unless the run was interrupted. */
val RunResult.stateJson: String? get() = state?.takeIf { it != JsonNull }?.toString()

/** The structured output decoded with [serializer]; `INVALID_OUTPUT` when there is none or it does not fit. */
fun <T> RunResult.output(serializer: KSerializer<T>): T {
    val output = output.takeIf { it != JsonNull }
        ?: throw FerruleException(ErrorCode.INVALID_OUTPUT, "the run has no structured output")
    return try {
        FerruleJson.decodeFromJsonElement(serializer, output)
    } catch (error: IllegalArgumentException) {
        val why = "the output does not fit ${serializer.descriptor.serialName}: ${error.message}"
        throw FerruleException(ErrorCode.INVALID_OUTPUT, why)
    }
}

/** The structured output decoded into the `@Serializable` [T]. */
inline fun <reified T> RunResult.output(): T = output(kotlinx.serialization.serializer<T>())
