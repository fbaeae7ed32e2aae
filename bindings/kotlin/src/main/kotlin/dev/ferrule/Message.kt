package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerializationException
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonEncoder
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
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
 * the JSON it holds when the value is null (null: it is left out then, and an
 * empty list or a false flag too); whether it is content (a list of parts,
 * read from a string too); whether the variant writes content as its text;
 * and the key of the class's own (generated) JSON that holds it.
 */
internal class VariantField(
    val json: String,
    val empty: JsonElement?,
    val content: Boolean = false,
    val asText: Boolean = false,
    val held: String = json,
)

/**
 * The JSON of a union held as one class (a message, whichever its role): by
 * the tag [key], exactly its [variants]' fields, as ferrule writes them: a
 * null value is absent, any other is written, empty or not (but an empty list
 * or a false flag ferrule leaves out). A value of a tag this package does not
 * know keeps the JSON it was read from ([unknown]) and is written back as it
 * was; a null field reads as absent.
 */
internal open class FlatUnionSerializer<T : Any>(
    private val generated: KSerializer<T>,
    private val key: String,
    private val variants: Map<String, List<VariantField>>,
    private val unknown: FlatUnknown<T>,
) : KSerializer<T> {
    override val descriptor: SerialDescriptor = generated.descriptor

    override fun serialize(encoder: Encoder, value: T) {
        val output = encoder as? JsonEncoder ?: throw SerializationException("${descriptor.serialName} is JSON only")
        val fields = output.json.encodeToJsonElement(generated, value).jsonObject
        val tag = fields[key]
        val read = unknown.get(value)
        val json = when {
            tag != null && variants.containsKey(tag.jsonPrimitive.content) -> written(fields, tag)
            read != null && read[key] == tag -> read
            else -> buildJsonObject { tag?.let { put(key, it) } }
        }
        output.encodeJsonElement(json)
    }

    override fun deserialize(decoder: Decoder): T {
        val input = decoder as? JsonDecoder ?: throw SerializationException("${descriptor.serialName} is JSON only")
        val element = input.decodeJsonElement()
        val fields = element as? JsonObject ?: throw SerializationException("${descriptor.serialName} is a JSON object, not $element")
        val tag = fields[key] ?: throw SerializationException("${descriptor.serialName} has no $key")
        val known = variants[(tag as? JsonPrimitive)?.content]
        val read = buildJsonObject {
            put(key, tag)
            for (field in known.orEmpty()) {
                val value = fields[field.json]?.takeIf { it !is JsonNull } ?: continue
                put(field.held, if (field.content && value is JsonPrimitive && value.isString) parts(value.content) else value)
            }
        }
        val value = input.json.decodeFromJsonElement(generated, read)
        if (known == null) unknown.set(value, fields)
        return value
    }

    /** The JSON of the variant [tag] of the class's JSON [fields]. */
    private fun written(fields: JsonObject, tag: JsonElement) = buildJsonObject {
        put(key, tag)
        for (field in variants[tag.jsonPrimitive.content].orEmpty()) {
            val value = fields[field.held].let { if (field.asText && it is JsonArray) JsonPrimitive(it.text) else it }
            val leftOut = value == JsonPrimitive(false) || (value is JsonArray && value.isEmpty())
            when {
                value == null || value is JsonNull -> field.empty?.let { put(field.json, it) }
                field.empty == null && leftOut -> {}
                else -> put(field.json, value)
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
}

/** Where a [FlatUnionSerializer]'s class keeps the JSON of a tag this package does not know. */
internal class FlatUnknown<T>(val get: (T) -> JsonObject?, val set: (T, JsonObject) -> Unit)

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
