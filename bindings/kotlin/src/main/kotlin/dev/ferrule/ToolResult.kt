package dev.ferrule

import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject

/** A tool's result with more than text: content for the model, and what never reaches it (docs/json.md, "Tool result"). */
@Serializable
data class ToolResult(
    val content: List<Part>,
    @SerialName("is_error") val isError: Boolean = false,
    /** Asks the run to end after this batch (only when every call of the batch asks). */
    val terminate: Boolean = false,
    /** Structured data for the host; never sent to the model. */
    val details: JsonElement? = null,
    val display: String? = null,
    val title: String? = null,
    val summary: String? = null,
    @SerialName("added_tools") val addedTools: List<String> = emptyList(),
    /** Tokens the tool spent on model calls of its own (a sub-agent), for the host. */
    val usage: Usage? = null,
) {
    /** The text parts, joined. */
    val text: String get() = content.joinedText

    /** The result JSON ferrule takes. */
    internal val json: String get() = FerruleJson.encodeToString(serializer(), this)

    companion object {
        fun text(text: String, isError: Boolean = false) = ToolResult(listOf(Part.text(text)), isError = isError)

        /** A result as ferrule's events give it. */
        internal fun decode(json: JsonObject): ToolResult = FerruleJson.decodeFromJsonElement(serializer(), json)
    }
}
