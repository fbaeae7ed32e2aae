package dev.ferrule

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.put
import kotlinx.serialization.json.putJsonArray
import kotlinx.serialization.json.putJsonObject
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** A scripted model's turn calling [name] with [arguments] as call [id]. */
fun callTurn(id: String, name: String, arguments: String = "{}") = FerruleJson.parseToJsonElement(
    """{"tool_calls": [{"id": "$id", "name": "$name", "arguments": $arguments}]}""")

fun answerTurn(text: String) = buildJsonObject { put("text", text) }

fun scripted(vararg turns: kotlinx.serialization.json.JsonElement) =
    AgentConfig(ModelConfig("scripted", script = turns.toList()), builtinTools = BuiltinTools(disable = true))

val echo = Tool("echo", "Echoes its text.",
    """{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}""") { call ->
    val text = FerruleJson.parseToJsonElement(call.arguments).jsonObject["text"]!!.jsonPrimitive.content
    JsonPrimitive("$text from kotlin").toString()
}

/** A tool that completes [started], waits until its coroutine is cancelled, then completes [cancelled]. */
fun waitingTool(started: CompletableDeferred<Unit>, cancelled: CompletableDeferred<Unit>) = Tool("wait", "Waits.") {
    started.complete(Unit)
    try {
        awaitCancellation()
    } finally {
        cancelled.complete(Unit)
    }
}

/** An agent whose model calls [waitingTool] once. */
fun waitingAgent(started: CompletableDeferred<Unit>, cancelled: CompletableDeferred<Unit>) =
    Agent(scripted(callTurn("c1", "wait"), answerTurn("Never.")), listOf(waitingTool(started, cancelled)))

class RunTest {
    @Test
    fun theLibrarySpeaksThisPackagesAbi() {
        assertTrue(Library.abiMatches)
        assertTrue(Library.version.isNotEmpty())
    }

    @Test
    fun eventsInOrderAndTheResult() = runBlocking {
        Agent(scripted(callTurn("c1", "echo", """{"text": "hi"}"""), answerTurn("Done.")), listOf(echo)).use { agent ->
            agent.start(RunInput.prompt("Echo hi.")).use { run ->
                val types = run.events.map { it.type }.toList()
                assertEquals("run_start", types.first())
                assertEquals("run_end", types.last())
                assertEquals(1, types.count { it == "tool_execution_end" })
                val result = run.await()
                assertEquals(Status.COMPLETED, result.status)
                assertEquals(listOf("user", "assistant", "tool", "assistant"), result.messages.map { it.role })
                assertEquals("hi from kotlin", result.messages[2].text)
                assertEquals("Done.", result.final?.text)
            }
        }
        assertEquals(0, Handles.count, "every user data key was released")
    }

    @Test
    fun cancellingTheAwaitingCoroutineCancelsTheRunAndReachesTheTool() = runBlocking {
        val started = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        waitingAgent(started, cancelled).use { agent ->
            val job = launch { agent.run(RunInput.prompt("Wait.")) }
            started.await()
            job.cancel()
            withTimeout(10_000) { cancelled.await() }
        }
    }

    @Test
    fun aLiveRunCollectedWithoutCloseIsCancelled() = runBlocking {
        val started = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        waitingAgent(started, cancelled).use { agent ->
            fun startAndDrop() {
                agent.start(RunInput.prompt("Wait."))
            }
            startAndDrop()
            started.await()
            withTimeout(10_000) {
                while (!cancelled.isCompleted) {
                    System.gc()
                    kotlinx.coroutines.delay(10)
                }
            }
        }
    }

    @Test
    fun aThrownExceptionBecomesAnErrorResult() = runBlocking {
        val failing = Tool("ledger", "Fails.") { throw IllegalStateException("the ledger is closed") }
        val result = Agent(scripted(callTurn("c1", "ledger"), answerTurn("Sorry.")), listOf(failing))
            .use { it.run(RunInput.prompt("Go.")) }
        val toolMessage = result.messages.first { it.role == "tool" }
        assertTrue(toolMessage.isError)
        assertEquals("the ledger is closed", toolMessage.text)
    }

