package dev.ferrule

import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.SerialInfo
import kotlinx.serialization.descriptors.PolymorphicKind
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.descriptors.SerialKind
import kotlinx.serialization.descriptors.StructureKind
import kotlinx.serialization.descriptors.nonNullOriginal
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/** What a property (or a class) of a typed tool's arguments means, for the model: its schema's `description`. */
@OptIn(ExperimentalSerializationApi::class)
@SerialInfo
@Target(AnnotationTarget.PROPERTY, AnnotationTarget.CLASS)
annotation class Description(val text: String)

/**
 * The JSON Schema (Draft 2020-12) of a `@Serializable` class, from its serial
 * descriptor: every property named by its serial name, required unless it has a
 * default, described by its [Description]; a nullable property also takes null;
 * a value class is its value (an unsigned one bounded to its range). Objects allow no other properties unless
 * [allowExtraProperties]. A class that contains itself is defined once under
 * `$defs` and referred to (the root as `#`). Polymorphic and contextual types
 * have no schema here: use a raw [Tool].
 */
internal fun schemaOf(descriptor: SerialDescriptor, allowExtraProperties: Boolean = false): JsonObject =
    SchemaWriter(descriptor, allowExtraProperties).write()

@OptIn(ExperimentalSerializationApi::class)
private class SchemaWriter(private val root: SerialDescriptor, private val allowExtraProperties: Boolean) {
    /** The classes being written: one met again inside itself is recursive. */
    private val open = mutableListOf<SerialDescriptor>()
    private val recursive = mutableSetOf<SerialDescriptor>()
    /** Each recursive class but the root, by its name under `$defs` (generic classes share a serial name). */
    private val names = linkedMapOf<SerialDescriptor, String>()
    private val definitions = linkedMapOf<String, JsonObject>()

    fun write(): JsonObject {
        val schema = schema(root)
        return if (definitions.isEmpty()) schema else JsonObject(schema + ("\$defs" to JsonObject(definitions)))
    }

    private fun schema(descriptor: SerialDescriptor): JsonObject = when {
        descriptor.isNullable ->
            JsonObject(mapOf("anyOf" to JsonArray(listOf(schema(descriptor.nonNullOriginal), type("null")))))
        else -> plainSchema(descriptor)
    }

    private fun plainSchema(descriptor: SerialDescriptor): JsonObject {
        unsignedMaximum[descriptor.serialName]?.let { maximum ->
            return type("integer", "minimum" to JsonPrimitive(0), "maximum" to JsonPrimitive(maximum))
        }
        if (descriptor.isInline) return described(schema(descriptor.getElementDescriptor(0)), descriptor.annotations)
        return kindSchema(descriptor)
    }

    private fun kindSchema(descriptor: SerialDescriptor): JsonObject = when (val kind = descriptor.kind) {
        PrimitiveKind.STRING, PrimitiveKind.CHAR -> type("string")
        PrimitiveKind.BOOLEAN -> type("boolean")
        PrimitiveKind.BYTE, PrimitiveKind.SHORT, PrimitiveKind.INT, PrimitiveKind.LONG -> type("integer")
        PrimitiveKind.FLOAT, PrimitiveKind.DOUBLE -> type("number")
        SerialKind.ENUM -> described(type("string",
            "enum" to JsonArray((0 until descriptor.elementsCount).map { JsonPrimitive(descriptor.getElementName(it)) })),
            descriptor.annotations)
        StructureKind.LIST -> type("array", "items" to schema(descriptor.getElementDescriptor(0)))
        StructureKind.MAP -> type("object", "additionalProperties" to schema(descriptor.getElementDescriptor(1)))
        StructureKind.CLASS, StructureKind.OBJECT -> classSchema(descriptor)
        is PolymorphicKind, SerialKind.CONTEXTUAL -> throw FerruleException(ErrorCode.INVALID_SCHEMA,
            "${descriptor.serialName} is $kind: no schema can be derived; give the tool a schema of its own")
    }

    /** A class's schema, or a reference to it when it is inside itself. */
    private fun classSchema(descriptor: SerialDescriptor): JsonObject {
        if (descriptor in open) {
            recursive += descriptor
            return reference(descriptor)
        }
        open += descriptor
        val elements = 0 until descriptor.elementsCount
        val properties = elements.associate { index ->
            descriptor.getElementName(index) to
                described(schema(descriptor.getElementDescriptor(index)), descriptor.getElementAnnotations(index))
        }
        open.removeAt(open.lastIndex)
        val closed = if (allowExtraProperties) emptyArray() else arrayOf("additionalProperties" to JsonPrimitive(false))
        val required = elements.filterNot(descriptor::isElementOptional).map { JsonPrimitive(descriptor.getElementName(it)) }
        val schema = described(type("object", "properties" to JsonObject(properties), "required" to JsonArray(required),
            *closed), descriptor.annotations)
        if (descriptor !in recursive || descriptor == root) return schema
        return reference(descriptor).also { definitions[names.getValue(descriptor)] = schema }
    }

    private fun reference(descriptor: SerialDescriptor): JsonObject {
        val target = if (descriptor == root) "#" else "#/\$defs/" + names.getOrPut(descriptor) { definitionName(descriptor) }
        return JsonObject(mapOf("\$ref" to JsonPrimitive(target)))
    }

    /**
     * A name for [descriptor] under `$defs`, unlike every other: its simple
     * serial name in letters, digits and `_`, which need no escaping in a
     * reference, numbered when taken.
     */
    private fun definitionName(descriptor: SerialDescriptor): String {
        val base = descriptor.serialName.substringAfterLast('.').replace(Regex("[^A-Za-z0-9_]"), "_").ifEmpty { "_" }
        return generateSequence(1) { it + 1 }.map { if (it == 1) base else "$base$it" }.first { it !in names.values }
    }

    private val unsignedMaximum = mapOf("kotlin.UByte" to "255", "kotlin.UShort" to "65535",
        "kotlin.UInt" to "4294967295", "kotlin.ULong" to "18446744073709551615").mapValues { it.value.toBigInteger() }

    private fun type(name: String, vararg keywords: Pair<String, JsonElement>) =
        JsonObject(mapOf("type" to JsonPrimitive(name)) + keywords)

    private fun described(schema: JsonObject, annotations: List<Annotation>): JsonObject {
        val text = annotations.filterIsInstance<Description>().firstOrNull()?.text ?: return schema
        return JsonObject(schema + ("description" to JsonPrimitive(text)))
    }
}
