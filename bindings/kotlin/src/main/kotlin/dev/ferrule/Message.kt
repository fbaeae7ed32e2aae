package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerializationException
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.JsonTransformingSerializer
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive

/** A user message of plain text. */
fun Message.Companion.user(text: String) = Message("user", listOf(Part.text(text)))

/** A system message. */
fun Message.Companion.system(text: String) = Message("system", listOf(Part.text(text)))

/** The message's text parts, joined. */
val Message.text: String get() = content.joinedText

/** A text part. */
fun Part.Companion.text(text: String) = Part("text", text = text)

/** An inline image part: [bytes] as base64 text. */
fun Part.Companion.image(mediaType: String, bytes: ByteArray) =
    Part("image", mediaType = mediaType, data = java.util.Base64.getEncoder().encodeToString(bytes))

/** The text parts, joined. */
internal val List<Part>.joinedText: String get() = filter { it.type == "text" }.joinToString("") { it.text ?: "" }

/**
 * A field of one variant of a [FlatUnionSerializer]'s union: its JSON name;
 * the JSON it holds when the value is empty (null: it is left out then);
 * whether it is content (a list of parts, read from a string too), and whether
 * the variant writes content as its text.
 */
internal class VariantField(
    val json: String,
    val empty: JsonElement?,
    val content: Boolean = false,
    val asText: Boolean = false,
)

/**
 * The JSON of a union held as one class (a message, whichever its role): by
 * the tag [key], exactly its [variants]' fields, as ferrule writes them. Of a
 * tag this package does not know, only the tag; a null field reads as absent.
 */
internal open class FlatUnionSerializer<T : Any>(
    generated: KSerializer<T>,
    private val key: String,
    private val variants: Map<String, List<VariantField>>,
) : JsonTransformingSerializer<T>(generated) {
    override fun transformSerialize(element: JsonElement): JsonElement {
        val fields = element.jsonObject
        val tag = fields[key] ?: return element
        return buildJsonObject {
            put(key, tag)
            for (field in variants[tag.jsonPrimitive.content].orEmpty()) {
                val value = fields[field.json].let { if (field.asText && it is JsonArray) JsonPrimitive(it.text) else it }
                when {
                    value != null && !value.isEmpty -> put(field.json, value)
                    field.empty != null -> put(field.json, field.empty)
                }
            }
        }
    }

    override fun transformDeserialize(element: JsonElement): JsonElement {
        val fields = element.jsonObject
        val tag = fields[key] ?: return element
        return buildJsonObject {
            put(key, tag)
            for (field in variants[(tag as? JsonPrimitive)?.content].orEmpty()) {
                val value = fields[field.json]?.takeIf { it !is JsonNull } ?: continue
                put(field.json, if (field.content && value is JsonPrimitive && value.isString) parts(value.content) else value)
            }
        }
    }

    /** Text as content: one text part, none for no text. */
    private fun parts(text: String): JsonArray {
        if (text.isEmpty()) return JsonArray(emptyList())
        return JsonArray(listOf(buildJsonObject { put("type", JsonPrimitive("text")); put("text", JsonPrimitive(text)) }))
    }

    /** The text of content JSON: its text parts, joined. */
    private val JsonArray.text: String
        get() = joinToString("") { part ->
            if (part.jsonObject["type"] == JsonPrimitive("text")) part.jsonObject["text"]?.jsonPrimitive?.content ?: "" else ""
        }

    /** Null, `[]`, `false` or `""`: what ferrule leaves out of a field it does not always write. */
    private val JsonElement.isEmpty: Boolean
        get() = this is JsonNull || (this is JsonArray && isEmpty()) || this == JsonPrimitive(false) || this == JsonPrimitive("")
}

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