    @Test
    fun twoHundredConcurrentRuns() = runBlocking {
        Agent(scripted(callTurn("c1", "echo", """{"text": "ping"}"""), answerTurn("pong")), listOf(echo)).use { agent ->
            val results = (1..200).map { async { agent.run(RunInput.prompt("Ping.")) } }.awaitAll()
            assertTrue(results.all { it.status == Status.COMPLETED && it.messages[2].text == "ping from kotlin" })
        }
    }

    @Test
    fun invalidConfigurationsAreErrorsWithTheirCodes() {
        assertEquals(ErrorCode.INVALID_ARG,
            assertThrows<FerruleException> { Agent("""{"model": {"provider": "scripted"}, "colour": 1}""") }.code)
        assertEquals(ErrorCode.INVALID_JSON, assertThrows<FerruleException> { Agent("{nope") }.code)
        val bad = Tool("bad name!", "x") { "\"\"" }
        assertEquals(ErrorCode.INVALID_ARG, assertThrows<FerruleException> { Agent(scripted(), listOf(bad)) }.code)
        Agent(scripted(answerTurn("Hi."))).use { agent ->
            assertEquals(ErrorCode.INVALID_ARG,
                assertThrows<FerruleException> { agent.start(RunInput.prompt("x").limitedTo(listOf("missing"))) }.code)
        }
        assertEquals(0, Handles.count, "refused tools' and runs' keys were released")
    }

    /** The Kotlin configuration reaches bash's sandbox: read_only refuses a write workspace_write allows. */
    @Test
    fun theBashSandboxIsConfiguredFromKotlin() = runBlocking {
        val dir = kotlin.io.path.createTempDirectory("ferrule-sandbox-").toFile()
        try {
            suspend fun bash(command: String, sandbox: Sandbox): Message {
                val config = scripted(callTurn("b", "bash", FerruleJson.encodeToString(mapOf("command" to command))),
                    answerTurn("done")).copy(builtinTools = BuiltinTools(allowed = listOf("bash"), sandbox = sandbox,
                    workingDirectory = dir.path))
                return Agent(config).use { agent -> agent.run(RunInput.prompt("go")).messages[2] }
            }
            val refused = bash("echo x > inside.txt", Sandbox(mode = "read_only"))
            assertTrue(refused.isError && "Read-only file system" in refused.text, refused.text)
            assertTrue(!dir.resolve("inside.txt").exists(), "read_only let the command write")
            val written = bash("echo x > inside.txt && cat inside.txt", Sandbox(mode = "workspace_write"))
            assertTrue(!written.isError && written.text.startsWith("x\n"), written.text)
        } finally {
            dir.deleteRecursively()
        }
    }

    @Test
    fun theConfigEncodesToTheConfigurationJson() {
        val config = AgentConfig(ModelConfig("openai", name = "gpt-4.1-mini", timeouts = Timeouts(connectMs = 100)),
            toolChoice = buildJsonObject { put("name", "echo") }, history = History(1000),
            builtinTools = BuiltinTools(allowed = listOf("echo"), needsApproval = listOf("bash")))
        val expected = buildJsonObject {
            putJsonObject("model") {
                put("provider", "openai"); put("name", "gpt-4.1-mini"); putJsonObject("timeouts") { put("connect_ms", 100) }
            }
            putJsonObject("tool_choice") { put("name", "echo") }
            putJsonObject("history") { put("max_input_tokens", 1000) }
            putJsonObject("builtin_tools") {
                putJsonArray("allowed") { add(JsonPrimitive("echo")) }
                putJsonArray("needs_approval") { add(JsonPrimitive("bash")) }
            }
        }
        assertEquals(expected, FerruleJson.encodeToJsonElement(AgentConfig.serializer(), config))
    }
}

