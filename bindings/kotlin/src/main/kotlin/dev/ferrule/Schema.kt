package dev.ferrule

import kotlinx.serialization.ExperimentalSerializationApi
import kotlinx.serialization.descriptors.PolymorphicKind
import kotlinx.serialization.descriptors.PrimitiveKind
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.descriptors.SerialKind
import kotlinx.serialization.descriptors.StructureKind
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/**
 * The strict JSON Schema (Draft 2020-12) of a `@Serializable` class, from its
 * serial descriptor: every property named by its serial name, required unless it
 * has a default, no other properties allowed; a nullable property also takes
 * null. Polymorphic and contextual types have no schema here: use a raw [Tool].
 */
@OptIn(ExperimentalSerializationApi::class)
internal fun schemaOf(descriptor: SerialDescriptor): JsonElement {
    val schema: Map<String, JsonElement> = when (val kind = descriptor.kind) {
        PrimitiveKind.STRING, PrimitiveKind.CHAR -> mapOf("type" to JsonPrimitive("string"))
        PrimitiveKind.BOOLEAN -> mapOf("type" to JsonPrimitive("boolean"))
        PrimitiveKind.BYTE, PrimitiveKind.SHORT, PrimitiveKind.INT, PrimitiveKind.LONG ->
            mapOf("type" to JsonPrimitive("integer"))
        PrimitiveKind.FLOAT, PrimitiveKind.DOUBLE -> mapOf("type" to JsonPrimitive("number"))
        SerialKind.ENUM -> mapOf("type" to JsonPrimitive("string"),
            "enum" to JsonArray((0 until descriptor.elementsCount).map { JsonPrimitive(descriptor.getElementName(it)) }))
        StructureKind.LIST -> mapOf("type" to JsonPrimitive("array"), "items" to schemaOf(descriptor.getElementDescriptor(0)))
        StructureKind.MAP -> mapOf("type" to JsonPrimitive("object"),
            "additionalProperties" to schemaOf(descriptor.getElementDescriptor(1)))
        StructureKind.CLASS, StructureKind.OBJECT -> mapOf(
            "type" to JsonPrimitive("object"),
            "properties" to JsonObject((0 until descriptor.elementsCount).associate { index ->
                descriptor.getElementName(index) to schemaOf(descriptor.getElementDescriptor(index))
            }),
            "required" to JsonArray((0 until descriptor.elementsCount).filterNot(descriptor::isElementOptional)
                .map { JsonPrimitive(descriptor.getElementName(it)) }),
            "additionalProperties" to JsonPrimitive(false),
        )
        is PolymorphicKind, SerialKind.CONTEXTUAL -> throw FerruleException(ErrorCode.INVALID_SCHEMA,
            "${descriptor.serialName} is ${kind}: no schema can be derived; give the tool a schema of its own")
    }
    if (!descriptor.isNullable) return JsonObject(schema)
    return JsonObject(mapOf("anyOf" to JsonArray(listOf(JsonObject(schema), JsonObject(mapOf("type" to JsonPrimitive("null")))))))
}
