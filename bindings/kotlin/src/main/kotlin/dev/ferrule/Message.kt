package dev.ferrule

import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.KSerializer
import kotlinx.serialization.KeepGeneratedSerializer
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.SerializationException
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.JsonTransformingSerializer
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive

/** One message of a transcript, in ferrule's provider-neutral form. */
@OptIn(ExperimentalSerializationApi::class)
@KeepGeneratedSerializer
@Serializable(with = MessageSerializer::class)
data class Message(
    /** "system", "user", "assistant" or "tool". */
    val role: String,
    val content: List<Part> = emptyList(),
    /** An assistant's calls. */
    @SerialName("tool_calls") val toolCalls: List<ToolCallRequest> = emptyList(),
    /** A tool result's call id and tool name. */
    @SerialName("tool_call_id") val toolCallId: String? = null,
    val name: String? = null,
    @SerialName("is_error") val isError: Boolean = false,
    @SerialName("stop_reason") val stopReason: String? = null,
    val usage: Usage? = null,
    /** "injection" for a message that entered the run from outside the model. */
    val origin: String? = null,
) {
    /** The text parts, joined. */
    val text: String get() = content.joinedText

    companion object {
        fun user(text: String) = Message("user", listOf(Part.text(text)))
        fun system(text: String) = Message("system", listOf(Part.text(text)))
    }
}

/**
 * A piece of content: `type` "text", "image", "file", "thinking" or
 * "redacted_thinking". Image and file bytes stay base64 text, as ferrule gives them.
 */
@Serializable
data class Part(
    val type: String,
    val text: String? = null,
    @SerialName("media_type") val mediaType: String? = null,
    val data: String? = null,
    val url: String? = null,
    val name: String? = null,
    val thinking: String? = null,
    val signature: String? = null,
    val id: String? = null,
) {
    companion object {
        fun text(text: String) = Part("text", text = text)
        fun image(mediaType: String, bytes: ByteArray) =
            Part("image", mediaType = mediaType, data = java.util.Base64.getEncoder().encodeToString(bytes))
    }
}

/** The text parts, joined. */
internal val List<Part>.joinedText: String get() = filter { it.type == "text" }.joinToString("") { it.text ?: "" }

/** An unsigned count read into a [Long], saturating. */
internal object SaturatingCount : KSerializer<Long> {
    override val descriptor = PrimitiveSerialDescriptor("dev.ferrule.Count", PrimitiveKind.LONG)

    override fun serialize(encoder: Encoder, value: Long) = encoder.encodeLong(value)

    override fun deserialize(decoder: Decoder): Long {
        val text = (decoder as JsonDecoder).decodeJsonElement().jsonPrimitive.content
        return text.toLongOrNull() ?: when (text.toBigIntegerOrNull()?.signum()) {
            1 -> Long.MAX_VALUE
            -1 -> 0
            else -> throw SerializationException("a count is a whole number, not $text")
        }
    }
}

/** Message JSON: content given as a string reads as one text part; a system message's content is written as its text. */
internal object MessageSerializer : JsonTransformingSerializer<Message>(Message.generatedSerializer()) {
    override fun transformDeserialize(element: JsonElement): JsonElement {
        val message = element.jsonObject
        val content = message["content"]
        if (content is JsonNull) return JsonObject(message - "content")
        if (content !is JsonPrimitive) return element
        return JsonObject(message + ("content" to buildJsonArray {
            add(buildJsonObject { put("type", JsonPrimitive("text")); put("text", content) })
        }))
    }

    override fun transformSerialize(element: JsonElement): JsonElement {
        val message = element.jsonObject.toMutableMap()
        if (message["content"] == null) message["content"] = JsonArray(emptyList())
        when (message["role"]?.jsonPrimitive?.content) {
            "system" -> message["content"] = JsonPrimitive(
                (message["content"] as JsonArray).joinToString("") { part ->
                    part.jsonObject["text"]?.jsonPrimitive?.content ?: ""
                })
            "tool" -> {
                message.putIfAbsent("tool_call_id", JsonPrimitive(""))
                message.putIfAbsent("name", JsonPrimitive(""))
                message.putIfAbsent("is_error", JsonPrimitive(false))
            }
        }
        return JsonObject(message)
    }
}