class RaceTest {
    /** close, cancel, await and inject from different coroutines at once, a thousand times: nothing crashes or hangs. */
    @Test
    fun closeCancelAwaitAndInjectRace() = runBlocking {
        val waiting = Tool("wait", "Waits a little.") { call ->
            call.update(ToolResult.text("working"))
            kotlinx.coroutines.delay((0L..2L).random())
            "\"done\""
        }
        // An injection that lands after the answer is answered in a third turn.
        Agent(scripted(callTurn("c1", "wait"), answerTurn("Done."), answerTurn("Also done.")), listOf(waiting)).use { agent ->
            repeat(1000) {
                val run = agent.start(RunInput.prompt("Go."))
                val awaiting = async(kotlinx.coroutines.Dispatchers.Default) {
                    runCatching { run.await() }
                }
                val others = listOf(
                    launch(kotlinx.coroutines.Dispatchers.Default) { run.cancel() },
                    launch(kotlinx.coroutines.Dispatchers.Default) { runCatching { run.inject(Message.user("Also.")) } },
                    launch(kotlinx.coroutines.Dispatchers.Default) { run.close() },
                )
                others.forEach { it.join() }
                val ended = withTimeout(10_000) { awaiting.await() }
                ended.onSuccess { assertTrue(it.status == Status.CANCELLED || it.status == Status.COMPLETED, "$it") }
                    .onFailure { assertTrue(it is FerruleException && it.code == ErrorCode.INVALID_ARG, "$it") }
            }
        }
        // Every call was completed, so every cancel handler's key was released.
        kotlinx.coroutines.withTimeoutOrNull(10_000) { while (Handles.count > 0) kotlinx.coroutines.delay(1) }
        assertEquals(0, Handles.count, "keys still held")
    }
}

class CollectionTest {
    /** C may call the tool, hook, event and free callbacks at any time: they must never be collected. */
    @Test
    fun aThousandRunsWhileTheCollectorRuns() = runBlocking {
        val collecting = java.util.concurrent.atomic.AtomicBoolean(true)
        val collector = Thread {
            while (collecting.get()) {
                System.gc()
                Thread.sleep(1)
            }
        }.apply { start() }
        try {
            val hook = Hook("tool_result") { "{}" }
            Agent(scripted(callTurn("c1", "echo", """{"text": "gc"}"""), answerTurn("Done.")), listOf(echo), listOf(hook))
                .use { agent ->
                    repeat(10) {
                        val results = (1..100).map { async { agent.run(RunInput.prompt("Go.")) } }.awaitAll()
                        assertTrue(results.all { it.status == Status.COMPLETED && it.messages[2].text == "gc from kotlin" })
                    }
                }
        } finally {
            collecting.set(false)
            collector.join()
        }
        assertEquals(0, Handles.count, "every user data key was released")
    }
}

@kotlinx.serialization.Serializable
data class Lookup(@kotlinx.serialization.SerialName("customer_id") val customerId: String, val limit: Int = 10,
    val tags: List<String>? = null)

class TypedToolTest {
    @Test
    fun theSchemaComesFromTheClassAndTheArgumentsAreDecoded() = runBlocking {
        val seen = java.util.concurrent.atomic.AtomicReference<Lookup>()
        val lookup = tool<Lookup, ToolResult>("lookup", "Looks a customer up.") { _, args ->
            seen.set(args)
            ToolResult(content = listOf(Part.text("${args.customerId} is gold")), details = JsonPrimitive(args.limit))
        }
        assertEquals(FerruleJson.parseToJsonElement("""{"type": "object", "properties": {
            "customer_id": {"type": "string"}, "limit": {"type": "integer"},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}},
            "required": ["customer_id"], "additionalProperties": false}"""),
            FerruleJson.parseToJsonElement(lookup.schema!!))
        val result = Agent(scripted(callTurn("c1", "lookup", """{"customer_id": "C-1", "limit": 3}"""),
            callTurn("c2", "lookup", """{"customer": "C-2"}"""), answerTurn("Gold.")), listOf(lookup))
            .use { it.run(RunInput.prompt("Plan?")) }
        assertEquals(Lookup("C-1", 3), seen.get())
        val results = result.messages.filter { it.role == "tool" }
        assertEquals("C-1 is gold", results[0].text)
        assertTrue(results[1].isError, "arguments against the schema are refused before the body runs")
    }
}
