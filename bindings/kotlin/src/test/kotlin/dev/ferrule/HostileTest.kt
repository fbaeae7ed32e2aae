package dev.ferrule

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.DelicateCoroutinesApi
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.Collections
import java.util.concurrent.atomic.AtomicReference

// ---- types for the schema tests ----

@Serializable
data class Counted(val n: UInt)

@Serializable
data class IntKeyed(val m: Map<Int, String>)

@Serializable
enum class Colour {
    @SerialName("red") RED,
    BLUE
}

@Serializable
data class Painted(val colour: Colour, val note: String? = null, val inner: Inner? = null) {
    @Serializable
    data class Inner(val depth: Int)
}

/** An exception whose message cannot be read (nor its toString, which reads it). */
class UnreadableException : RuntimeException() {
    override val message: String get() = throw IllegalStateException("no message for you")
}

/**
 * Hostile tests: races, misuse, odd types and odd data, each asserting what the
 * header and docs/kotlin.md promise. Keys C holds are counted against a baseline taken
 * once earlier tests' keys have settled.
 */
@OptIn(DelicateCoroutinesApi::class)
class HostileTest {
    private val prompt = RunInput.prompt("Go.")

    /** What C holds keys of now, by class (for diagnosing leaks). */
    private fun liveKinds(): Map<String?, Int> {
        val field = Handles::class.java.getDeclaredField("live").apply { isAccessible = true }
        @Suppress("UNCHECKED_CAST")
        val live = field.get(Handles) as Map<Long, Any>
        return live.values.groupingBy { it::class.simpleName }.eachCount()
    }

    // ------------------------------------------------------------------ schemas

    @Test
    fun unsignedArgumentIsCallable() = runBlocking {
        val counted = tool<Counted, String>("counted", "Counts.") { _, args -> "n=${args.n}" }
        val result = Agent(scripted(callTurn("c1", "counted", """{"n": 3}"""), answerTurn("x")), listOf(counted))
            .use { it.run(prompt) }
        val toolMessage = result.messages.first { it.role == "tool" }
        assertEquals("n=3", toolMessage.text, "is_error=${toolMessage.isError}")
    }

    @Test
    fun enumsNullablesNestedAndIntKeyedMapsWork() = runBlocking {
        val painted = tool<Painted, String>("paint", "Paints.") { _, a -> "${a.colour} ${a.note} ${a.inner?.depth}" }
        val keyed = tool<IntKeyed, String>("keyed", "Keys.") { _, a -> a.m.entries.joinToString { "${it.key}:${it.value}" } }
        val result = Agent(scripted(
            callTurn("c1", "paint", """{"colour": "red", "note": null, "inner": {"depth": 2}}"""),
            callTurn("c2", "keyed", """{"m": {"1": "a", "2": "b"}}"""),
            callTurn("c3", "keyed", """{"m": {"x": "a"}}"""),
            answerTurn("x")), listOf(painted, keyed)).use { it.run(prompt) }
        val tools = result.messages.filter { it.role == "tool" }
        assertEquals("RED null 2", tools[0].text)
        assertEquals("1:a, 2:b", tools[1].text)
        assertTrue(tools[2].isError, "a non-integer key is an error result: ${tools[2].text}")
    }

    // ------------------------------------------------------------ tool bodies

    @Test
    fun anExceptionWhoseMessageThrowsStillAnswersTheCall() = runBlocking {
        val before = settledKeys()
        val nasty = Tool("nasty", "Throws.") { throw UnreadableException() }
        Agent(scripted(callTurn("c1", "nasty"), answerTurn("Done.")), listOf(nasty)).use { agent ->
            agent.start(prompt).use { run ->
                val result = withTimeoutOrNull(5_000) { run.await() }
                assertNotNull(result, "the run hung: the call was never completed or failed")
                val toolMessage = result!!.messages.first { it.role == "tool" }
                assertTrue(toolMessage.isError)
                assertEquals("the tool threw dev.ferrule.UnreadableException", toolMessage.text)
            }
        }
        assertEquals(before, keysAfterSettling(before, 2_000), "keys leaked")
    }

