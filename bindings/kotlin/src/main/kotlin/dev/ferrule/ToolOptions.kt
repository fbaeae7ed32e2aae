package dev.ferrule

import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject

/**
 * The options JSON ferrule takes (docs/json.md, "Tool options"), with `"nonblocking": true`: every Kotlin tool
 * is registered `nonblocking`, so [ToolOptions] (generated from the schema) has no such field.
 */
internal val ToolOptions.json: String
    get() = JsonObject(FerruleJson.encodeToJsonElement(ToolOptions.serializer(), this).jsonObject +
        ("nonblocking" to JsonPrimitive(true))).toString()
