package dev.ferrule

import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** The MCP test server the conformance scenarios start, found on PATH (make test-kotlin puts it there). */
private const val MCP_TEST_SERVER = "ferrule-mcp-test-server"

class McpTest {
    @Test
    fun anMcpServerFromTheConfigIsCalledAndReportedInTypedEvents() = runBlocking {
        val config = scripted(callTurn("c1", "t__echo", """{"text": "from kotlin"}"""), answerTurn("Done."))
            .copy(mcpServers = mapOf("t" to McpServer(command = MCP_TEST_SERVER)))
        Agent(config).use { agent ->
            agent.start(RunInput.prompt("Go.")).use { run ->
                val reports = run.events.filterIsInstance<Event.McpServer>().toList()
                val result = run.await()
                assertEquals(Status.COMPLETED, result.status)
                assertEquals("from kotlin", result.messages[2].text)
                val report = reports.single()
                assertEquals(listOf("t", "ready"), listOf(report.server, report.status))
                assertTrue("t__echo" in report.tools, report.tools.toString())
            }
        }
    }

    @Test
    fun aRequiredMcpServerThatCannotStartFailsTheRun() = runBlocking {
        val config = scripted(answerTurn("Never."))
            .copy(mcpServers = mapOf("gone" to McpServer(command = "/nonexistent/ferrule-mcp-server", required = true)))
        Agent(config).use { agent ->
            val result = agent.run(RunInput.prompt("Go."))
            assertEquals(Status.FAILED, result.status)
            assertEquals(ErrorCode.MCP_UNAVAILABLE, result.error?.code)
        }
    }

    @Test
    fun aBadMcpServerConfigIsRefusedNamingTheField() {
        val config = scripted().copy(mcpServers = mapOf("s" to McpServer(command = "x", url = "http://127.0.0.1:1/mcp")))
        val refused = assertThrows<FerruleException> { Agent(config) }
        assertEquals(ErrorCode.INVALID_ARG, refused.code)
        assertTrue("mcp_servers.s.url" in refused.detail, refused.detail)
    }
}