    @Test
    fun aHookWhoseExceptionMessageThrowsStillResponds() = runBlocking {
        val before = settledKeys()
        val hook = Hook("tool_call") { throw UnreadableException() }
        val config = scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")).copy(hookTimeoutMs = 2_000)
        val result = Agent(config, listOf(echo), listOf(hook)).use { agent -> withTimeout(10_000) { agent.run(prompt) } }
        assertEquals(Status.FAILED, result.status)
        assertEquals(ErrorCode.HOOK_ABORTED, result.error?.code, "${result.error}")
        assertEquals(before, keysAfterSettling(before, 2_000), "keys leaked")
    }

    @Test
    fun errorsAndOddExceptionsBecomeErrorResults() = runBlocking {
        val before = settledKeys()
        fun recurse(n: Int): Int = recurse(n + 1) + 1
        val tools = listOf(
            Tool("so", "Overflows.") { recurse(0).toString() },
            Tool("oom", "OOM.") { throw OutOfMemoryError("pretend") },
            Tool("nullmsg", "Null message.") { throw RuntimeException(null as String?) },
            Tool("emptymsg", "Empty message.") { throw RuntimeException("") },
            Tool("hugemsg", "Huge message.") { throw RuntimeException("m".repeat(5_000_000)) },
            Tool("ownce", "Throws CancellationException itself.") { throw kotlinx.coroutines.CancellationException("mine") },
            Tool("badjson", "Invalid JSON.") { "{not json" },
            Tool("empty", "Empty result.") { "" },
            Tool("nul", "NUL.") { JsonPrimitive("a\u0000b").toString() },
            Tool("surrogate", "Lone surrogate.") { JsonPrimitive("x\uD800y").toString() },
        )
        val script = tools.mapIndexed { i, t -> callTurn("c$i", t.name) }.toTypedArray()
        val result = Agent(scripted(*script, answerTurn("Done.")), tools).use { withTimeout(30_000) { it.run(prompt) } }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
        val byName = result.messages.filter { it.role == "tool" }.associateBy { it.name }
        for (name in listOf("so", "oom", "nullmsg", "emptymsg", "hugemsg", "ownce", "badjson", "empty")) {
            assertTrue(byName[name]!!.isError, name)
        }
        assertEquals("a\u0000b", byName["nul"]!!.text)
        assertEquals("the tool threw java.lang.RuntimeException", byName["emptymsg"]!!.text)
        assertEquals("mine", byName["ownce"]!!.text)
        assertTrue(byName["surrogate"]!!.text.startsWith("the tool's result is not valid Unicode"), byName["surrogate"]!!.text)
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun loneSurrogateIsNotSilentlyReplaced() = runBlocking {
        val t = Tool("surrogate", "Lone surrogate.") { JsonPrimitive("x\uD800y").toString() }
        val result = Agent(scripted(callTurn("c1", "surrogate"), answerTurn("Done.")), listOf(t)).use { it.run(prompt) }
        val m = result.messages.first { it.role == "tool" }
        // ferrule refuses invalid UTF-8 rather than decoding it lossily; the JVM's encoder would write '?'.
        assertTrue(m.isError, "lone surrogate silently became '?': ${m.text}")
        assertEquals(ErrorCode.INVALID_UTF8,
            assertThrows<FerruleException> { Agent(scripted(), listOf(Tool("t", "x\uDC00") { "\"\"" })) }.code)
    }

    @Test
    fun aHugeResultRoundTrips() = runBlocking {
        val before = settledKeys()
        val big = "x".repeat(20_000_000)
        val t = Tool("big", "Big.") { JsonPrimitive(big).toString() }
        Agent(scripted(callTurn("c1", "big"), answerTurn("Done.")), listOf(t)).use { agent ->
            agent.start(prompt).use { run ->
                val ends = run.events.map { it }.toList().filterIsInstance<Event.ToolExecutionEnd>()
                val result = withTimeout(60_000) { run.await() }
                assertEquals(Status.COMPLETED, result.status)
                assertEquals(big.length, result.messages.first { it.role == "tool" }.text.length)
                assertEquals(1, ends.size)
            }
        }
        assertEquals(before, keysAfterSettling(before))
    }

    // ---------------------------------------------------------- call lifetime

    @Test
    fun aToolCallUsedAfterItsBodyReturned() = runBlocking {
        val before = settledKeys()
        val leaked = CompletableDeferred<ToolCall>()
        val t = Tool("leak", "Leaks its call.") { call -> leaked.complete(call); "\"done\"" }
        val result = Agent(scripted(callTurn("c1", "leak"), answerTurn("Done.")), listOf(t)).use { it.run(prompt) }
        assertEquals(Status.COMPLETED, result.status)
        val call = leaked.await()
        assertTrue(call.isCancelled, "a completed call reads as cancelled")
        val error = assertThrows<FerruleException> { call.update("\"late\"") }
        assertEquals(ErrorCode.ALREADY_COMPLETED, error.code)
        // From a coroutine and a plain thread, many times.
        val fromThread = AtomicReference<Throwable?>()
        val updater = Thread {
            fromThread.set(runCatching { repeat(1000) { runCatching { call.update("\"late\"") }; call.isCancelled } }.exceptionOrNull())
        }
        updater.start()
        updater.join()
        assertEquals(null, fromThread.get())
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun updatesFromAPlainThreadRaceTheCompletion() = runBlocking {
        val before = settledKeys()
        val unexpected = Collections.synchronizedList(mutableListOf<Throwable>())
        val racer = Tool("race", "Races.") { call ->
            Thread {
                repeat(5) {
                    try {
                        call.update("\"p$it\"")
                    } catch (e: FerruleException) {
                        if (e.code != ErrorCode.ALREADY_COMPLETED) unexpected += e
                    } catch (e: Throwable) {
                        unexpected += e
                    }
                }
            }.start()
            if ((0..1).random() == 0) delay((0L..1L).random())
            "\"done\""
        }
        Agent(scripted(callTurn("c1", "race"), answerTurn("Done.")), listOf(racer)).use { agent ->
            repeat(1000) {
                agent.start(prompt).use { run ->
                    val events = withTimeout(10_000) { run.events.toList() }
                    val end = events.indexOfFirst { it is Event.ToolExecutionEnd }
                    val lateUpdate = events.withIndex().firstOrNull { (i, e) -> e is Event.ToolExecutionUpdate && i > end }
                    assertEquals(null, lateUpdate, "an update after tool_execution_end")
                    assertTrue(events.none { it is Event.Unknown }, "${events.filterIsInstance<Event.Unknown>()}")
                    val result = withTimeout(10_000) { run.await() }
                    assertEquals("done", result.messages[2].text)
                }
            }
        }
        delay(200)
        assertTrue(unexpected.isEmpty(), "$unexpected")
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun timeoutsRaceCompletionUpdatesCancelAndClose() = runBlocking {
        val before = settledKeys()
        val statuses = Collections.synchronizedList(mutableListOf<String>())
        val flaky = Tool("flaky", "Sometimes too slow.", options = ToolOptions(timeoutMs = 1)) { call ->
            val t = Thread { repeat(3) { runCatching { call.update("\"p\"") } } }
            t.start()
            delay((0L..3L).random())
            "\"done\""
        }
        Agent(scripted(callTurn("c1", "flaky"), answerTurn("Done.")), listOf(flaky)).use { agent ->
            repeat(600) { i ->
                val run = agent.start(prompt)
                val awaiting = async(Dispatchers.Default) { runCatching { run.await() } }
                val collecting = async(Dispatchers.Default) { runCatching { run.events.toList().size } }
                when (i % 3) {
                    0 -> launch(Dispatchers.Default) { run.cancel() }
                    1 -> launch(Dispatchers.Default) { delay((0L..2L).random()); run.close() }
                    else -> Unit
                }
                val outcome = withTimeout(10_000) { awaiting.await() }
                withTimeout(10_000) { collecting.await() }
                outcome.onSuccess { statuses += it.status.name }
                    .onFailure { assertEquals(ErrorCode.INVALID_ARG, (it as FerruleException).code, "an await that began after close") }
                run.close()
            }
        }
        assertTrue(statuses.all { it == "COMPLETED" || it == "CANCELLED" }, "${statuses.toSet()}")
        assertEquals(before, keysAfterSettling(before))
    }

    /** Header: "A completion after the call timed out or the run was cancelled is accepted and discarded." */
    @Test
    fun aCompletionCausedByTheCancellationIsNotRecorded() = runBlocking {
        val before = settledKeys()
        val recorded = Collections.synchronizedList(mutableListOf<String>())
        val t = Tool("slow", "Slow.") { call ->
            try {
                delay(5)
                "\"finished\""
            } catch (stop: kotlinx.coroutines.CancellationException) {
                throw IllegalStateException("completed because cancelled (${call.id})")
            }
        }
        Agent(scripted(callTurn("c1", "slow"), answerTurn("Done.")), listOf(t)).use { agent ->
            repeat(1000) { i ->
                agent.start(prompt).use { run ->
                    launch(Dispatchers.Default) { if (i % 2 == 0) delay((0L..1L).random()); run.cancel() }
                    val result = withTimeout(10_000) { run.await() }
                    val text = result.messages.getOrNull(2)?.text
                    if (result.status == Status.CANCELLED && text != null && text.startsWith("completed because cancelled")) {
                        recorded += text
                    }
                }
            }
        }
        assertTrue(recorded.isEmpty(), "${recorded.size} cancelled runs recorded a completion made after the cancel")
        assertEquals(before, keysAfterSettling(before))
    }

    // ------------------------------------------------------ await and events

    @Test
    fun anAwaitInProgressSurvivesAConcurrentClose() = runBlocking {
        val before = settledKeys()
        val started = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        waitingAgent(started, cancelled).use { agent ->
            val run = agent.start(prompt)
            val awaiting = async(Dispatchers.Default) { runCatching { run.await() } }
            started.await()
            delay(50)
            run.close() // docs/kotlin.md: "close() ... cancelling a live run (it still ends properly)"
            val outcome = withTimeout(10_000) { awaiting.await() }
            assertEquals(Status.CANCELLED, outcome.getOrNull()?.status,
                "an await already waiting lost the result: ${outcome.exceptionOrNull()}")
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun manyConcurrentAwaitsAndCollectors() = runBlocking {
        val before = settledKeys()
        Agent(scripted(callTurn("c1", "echo", """{"text": "hi"}"""), answerTurn("Done.")), listOf(echo)).use { agent ->
            val run = agent.start(prompt)
            val awaits = (1..500).map { async(Dispatchers.IO) { run.await() } }
            val collectors = (1..2).map { async(Dispatchers.Default) { runCatching { run.events.toList().map { it.type } } } }
            val results = withTimeout(30_000) { awaits.awaitAll() }
            assertTrue(results.all { it == results[0] && it.status == Status.COMPLETED })
            val seen = withTimeout(10_000) { collectors.awaitAll() }
            // One collector at a time: the other sees the events the first left (none) or is refused.
            assertEquals(1, seen.count { it.getOrNull()?.lastOrNull() == "run_end" }, "$seen")
            assertTrue(seen.all { it.isSuccess || it.exceptionOrNull() is IllegalStateException }, "$seen")
            // Collect again after the end and after close.
            assertEquals(emptyList<String>(), run.events.toList().map { it.type })
            run.close()
            assertEquals(emptyList<String>(), run.events.toList().map { it.type })
            // await after close keeps the result an earlier await had.
            assertEquals(results[0], run.await())
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun earlyStoppingCollectorsDoNotCancel() = runBlocking {
        val before = settledKeys()
        Agent(scripted(callTurn("c1", "echo", """{"text": "hi"}"""), answerTurn("Done.")), listOf(echo)).use { agent ->
            repeat(200) {
                agent.start(prompt).use { run ->
                    val first = run.events.first()
                    assertEquals("run_start", first.type)
                    val next = run.events.take(2).toList()
                    assertEquals("turn_start", next[0].type)
                    assertEquals(2, next.size)
                    val result = withTimeout(10_000) { run.await() }
                    assertEquals(Status.COMPLETED, result.status)
                    assertEquals("run_end", run.events.toList().last().type)
                }
            }
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun aCollectorCancelledByWithTimeoutCancelsTheRun() = runBlocking {
        val before = settledKeys()
        val started = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        waitingAgent(started, cancelled).use { agent ->
            agent.start(prompt).use { run ->
                withTimeoutOrNull(300) { run.events.toList() }
                withTimeout(10_000) { cancelled.await() }
                assertEquals(Status.CANCELLED, withTimeout(10_000) { run.await() }.status)
            }
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun updateWithAStringPartialDecodes() = runBlocking {
        val t = Tool("progress", "Progress.") { call ->
            call.update("\"half way\"")
            call.update(ToolResult.text("almost"))
            "\"done\""
        }
        Agent(scripted(callTurn("c1", "progress"), answerTurn("Done.")), listOf(t)).use { agent ->
            agent.start(prompt).use { run ->
                val events = run.events.toList()
                assertEquals(2, events.filterIsInstance<Event.ToolExecutionUpdate>().size, "${events.map { it::class.simpleName }}")
                assertTrue(events.none { it is Event.Unknown })
            }
        }
    }

    @Test
    fun everyEventOfARichRunDecodes() = runBlocking {
        val turns = arrayOf(
            FerruleJson.parseToJsonElement("""{"delay_ms": 100, "thinking": "hmm", "tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "x"}},
                {"id": "c2", "name": "missing", "arguments": "{not json"}]}"""),
            answerTurn("Done."))
        val config = scripted(*turns).copy(model = ModelConfig("scripted", script = turns.toList(), maxRetries = 2, retryBackoffMs = 1),
            history = History(50))
        Agent(config, listOf(echo)).use { agent ->
            agent.start(prompt).use { run ->
                run.inject(Message.user("Injected."))
                val events = withTimeout(10_000) { run.events.toList() }
                assertTrue(events.none { it is Event.Unknown }, "${events.filterIsInstance<Event.Unknown>()}")
                assertTrue(events.any { it is Event.MessageInjected })
                val result = run.await()
                assertEquals(Status.COMPLETED, result.status)
            }
        }
    }

    @Test
    fun unusualUsageNumbersStillGiveAResult() = runBlocking {
        // ferrule's counts are u64 (summed saturating); Kotlin's Usage holds Long.
        val turn = FerruleJson.parseToJsonElement(
            """{"text": "Hi.", "usage": {"input_tokens": 9223372036854775808, "output_tokens": 1}}""")
        Agent(scripted(turn)).use { agent ->
            agent.start(prompt).use { run ->
                val events = run.events.toList()
                val result = runCatching { run.await() }
                assertTrue(result.isSuccess, "await threw: ${result.exceptionOrNull()}")
                assertEquals(Usage(inputTokens = Long.MAX_VALUE, outputTokens = 1), result.getOrThrow().usage)
                assertTrue(events.last() is Event.RunEnd, "run_end decoded as ${events.last()}")
            }
        }
    }

    // ---------------------------------------------------------- blocking bodies

    @Test
    fun blockingToolBodiesDoNotStarveAnotherAgent() = runBlocking {
        val before = settledKeys()
        val sleeper = Tool("sleeper", "Sleeps.") { Thread.sleep(3_000); "\"slept\"" }
        val fastEcho = Tool("echo", "Echoes.", options = ToolOptions(timeoutMs = 1000)) { "\"fast\"" }
        var echoed: String? = null
        Agent(scripted(callTurn("c1", "sleeper"), answerTurn("Done.")), listOf(sleeper)).use { blocked ->
            val sleepers = (1..4).map { blocked.start(prompt) }
            delay(300)
            Agent(scripted(callTurn("c1", "echo"), answerTurn("Done.")), listOf(fastEcho)).use { other ->
                val result = withTimeout(20_000) { other.run(prompt) }
                echoed = result.messages[2].text
            }
            // Cancelling the sleeping runs ends them at once (ferrule stops waiting).
            sleepers.forEach { it.cancel() }
            val statuses = withTimeout(20_000) { sleepers.map { it.await().status } }
            assertTrue(statuses.all { it == Status.CANCELLED }, "$statuses")
            sleepers.forEach { it.close() }
        }
        val settled = keysAfterSettling(before, 20_000)
        assertEquals(before, settled, "${liveKinds()}")
        assertEquals("fast", echoed, "another agent's tool timed out behind blocked bodies")
    }

    // ------------------------------------------------------------------ hooks

    @Test
    fun hooksThatMisbehave() = runBlocking {
        val before = settledKeys()
        suspend fun runWith(hook: Hook, timeoutMs: Long? = null): RunResult {
            val config = scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")).copy(hookTimeoutMs = timeoutMs)
            return Agent(config, listOf(echo), listOf(hook)).use { withTimeout(20_000) { it.run(prompt) } }
        }
        val threw = runWith(Hook("tool_call") { error("nope") })
        assertEquals(ErrorCode.HOOK_ABORTED, threw.error?.code)
        assertTrue(threw.error!!.message.endsWith("nope"), "${threw.error}")
        val invalid = runWith(Hook("tool_call") { "{not json" })
        assertEquals(Status.FAILED, invalid.status)
        assertEquals(ErrorCode.INVALID_JSON, invalid.error?.code, "${invalid.error}")
        val otherStage = runWith(Hook("tool_call") { """{"retry": "again"}""" })
        assertEquals(Status.FAILED, otherStage.status)
        assertEquals(ErrorCode.INVALID_ARG, otherStage.error?.code, "${otherStage.error}")
        val silent = runWith(Hook("tool_call") { awaitCancellation() }, timeoutMs = 300)
        assertEquals(ErrorCode.TIMEOUT, silent.error?.code, "${silent.error}")
        val blocking = runWith(Hook("tool_call") { Thread.sleep(1_500); "{}" }, timeoutMs = 300)
        assertEquals(ErrorCode.TIMEOUT, blocking.error?.code, "${blocking.error}")
        val ownCancel = runWith(Hook("tool_call") { throw kotlinx.coroutines.CancellationException("") })
        assertEquals(ErrorCode.HOOK_ABORTED, ownCancel.error?.code, "${ownCancel.error}")
        assertEquals(before, keysAfterSettling(before, 5_000))
    }

    // ---------------------------------------------------------- configuration

    @Test
    fun messagesRoundTripThroughAReplay() = runBlocking {
        val first = Agent(scripted(callTurn("c1", "echo", """{"text": "hi"}"""), answerTurn("Done.")), listOf(echo))
            .use { it.run(prompt) }
        val replayed = Agent(scripted(answerTurn("Again.")), listOf(echo)).use {
            it.run(RunInput.messages(first.messages + Message.user("More?")))
        }
        assertEquals(Status.COMPLETED, replayed.status, "${replayed.error}")
        assertEquals(first.messages, replayed.messages.take(first.messages.size))
        // A system message of two parts, a tool message without name, a message with a non-text part.
        val system = Message("system", listOf(Part.text("a"), Part.text("b")))
        assertEquals("""{"role":"system","content":"ab"}""", FerruleJson.encodeToString(Message.serializer(), system))
        val tool = Message("tool", listOf(Part.text("r")), toolCallId = "c1")
        assertEquals("""{"role":"tool","tool_call_id":"c1","name":"","content":[{"type":"text","text":"r"}],"is_error":false}""",
            FerruleJson.encodeToString(Message.serializer(), tool))
        val withNull = FerruleJson.decodeFromString(Message.serializer(), """{"role": "user", "content": null}""")
        assertEquals(Message("user"), withNull)
        // Each part writes its type's fields only; one of a type this package does not know keeps only its type.
        val parts = listOf(Part("text"), Part("redacted_thinking", data = "opaque", text = "stray"), Part("audio", url = "x"))
        assertEquals("""[{"type":"text","text":""},{"type":"redacted_thinking","data":"opaque"},{"type":"audio"}]""",
            FerruleJson.encodeToString(kotlinx.serialization.builtins.ListSerializer(Part.serializer()), parts))
        val empty = FerruleJson.decodeFromString(Message.serializer(), """{"role": "user", "content": "", "name": "x"}""")
        assertEquals(Message("user"), empty, "no text is no parts; a field of another role is not read")
        // Null is absent; a present value is written, empty or not.
        val present = listOf(Part("thinking", thinking = "hm", signature = ""), Part("image", mediaType = "image/png", data = ""))
        val presentJson = """[{"type":"thinking","thinking":"hm","signature":""},{"type":"image","media_type":"image/png","data":""}]"""
        assertEquals(presentJson, FerruleJson.encodeToString(kotlinx.serialization.builtins.ListSerializer(Part.serializer()), present))
        assertEquals(present, FerruleJson.decodeFromString(kotlinx.serialization.builtins.ListSerializer(Part.serializer()), presentJson))
        // A message or part of a kind this package does not know is written back as it was read.
        for (unknown in listOf("""{"role":"narrator","content":"?","voice":{"pitch":2}}""",
            """{"role":"user","content":[{"type":"audio","data":"AAEC","format":"wav"},{"type":"text","text":"hi"}]}""")) {
            val read = FerruleJson.decodeFromString(Message.serializer(), unknown)
            assertEquals(unknown, FerruleJson.encodeToString(Message.serializer(), read))
        }
        // A field of its role with a value of the wrong type is refused, as kotlinx.serialization refuses one.
        for (wrong in listOf("""{"role": 5}""", """{"role": "tool", "is_error": "yes"}""", """{"role": "tool", "tool_call_id": 7}""",
            """{"role": "user", "content": 5}""", """{"role": "user", "content": {"type": "text"}}""",
            """{"role": "user", "content": [{"type": "text", "text": ["a"]}]}""", """{"role": "assistant", "tool_calls": {}}""",
            """{"role": "assistant", "usage": "many"}""", """["role", "user"]""", """{"content": "no role"}""")) {
            assertThrows<kotlinx.serialization.SerializationException>(wrong) { FerruleJson.decodeFromString(Message.serializer(), wrong) }
        }
        // As kotlinx.serialization reads a tree: a quoted flag counts, and an unquoted string does when lenient.
        assertEquals(true, FerruleJson.decodeFromString(Message.serializer(), """{"role": "tool", "is_error": "true"}""").isError)
        val lenient = kotlinx.serialization.json.Json(FerruleJson) { isLenient = true }
        assertEquals("7", lenient.decodeFromString(Message.serializer(), """{"role": "tool", "tool_call_id": 7}""").toolCallId)
        // The tool calls of an assistant message are read with their own decoder.
        val asked = FerruleJson.decodeFromString(Message.serializer(),
            """{"role": "assistant", "tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\"n\": 1}"}], """ +
                """"stop_reason": "tool_use"}""")
        assertEquals(listOf(ToolCallRequest("c1", "echo", "{\"n\": 1}")), asked.toolCalls)
        assertEquals("tool_use", asked.stopReason)
    }

    @Test
    fun resumeWithGarbage() = runBlocking {
        val before = settledKeys()
        Agent(scripted(answerTurn("x"))).use { agent ->
            val notJson = assertThrows<FerruleException> { agent.start(RunInput.resume("this is not json", emptyMap())) }
            assertEquals(ErrorCode.INVALID_ARG, notJson.code)
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun resumeWithDecisionsForUnknownIds() = runBlocking {
        val before = settledKeys()
        fun agent() = Agent(scripted(callTurn("c1", "delete", """{"text": "a"}"""), answerTurn("Done.")),
            listOf(Tool("delete", "Deletes.", options = ToolOptions(needsApproval = true)) { "\"deleted\"" }))
        val first = agent().use { it.run(prompt) }
        assertEquals(Status.INTERRUPTED, first.status)
        agent().use { other ->
            val extra = runCatching {
                other.start(RunInput.resume(first.stateJson!!, mapOf("c1" to Decision(true), "bogus" to Decision(false))))
                    .use { withTimeout(10_000) { it.await() } }
            }
            assertEquals(ErrorCode.INVALID_ARG, (extra.exceptionOrNull() as? FerruleException)?.code, "$extra")
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun refusedRegistrationsReleaseTheirKeys() {
        val before = settledKeys()
        assertEquals(ErrorCode.DUPLICATE_TOOL, assertThrows<FerruleException> { Agent(scripted(), listOf(echo, echo)) }.code)
        assertEquals(ErrorCode.INVALID_ARG,
            assertThrows<FerruleException> { Agent(scripted(), listOf(echo), listOf(Hook("bogus") { "{}" })) }.code)
        assertEquals(ErrorCode.INVALID_SCHEMA,
            assertThrows<FerruleException> { Agent(scripted(), listOf(Tool("s", "s", schema = """{"type": 7}""") { "\"\"" })) }.code)
        assertEquals(before, Handles.count)
    }

    @Test
    fun anInvalidUpdateFailsTheCall() = runBlocking {
        val before = settledKeys()
        val thrown = AtomicReference<Throwable?>()
        val t = Tool("bad_update", "Bad update.") { call ->
            thrown.set(runCatching { call.update("{nope") }.exceptionOrNull())
            "\"fine\""
        }
        val result = Agent(scripted(callTurn("c1", "bad_update"), answerTurn("Done.")), listOf(t)).use { it.run(prompt) }
        val m = result.messages.first { it.role == "tool" }
        assertTrue(m.isError)
        assertEquals(ErrorCode.INVALID_JSON, (thrown.get() as? FerruleException)?.code)
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun aToolMessageWithoutNameReplays() = runBlocking {
        val transcript = listOf(Message.user("Echo."),
            Message("assistant", toolCalls = listOf(ToolCallRequest("c1", "echo", """{"text": "x"}"""))),
            Message("tool", listOf(Part.text("x from kotlin")), toolCallId = "c1"))
        val result = Agent(scripted(answerTurn("Done.")), listOf(echo)).use { it.run(RunInput.messages(transcript)) }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
    }

    // -------------------------------------------------------- object lifetime

    @Test
    fun agentClosedWhileAnotherThreadStartsRuns() = runBlocking {
        val before = settledKeys()
        repeat(200) {
            val agent = Agent(scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")), listOf(echo))
            val runs = Collections.synchronizedList(mutableListOf<Run>())
            val starter = launch(Dispatchers.Default) {
                while (true) {
                    val run = try {
                        agent.start(prompt)
                    } catch (e: FerruleException) {
                        assertEquals(ErrorCode.INVALID_ARG, e.code); break
                    }
                    runs += run
                }
            }
            launch(Dispatchers.Default) { delay((0L..2L).random()); agent.close() }
            withTimeout(10_000) { starter.join() }
            val statuses = withTimeout(20_000) { runs.map { r -> r.use { it.await().status } } }
            assertTrue(statuses.all { it == Status.COMPLETED }, "$statuses")
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun doubleClosesCleanerAndCancelsRace() = runBlocking {
        val before = settledKeys()
        val t = Tool("tick", "Ticks.") { call ->
            Thread { repeat(3) { runCatching { call.update("\"t\"") } } }.start()
            delay((0L..1L).random()); "\"tock\""
        }
        repeat(300) { i ->
            val agent = Agent(scripted(callTurn("c1", "tick"), answerTurn("Done.")), listOf(t))
            val run = agent.start(prompt)
            val jobs = listOf(
                launch(Dispatchers.Default) { run.close() },
                launch(Dispatchers.Default) { run.close() },
                launch(Dispatchers.Default) { run.cancel() },
                launch(Dispatchers.Default) { agent.close() },
                launch(Dispatchers.Default) { agent.close() },
                launch(Dispatchers.Default) { runCatching { agent.start(prompt).close() } },
            )
            if (i % 10 == 0) System.gc()
            withTimeout(10_000) { jobs.forEach { it.join() } }
            assertEquals(ErrorCode.INVALID_ARG, assertThrows<FerruleException> { agent.start(prompt) }.code)
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun agentAndRunsDroppedWhileInUse() = runBlocking {
        val before = settledKeys()
        fun startOnAnUnreferencedAgent(): List<kotlinx.coroutines.Deferred<Status>> {
            val agent = Agent(scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")), listOf(echo))
            return (1..50).map { i ->
                val run = agent.start(prompt)
                GlobalScope.async(Dispatchers.Default, start = CoroutineStart.DEFAULT) { run.await().status }
            }
        }
        repeat(5) {
            val pending = startOnAnUnreferencedAgent()
            repeat(3) { System.gc(); delay(5) }
            val statuses = withTimeout(20_000) { pending.awaitAll() }
            assertTrue(statuses.all { it == Status.COMPLETED }, "$statuses")
        }
        // Runs nobody holds: collected, cancelled, their keys released.
        val agent = Agent(scripted(callTurn("c1", "wait"), answerTurn("Never.")),
            listOf(Tool("wait", "Waits.") { awaitCancellation() }))
        repeat(100) { agent.start(prompt) }
        agent.close()
        withTimeoutOrNull(20_000) { while (Handles.count > before) { System.gc(); delay(20) } }
        assertEquals(before, Handles.count)
    }
}
