package dev.ferrule

import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject

/**
 * How ferrule runs a tool: the tool options JSON of the C ABI, field for field
 * (docs/json.md, "Tool options"); a null field takes ferrule's default. Every Kotlin tool is
 * registered `nonblocking`, so that option is not here.
 */
@Serializable
data class ToolOptions(
    /** "parallel" (the default) or "sequential": a sequential tool makes its whole batch sequential. */
    val execution: String? = null,
    /** The bound on one call; null or 0 takes the agent's `tool_timeout_ms`. */
    @SerialName("timeout_ms") val timeoutMs: Long? = null,
    /** A call runs only once the host approved it; until then the run ends interrupted. */
    @SerialName("needs_approval") val needsApproval: Boolean? = null,
    /** Withheld from the model until another tool's result names it in `addedTools`. */
    val deferred: Boolean? = null,
    /** Asks the provider to guarantee that arguments match the schema. */
    val strict: Boolean? = null,
    /** "feed" (the default: errors go back to the model) or "fatal" (a failure ends the run). */
    @SerialName("on_error") val onError: String? = null,
) {
    /** The options JSON ferrule takes, with `"nonblocking": true`. */
    internal val json: String
        get() = JsonObject(FerruleJson.encodeToJsonElement(serializer(), this).jsonObject +
            ("nonblocking" to JsonPrimitive(true))).toString()
}
