package dev.ferrule

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineName
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.Collections
import java.util.concurrent.Executors

class ToolOptionsTest {
    @Test
    fun theOptionsJsonNamesWhatIsSetAndNonblocking() {
        assertEquals(FerruleJson.parseToJsonElement("""{"nonblocking": true}"""),
            FerruleJson.parseToJsonElement(ToolOptions().json))
        assertEquals(FerruleJson.parseToJsonElement(
            """{"execution": "sequential", "timeout_ms": 500, "needs_approval": true, "deferred": true,
                "strict": true, "on_error": "fatal", "nonblocking": true}"""),
            FerruleJson.parseToJsonElement(ToolOptions(execution = "sequential", timeoutMs = 500, needsApproval = true, deferred = true,
                strict = true, onError = "fatal").json))
    }

    @Test
    fun aTimeoutCancelsTheToolsCoroutineAndTheModelSeesIt() = runBlocking {
        val started = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        val slow = waitingTool(started, cancelled)
            .let { Tool(it.name, it.description, options = ToolOptions(timeoutMs = 50), body = it.body) }
        val result = Agent(scripted(callTurn("c1", "wait"), answerTurn("Too slow.")), listOf(slow)).use {
            it.run(RunInput.prompt("Wait."))
        }
        withTimeout(10_000) { cancelled.await() }
        val toolMessage = result.messages.first { it.role == "tool" }
        assertTrue(toolMessage.isError)
        assertTrue(toolMessage.text.contains("timed out after 50 ms"), toolMessage.text)
        assertEquals("Too slow.", result.final?.text)
    }

    @Test
    fun aFatalToolFailureEndsTheRun() = runBlocking {
        val failing = Tool("ledger", "Fails.", options = ToolOptions(onError = "fatal")) { error("the ledger is closed") }
        val result = Agent(scripted(callTurn("c1", "ledger"), answerTurn("Never.")), listOf(failing)).use {
            it.run(RunInput.prompt("Go."))
        }
        assertEquals(Status.FAILED, result.status)
        assertEquals(ErrorCode.TOOL_FAILED, result.error?.code)
    }
}

class AgentContextTest {
    @Test
    fun toolsAndHooksRunInTheAgentsContext() = runBlocking {
        val pool = Executors.newSingleThreadExecutor { Thread(it, "host-pool") }.asCoroutineDispatcher()
        val seen = Collections.synchronizedList(mutableListOf<String>())
        // The thread's name, without the coroutine name that debug mode appends.
        suspend fun where() = "${Thread.currentThread().name.substringBefore(" @")} ${currentCoroutineContext()[CoroutineName]?.name}"
        val tool = Tool("where", "Says where it runs.") { seen += "tool on ${where()}"; "\"here\"" }
        val hook = onToolResult { seen += "hook on ${where()}"; HookDecision.Proceed }
        pool.use {
            Agent(scripted(callTurn("c1", "where"), answerTurn("Done.")), listOf(tool), listOf(hook),
                context = pool + CoroutineName("tools")).use { it.run(RunInput.prompt("Where?")) }
        }
        assertEquals(listOf("tool on host-pool tools", "hook on host-pool tools"), seen.toList())
    }

    @Test
    fun aContextThatWouldRunBodiesOnFerrulesThreadsOrCancelThemIsRefused() {
        assertThrows<IllegalArgumentException> { Agent(scripted(), listOf(echo), context = Dispatchers.Unconfined) }
        assertThrows<IllegalArgumentException> { Agent(scripted(), listOf(echo), context = Job()) }
        assertEquals(0, Handles.count, "nothing was handed to C")
    }
}

class RuntimeTest {
    @Test
    fun theRuntimeIsConfiguredBeforeTheFirstRunOnly() = runBlocking {
        Agent(scripted(answerTurn("Hi."))).use { it.run(RunInput.prompt("Hi.")) }
        assertEquals(ErrorCode.ALREADY_INITIALIZED,
            assertThrows<FerruleException> { Library.configureRuntime("""{"worker_threads": 2}""") }.code)
        assertEquals(ErrorCode.INVALID_ARG,
            assertThrows<FerruleException> { Library.configureRuntime("""{"workers": 2}""") }.code)
    }
}
