package dev.ferrule

import kotlinx.serialization.json.JsonObject

// A tool's result: its fields are generated (Records_gen.kt); docs/json.md, "Tool result".

/** The text parts, joined. */
val ToolResult.text: String get() = content.joinedText

/** The result JSON ferrule takes. */
internal val ToolResult.json: String get() = FerruleJson.encodeToString(ToolResult.serializer(), this)

/** A text result. */
fun ToolResult.Companion.text(text: String, isError: Boolean = false) =
    ToolResult(content = listOf(Part.text(text)), isError = isError)

/** A result as ferrule's events give it. */
internal fun ToolResult.Companion.decode(json: JsonObject): ToolResult =
    FerruleJson.decodeFromJsonElement(ToolResult.serializer(), json)
