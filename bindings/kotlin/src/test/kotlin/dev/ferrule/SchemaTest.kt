package dev.ferrule

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.serializer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

@Serializable
@Description("A folder and what is in it.")
data class Folder(
    @Description("The folder's name.") val name: String,
    val children: List<Folder> = emptyList(),
)

@Serializable
data class Drive(val label: String, val root: Folder, val backup: Folder? = null)

@JvmInline
@Serializable
value class CustomerId(val value: String)

@Serializable
enum class Plan {
    @SerialName("gold") GOLD,
    @SerialName("silver") SILVER
}

@Serializable
data class Box<T>(val content: T)

@Serializable
data class Order(val customer: CustomerId, val plan: Plan, val boxes: Box<Box<Int>>, val counts: Map<String, Long>)

@Serializable
sealed class Shape {
    @Serializable
    data class Circle(val radius: Double) : Shape()
}

@Serializable
data class Drawing(val shapes: List<Shape>)

class SchemaTest {
    private inline fun <reified T> schema(allowExtra: Boolean = false) = schemaOf(serializer<T>().descriptor, allowExtra)

    private fun json(text: String) = FerruleJson.parseToJsonElement(text).jsonObject

    @Test
    fun descriptionsAndAClassInsideItselfAsTheRoot() {
        assertEquals(json("""{"type": "object", "description": "A folder and what is in it.",
            "properties": {"name": {"type": "string", "description": "The folder's name."},
                           "children": {"type": "array", "items": {"${'$'}ref": "#"}}},
            "required": ["name"], "additionalProperties": false}"""), schema<Folder>())
    }

    @Test
    fun aRecursiveClassBelowTheRootIsDefinedOnce() {
        val folder = """{"type": "object", "description": "A folder and what is in it.",
            "properties": {"name": {"type": "string", "description": "The folder's name."},
                           "children": {"type": "array", "items": {"${'$'}ref": "#/${'$'}defs/Folder"}}},
            "required": ["name"], "additionalProperties": false}"""
        assertEquals(json("""{"type": "object", "properties": {"label": {"type": "string"},
            "root": {"${'$'}ref": "#/${'$'}defs/Folder"},
            "backup": {"anyOf": [{"${'$'}ref": "#/${'$'}defs/Folder"}, {"type": "null"}]}},
            "required": ["label", "root"], "additionalProperties": false, "${'$'}defs": {"Folder": $folder}}"""),
            schema<Drive>())
    }

    @Test
    fun valueClassesEnumsGenericsAndMaps() {
        assertEquals(json("""{"type": "object", "properties": {
            "customer": {"type": "string"},
            "plan": {"type": "string", "enum": ["gold", "silver"]},
            "boxes": {"type": "object", "properties": {"content": {"type": "object",
                "properties": {"content": {"type": "integer"}}, "required": ["content"], "additionalProperties": false}},
                "required": ["content"], "additionalProperties": false},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["customer", "plan", "boxes", "counts"], "additionalProperties": false}"""), schema<Order>())
    }

    @Test
    fun extraPropertiesAllowedOnRequest() {
        val schema = schema<Drive>(allowExtra = true)
        assertEquals(null, schema["additionalProperties"])
        assertEquals(null, (schema["\$defs"]!!.jsonObject["Folder"] as JsonObject)["additionalProperties"])
    }

    @Test
    fun aPolymorphicClassHasNoSchema() {
        val refused = assertThrows<FerruleException> { tool<Drawing, String>("draw", "Draws.") { _, _ -> "" } }
        assertEquals(ErrorCode.INVALID_SCHEMA, refused.code)
    }

    @Test
    fun ferruleTakesTheDerivedSchemasAndTheArgumentsDecode() = runBlocking {
        val seen = java.util.Collections.synchronizedList(mutableListOf<Any>())
        val drive = tool<Drive, String>("drive", "Files a drive.") { _, args -> seen += args; "filed" }
        val order = tool<Order, String>("order", "Orders.") { _, args -> seen += args; "ordered" }
        val loose = tool<Folder, String>("loose", "Takes more.", allowExtraProperties = true) { _, args -> seen += args; "ok" }
        val script = FerruleJson.parseToJsonElement("""{"tool_calls": [
            {"id": "c1", "name": "drive", "arguments": {"label": "D", "root": {"name": "/", "children": [{"name": "etc"}]}}},
            {"id": "c2", "name": "order", "arguments": {"customer": "C-1", "plan": "gold",
                "boxes": {"content": {"content": 3}}, "counts": {"a": 1}}},
            {"id": "c3", "name": "loose", "arguments": {"name": "x", "colour": "red"}},
            {"id": "c4", "name": "drive", "arguments": {"label": "D", "root": {"name": "/", "children": [{"nom": "etc"}]}}}]}""")
        val result = Agent(scripted(script, answerTurn("Done.")), listOf(drive, order, loose)).use {
            it.run(RunInput.prompt("Go."))
        }
        assertEquals(listOf(false, false, false, true), result.messages.filter { it.role == "tool" }.map { it.isError },
            "the nested folder without a name is refused by the schema")
        assertEquals(setOf(Drive("D", Folder("/", listOf(Folder("etc")))),
            Order(CustomerId("C-1"), Plan.GOLD, Box(Box(3)), mapOf("a" to 1L)), Folder("x")), seen.toSet())
    }
}
