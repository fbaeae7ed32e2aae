package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.descriptors.SerialDescriptor
import kotlinx.serialization.encoding.Decoder
import kotlinx.serialization.encoding.Encoder
import kotlinx.serialization.json.JsonDecoder
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonEncoder
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject

/**
 * The event inside another (the one an [Event.AgentEvent] carries), read as
 * [Event.decode] reads any: one that does not decode is [Event.Unknown].
 */
internal object NestedEventSerializer : KSerializer<Event> {
    override val descriptor: SerialDescriptor = JsonElement.serializer().descriptor

    override fun deserialize(decoder: Decoder): Event = when (val json = (decoder as JsonDecoder).decodeJsonElement()) {
        is JsonObject -> Event.decode(json)
        // Not an event at all (null, a string): unknown, as the other bindings read it.
        else -> Event.Unknown("", "", JsonObject(emptyMap()))
    }

    override fun serialize(encoder: Encoder, value: Event) {
        val json = when (value) {
            is Event.Unknown -> value.json
            else -> {
                @Suppress("UNCHECKED_CAST")
                val serializer = Event.serializers.getValue(value.type) as KSerializer<Event>
                val fields = FerruleJson.encodeToJsonElement(serializer, value).jsonObject
                JsonObject(fields + ("type" to JsonPrimitive(value.type)))
            }
        }
        (encoder as JsonEncoder).encodeJsonElement(json)
    }
}
