package dev.ferrule

import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

class RunTest {
    private val config = """{"model": {"provider": "scripted", "script": [
        {"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "hi"}}]}, {"text": "Done."}]},
        "builtin_tools": {"disable": true}}"""

    private val echo = Tool("echo", "Echoes its text.",
        """{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}""") { call ->
        "\"" + call.arguments.substringAfter("\"text\":\"").substringBefore("\"") + " from kotlin\""
    }

    @Test
    fun theLibrarySpeaksThisPackagesAbi() {
        assertTrue(Library.abiMatches)
        assertTrue(Library.version.isNotEmpty())
    }

    @Test
    fun aScriptedRunWithAKotlinTool() = runBlocking {
        Agent(config, listOf(echo)).use { agent ->
            agent.start("""{"prompt": "Echo hi."}""").use { run ->
                val events = run.events.toList()
                assertTrue(events.first().contains("\"type\":\"run_start\""), events.first())
                assertTrue(events.last().contains("\"type\":\"run_end\""), events.last())
                val result = run.await()
                assertTrue(result.contains("\"status\":\"completed\""), result)
                assertTrue(result.contains("hi from kotlin"), result)
            }
        }
        assertEquals(0, Handles.count, "every user data key was released")
    }

    @Test
    fun invalidConfigurationsAreErrorsWithTheirCodes() {
        assertEquals(ErrorCode.INVALID_ARG,
            assertThrows<FerruleException> { Agent("""{"model": {"provider": "scripted"}, "colour": 1}""") }.code)
        assertEquals(ErrorCode.INVALID_JSON, assertThrows<FerruleException> { Agent("{nope") }.code)
        val bad = Tool("bad name!", "x") { "\"\"" }
        assertEquals(ErrorCode.INVALID_ARG, assertThrows<FerruleException> { Agent(config, listOf(bad)) }.code)
        assertEquals(0, Handles.count, "a refused tool's key was released")
    }
}
