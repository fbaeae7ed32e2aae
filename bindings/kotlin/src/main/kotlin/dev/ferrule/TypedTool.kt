package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.serializer

/**
 * A tool whose arguments are decoded into the `@Serializable` class [Args], its
 * input schema derived from the class: every property required unless it has a
 * default, described by its [Description], and no other properties allowed
 * unless [allowExtraProperties] (then they are ignored). What [body] returns is
 * the result: a [String] is a text result, a [ToolResult] is used as it is,
 * anything else is sent as its JSON text. Arguments that do not fit, and
 * exceptions, become error results the model sees. A class whose schema cannot
 * be derived (polymorphic, contextual) throws `INVALID_SCHEMA` here.
 */
inline fun <reified Args, reified Res> tool(
    name: String,
    description: String,
    options: ToolOptions = ToolOptions(),
    allowExtraProperties: Boolean = false,
    inline: Boolean = false,
    noinline body: suspend (call: ToolCall, args: Args) -> Res,
): Tool = typedTool(name, description, options, allowExtraProperties, inline, serializer<Args>(), serializer<Res>(), body)

@PublishedApi
internal fun <Args, Res> typedTool(
    name: String,
    description: String,
    options: ToolOptions,
    allowExtraProperties: Boolean,
    inline: Boolean,
    arguments: KSerializer<Args>,
    result: KSerializer<Res>,
    body: suspend (ToolCall, Args) -> Res,
): Tool = Tool(name, description, schemaOf(arguments.descriptor, allowExtraProperties).toString(), options, inline) { call ->
    val args = try {
        FerruleJson.decodeFromString(arguments, call.arguments)
    } catch (error: IllegalArgumentException) {
        throw IllegalArgumentException("the arguments do not fit ${arguments.descriptor.serialName}: ${error.message}")
    }
    when (val value = body(call, args)) {
        is String -> JsonPrimitive(value).toString()
        is ToolResult -> value.json
        else -> JsonPrimitive(FerruleJson.encodeToString(result, value)).toString()
    }
}

/** [typedTool] as programs compiled before `inline` call it (the inline [tool] places the call in their code). */
@PublishedApi
internal fun <Args, Res> typedTool(
    name: String,
    description: String,
    options: ToolOptions,
    allowExtraProperties: Boolean,
    arguments: KSerializer<Args>,
    result: KSerializer<Res>,
    body: suspend (ToolCall, Args) -> Res,
): Tool = typedTool(name, description, options, allowExtraProperties, false, arguments, result, body)
