package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerializationException
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.PrimitiveSerialDescriptor
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonEncoder
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
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
 * was; a null field reads as absent. Reading builds the class from the JSON
 * object's fields with [build] (generated), in one pass over them.
 */
internal open class FlatUnionSerializer<T : Any>(
    private val generated: KSerializer<T>,
    private val key: String,
    private val variants: Map<String, List<VariantField>>,
    private val unknown: FlatUnknown<T>,
    private val build: FlatFields.() -> T,
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
        return read(input.json, input.decodeJsonElement())
    }

    /** The value of the JSON [element]: an object with a string tag. */
    fun read(json: Json, element: JsonElement): T {
        val fields = element as? JsonObject ?: throw SerializationException("${descriptor.serialName} is a JSON object, not $element")
        val tag = fields[key] ?: throw SerializationException("${descriptor.serialName} has no $key")
        val name = (tag as? JsonPrimitive)?.takeIf { it.isString }?.content
            ?: throw SerializationException("${descriptor.serialName}'s $key is a string, not $tag")
        val known = variants[name]
        val value = FlatFields(json, name, fields, known.orEmpty(), descriptor.serialName).build()
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

    /** The text of content JSON: its text parts, joined. */
    private val JsonArray.text: String
        get() = joinToString("") { part ->
            if (part.jsonObject["type"] == JsonPrimitive("text")) part.jsonObject["text"]?.jsonPrimitive?.content ?: "" else ""
        }
}

/**
 * The fields of one JSON object of a [FlatUnionSerializer]'s union, as its
 * generated builder reads them: by the key of the class's property, only the
 * fields of the variant [tag] (none for a tag this package does not know), a
 * null one as absent. A value of the wrong type is a [SerializationException],
 * as kotlinx.serialization's decoder of a JSON tree throws: a string must be
 * quoted unless [json] is lenient, and a flag may be quoted (`"true"`).
 */
internal class FlatFields(
    private val json: Json,
    val tag: String,
    private val fields: JsonObject,
    private val variant: List<VariantField>,
    private val owner: String,
) {
    /** The JSON of the variant's field held in the property [held], null when absent or null. */
    private fun field(held: String): JsonElement? {
        val field = variant.firstOrNull { it.held == held } ?: return null
        return fields[field.json]?.takeIf { it !is JsonNull }
    }

    private fun wrong(held: String, what: String, value: JsonElement): Nothing =
        throw SerializationException("$owner's $held is $what, not $value")

    /** A string field. */
    fun string(held: String): String? = field(held)?.let {
        (it as? JsonPrimitive)?.takeIf { value -> value.isString || json.configuration.isLenient }?.content
            ?: wrong(held, "a string", it)
    }

    /** A flag, false when absent. */
    fun flag(held: String): Boolean =
        field(held)?.let { (it as? JsonPrimitive)?.booleanOrNull ?: wrong(held, "true or false", it) } ?: false

    /** Content: a list of parts, or a string read as one text part (none for an empty one). */
    fun parts(held: String): List<Part> = when (val value = field(held)) {
        null -> emptyList()
        is JsonArray -> value.map { PartSerializer.read(json, it) }
        is JsonPrimitive -> when {
            !value.isString -> wrong(held, "content", value)
            value.content.isEmpty() -> emptyList()
            else -> listOf(Part.text(value.content))
        }
        else -> wrong(held, "content", value)
    }

    /** A list of values read with [serializer], empty when absent. */
    fun <V> list(held: String, serializer: KSerializer<V>): List<V> = when (val value = field(held)) {
        null -> emptyList()
        is JsonArray -> value.map { json.decodeFromJsonElement(serializer, it) }
        else -> wrong(held, "a list", value)
    }

    /** A value read with [serializer]. */
    fun <V> value(held: String, serializer: KSerializer<V>): V? = field(held)?.let { json.decodeFromJsonElement(serializer, it) }
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
