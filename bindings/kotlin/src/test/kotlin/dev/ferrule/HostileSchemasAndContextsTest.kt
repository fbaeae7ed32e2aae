package dev.ferrule

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineExceptionHandler
import kotlinx.coroutines.CoroutineName
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.ThreadContextElement
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.buffer
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.yield
import kotlinx.serialization.KSerializer
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.Transient
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.serializer
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.Timeout
import org.junit.jupiter.api.assertThrows
import java.nio.CharBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction
import java.util.Collections
import java.util.concurrent.Executors
import java.util.concurrent.RejectedExecutionException
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference
import kotlin.coroutines.CoroutineContext
import kotlin.random.Random

// ---------------------------------------------------------------- schema types

@Serializable
data class MutA(val name: String, val b: MutB? = null)

@Serializable
data class MutB(val a: MutA)

/** A and B each contain the other; neither is the root. */
@Serializable
data class MutRoot(val a: MutA, val b: MutB)

@Serializable
data class MapNode(val label: String, val kids: Map<String, MapNode> = emptyMap())

@Serializable
data class NullNode(val v: Int, val next: NullNode? = null)

@Serializable
data class Tree<T>(val value: T, val kids: List<Tree<T>> = emptyList())

@Serializable
data class TwoTrees(val ints: Tree<Int>, val strings: Tree<String>, val nested: Tree<Tree<Int>>? = null)

object P1 {
    @Serializable
    data class Node(val a: Int, val next: Node? = null)
}

object P2 {
    @Serializable
    data class Node(val b: String, val next: Node? = null)
}

/** A class whose simple name is the one SchemaWriter makes up for the second "Node". */
@Serializable
data class Node3(val c: Boolean, val next: Node3? = null)

@Serializable
data class SameSimpleNames(val n3: Node3, val p1: P1.Node, val p2: P2.Node)

@Serializable
@SerialName("tree/node")
data class SlashNode(val x: Int, val kids: List<SlashNode> = emptyList())

@Serializable
data class HoldsSlashNode(val root: SlashNode)

@Serializable
@SerialName("my node")
data class SpaceNode(val x: Int, val kids: List<SpaceNode> = emptyList())

@Serializable
data class HoldsSpaceNode(val root: SpaceNode)

@Serializable
data class OddPropertyNames(
    @SerialName("\$ref") val ref: String,
    @SerialName("a/b") val slash: Int,
    @SerialName("~0") val tilde: Int,
    @SerialName("\$defs") val defs: List<Int> = emptyList(),
)

@Serializable
data class DeepSealed(val x: List<Map<String, Shape?>>)

@Serializable
data object Ping

@Serializable
data class WithObject(val p: Ping, val n: Int)

@Serializable
data class Optionals(val a: Int, @Transient val t: Int = 5, val b: String = "x", val c: String? = null, val d: String?)

@Serializable
data class Nullables(
    val a: Int?, val b: List<String?>?, val c: Map<String, Int?>?, val d: CustomerId?, val e: UInt?,
    val f: Plan?, val g: Folder?, val h: ULong?, val i: UByte?,
)

@Serializable
data class Numbers(val f: Float, val d: Double, val l: Long, val ul: ULong, val c: Char, val s: Short, val b: Byte)

@JvmInline
@Serializable
value class NodeRef(val node: VNode)

@Serializable
data class VNode(val v: Int, val next: NodeRef? = null)

@Serializable
data class HoldsVNode(val root: VNode)

@Serializable
data class Mixed<T>(val v: T, val other: Mixed<String>? = null)

// -------------------------------------------------------------- context types

/** A thread-context element (as MDC would be) whose value a body must see. */
class Tag(val value: String) : ThreadContextElement<String?> {
    companion object Key : CoroutineContext.Key<Tag>

    override val key: CoroutineContext.Key<*> get() = Key

    override fun updateThreadContext(context: CoroutineContext): String? = tagValue.get().also { tagValue.set(value) }

    override fun restoreThreadContext(context: CoroutineContext, oldState: String?) = tagValue.set(oldState)
}

val tagValue = ThreadLocal<String?>()

/** A dispatcher that refuses every task (a pool shut down, a saturated bounded queue). */
class RejectingDispatcher : CoroutineDispatcher() {
    override fun dispatch(context: CoroutineContext, block: Runnable) = throw RejectedExecutionException("full")
}

/**
 * Hostile tests of events' hand-over between collectors, await, coroutine
 * contexts, UTF-8, derived schemas and results, each asserting what the header
 * or docs/kotlin.md promises.
 */
@Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class HostileSchemasAndContextsTest {
    private val prompt = RunInput.prompt("Go.")

    /** A tool that sends [n] numbered updates, then answers. */
    private fun counting(n: Int) = Tool("count", "Counts.") { call ->
        repeat(n) { call.update("\"u$it\"") }
        "\"counted\""
    }

    private fun label(e: Event): String = when (e) {
        is Event.ToolExecutionUpdate -> "update:" + e.partialResult.text
        else -> e.type
    }

    private fun countingAgent(n: Int) = Agent(scripted(callTurn("c1", "count"), answerTurn("Done.")), listOf(counting(n)))

    private fun sinkOf(run: Run): EventSink =
        Run::class.java.getDeclaredField("sink").apply { isAccessible = true }.get(run) as EventSink

    // ====================================================== 1. events

    /** Sequential early-stopping collectors, racing each other, see every event once, in order. */
    @Test
    fun racingEarlyStoppersSeeEveryEventOnceInOrder() = runBlocking {
        val before = settledKeys()
        countingAgent(20).use { agent ->
            val reference = agent.start(prompt).use { run -> run.events.map { label(it) }.toList() }
            repeat(300) { iteration ->
                agent.start(prompt).use { run ->
                    val seen = Collections.synchronizedList(mutableListOf<String>())
                    val refused = AtomicInteger()
                    val done = CompletableDeferred<Unit>()
                    val collectors = (1..3).map {
                        launch(Dispatchers.Default) {
                            while (!done.isCompleted) {
                                try {
                                    run.events.take(Random.nextInt(1, 5)).collect { e ->
                                        seen += label(e)
                                        if (e is Event.RunEnd) done.complete(Unit)
                                    }
                                } catch (busy: IllegalStateException) {
                                    refused.incrementAndGet()
                                }
                                if (iteration % 2 == 0) delay(Random.nextLong(0, 2)) else yield()
                            }
                        }
                    }
                    withTimeout(10_000) { done.await() }
                    collectors.forEach { it.join() }
                    assertEquals(reference, seen.toList(), "iteration $iteration")
                    assertEquals(Status.COMPLETED, run.await().status)
                }
            }
        }
        assertEquals(before, keysAfterSettling(before))
    }

    /** A collector cancelled while another tries to start: the run is cancelled, the other gets the rest, nothing hangs. */
    @Test
    fun aCollectorCancelledAsAnotherStarts() = runBlocking {
        val before = settledKeys()
        val slow = Tool("slow", "Slow.") { call ->
            repeat(20) { call.update("\"u$it\""); delay(1) }
            "\"done\""
        }
        Agent(scripted(callTurn("c1", "slow"), answerTurn("Done.")), listOf(slow)).use { agent ->
            repeat(200) { iteration ->
                agent.start(prompt).use { run ->
                    val seen = Collections.synchronizedList(mutableListOf<String>())
                    // The second may claim the events before the first starts: then the first is refused.
                    val first = launch(Dispatchers.Default) {
                        try {
                            run.events.collect { seen += label(it) }
                        } catch (busy: IllegalStateException) {
                            return@launch
                        }
                    }
                    delay(Random.nextLong(0, 5))
                    val second = async(Dispatchers.Default) {
                        while (true) {
                            try {
                                run.events.collect { seen += label(it) }
                                return@async
                            } catch (busy: IllegalStateException) {
                                yield()
                            }
                        }
                    }
                    first.cancel()
                    withTimeout(10_000) { second.await() }
                    assertEquals("run_end", seen.last(), "iteration $iteration")
                    val once = listOf("run_start", "tool_execution_start", "tool_execution_end", "run_end")
                    assertTrue(once.all { type -> seen.count { it == type } <= 1 }, "an event twice: $seen")
                    val updates = seen.filter { it.startsWith("update:") }.map { it.removePrefix("update:u").toInt() }
                    assertEquals(updates.indices.toList(), updates, "updates lost, repeated or out of order: $seen")
                    val status = withTimeout(10_000) { run.await() }.status
                    assertTrue(status == Status.CANCELLED || status == Status.COMPLETED, "$status")
                }
            }
        }
        assertEquals(before, keysAfterSettling(before))
    }

    /** Claim racing close: every collector ends, nothing is left behind. */
    @Test
    fun collectorsRacingClose() = runBlocking {
        val before = settledKeys()
        countingAgent(5).use { agent ->
            repeat(500) {
                val run = agent.start(prompt)
                val collected = async(Dispatchers.Default) { runCatching { run.events.toList() } }
                launch(Dispatchers.Default) { run.close() }
                val outcome = withTimeout(10_000) { collected.await() }
                val events = outcome.getOrThrow()
                assertTrue(events.isEmpty() || events.last() is Event.RunEnd, "${events.map { it.type }}")
                assertEquals(0, run.events.toList().size)
            }
        }
        assertEquals(before, keysAfterSettling(before))
    }

    /** docs/kotlin.md: close() lets go of events nobody collects; here a collector under way at the close then stops early. */
    @Test
    fun eventsLeftByACollectorThatWasUnderWayAtCloseAreLetGo() = runBlocking {
        val before = settledKeys()
        countingAgent(2_000).use { agent ->
            val run = agent.start(prompt)
            withTimeout(10_000) { run.await() }
            val inside = CompletableDeferred<Unit>()
            val gate = CompletableDeferred<Unit>()
            val collector = launch(Dispatchers.Default) {
                run.events.first { inside.complete(Unit); gate.await(); true }
            }
            inside.await()
            run.close() // a collector is under way: it goes on
            gate.complete(Unit) // ...and stops early on its own
            collector.join()
            // Nobody collects now, and the run was closed: its events should be let go.
            val kept = sinkOf(run).channel.let { ch -> generateSequence { ch.tryReceive().getOrNull() }.count() }
            assertEquals(0, kept, "events kept in memory after close() with nobody collecting")
        }
        assertEquals(before, keysAfterSettling(before))
    }

    /** A collector on a plain thread while only the flow holds the Run; the GC runs all along. */
    @Test
    fun collectingThroughTheFlowAloneWhileTheGcRuns() = runBlocking {
        val before = settledKeys()
        val started = AtomicInteger()
        val t = Tool("slowish", "Slow.") { delay(Random.nextLong(0, 3)); started.incrementAndGet(); "\"ok\"" }
        Agent(scripted(callTurn("c1", "slowish"), answerTurn("Done.")), listOf(t)).use { agent ->
            val stop = AtomicInteger()
            val gc = Thread { while (stop.get() == 0) { System.gc(); Thread.sleep(1) } }.apply { start() }
            val failures = Collections.synchronizedList(mutableListOf<String>())
            val threads = (1..4).map {
                Thread {
                    repeat(50) {
                        val flow = agent.start(prompt).events // the Run itself is dropped here
                        val types = runBlocking { withTimeoutOrNull(10_000) { flow.map { it.type }.toList() } }
                        if (types == null) {
                            failures += "hung"
                        } else if (types.lastOrNull() != "run_end") {
                            failures += "$types"
                        } else if (types.contains("run_end") && !types.contains("tool_execution_end")) {
                            failures += "$types"
                        }
                    }
                }.apply { start() }
            }
            threads.forEach { it.join() }
            stop.set(1); gc.join()
            assertTrue(failures.isEmpty(), "${failures.size} bad: ${failures.take(3)}")
        }
        assertEquals(before, keysAfterSettling(before, 20_000))
    }

    // ====================================================== 2. await

    /** Awaits cancelled mid-way: every clone is freed (the agent's tool keys come back), the run is cancelled. */
    @Test
    fun awaitsCancelledMidWayFreeTheirClones() = runBlocking {
        val before = settledKeys()
        repeat(100) {
            val started = CompletableDeferred<Unit>()
            val cancelled = CompletableDeferred<Unit>()
            val agent = waitingAgent(started, cancelled)
            val run = agent.start(prompt)
            val awaits = (1..20).map { i ->
                async(Dispatchers.Default) { withTimeoutOrNull(Random.nextLong(1, 30) + i % 3) { run.await() } }
            }
            awaits.awaitAll()
            assertEquals(Status.CANCELLED, withTimeout(10_000) { run.await() }.status)
            if (started.isCompleted) withTimeout(10_000) { cancelled.await() }
            run.close(); agent.close()
        }
        assertEquals(before, keysAfterSettling(before), "a run clone kept the agent's tools (a handle leaked)")
    }

    /** await vs close vs cancel vs the Cleaner. */
    @Test
    fun awaitCloseCancelAndCleanerRace() = runBlocking {
        val before = settledKeys()
        val odd = Collections.synchronizedList(mutableListOf<String>())
        val t = Tool("tick", "Ticks.") { delay(Random.nextLong(0, 2)); "\"tock\"" }
        Agent(scripted(callTurn("c1", "tick"), answerTurn("Done.")), listOf(t)).use { agent ->
            repeat(500) { i ->
                val run = agent.start(prompt)
                val awaits = (1..3).map { async(Dispatchers.Default) { runCatching { run.await() } } }
                when (i % 4) {
                    0 -> launch(Dispatchers.Default) { run.close() }
                    1 -> launch(Dispatchers.Default) { run.cancel(); run.close() }
                    2 -> launch(Dispatchers.Default) { run.close(); run.close() }
                    else -> Unit
                }
                if (i % 25 == 0) System.gc()
                val outcomes = withTimeout(10_000) { awaits.awaitAll() }
                for (o in outcomes) {
                    val e = o.exceptionOrNull()
                    if (e != null && !(e is FerruleException && e.code == ErrorCode.INVALID_ARG)) odd += "$e"
                }
                val statuses = outcomes.mapNotNull { it.getOrNull()?.status }.toSet()
                if (statuses.size > 1) odd += "different results: $statuses"
                run.close()
            }
        }
        assertTrue(odd.isEmpty(), "${odd.size}: ${odd.take(5)}")
        assertEquals(before, keysAfterSettling(before))
    }

    // ====================================================== 3. coroutine contexts

    private suspend fun runsEnd(context: CoroutineContext, tool: Tool = echo, runs: Int = 3, hook: Boolean = true): List<String> {
        val config = scripted(callTurn("c1", tool.name, """{"text": "x"}"""), answerTurn("Done."))
        val hooks = if (hook) listOf(Hook("tool_call") { "{}" }) else emptyList()
        return Agent(config, listOf(tool), hooks, context = context).use { agent ->
            (1..runs).map {
                val r = withTimeoutOrNull(5_000) { agent.run(prompt) }
                if (r == null) "hung" else "${r.status}/${r.messages.getOrNull(2)?.text}"
            }
        }
    }

    @Test
    fun aSingleThreadDispatcherClosedWhileRunsGoOn() = runBlocking {
        val before = settledKeys()
        val executor = Executors.newSingleThreadExecutor()
        val dispatcher = executor.asCoroutineDispatcher()
        val first = runsEnd(dispatcher, runs = 1)
        dispatcher.close()
        val after = runsEnd(dispatcher)
        assertEquals(listOf("COMPLETED/x from kotlin"), first)
        assertTrue(after.none { it == "hung" }, "$after")
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun aDispatcherThatRejectsStillAnswersEveryCall() = runBlocking {
        val before = settledKeys()
        val toolOnly = runsEnd(RejectingDispatcher(), runs = 1, hook = false)
        val withHook = runsEnd(RejectingDispatcher(), runs = 1)
        assertEquals(listOf(false, false), listOf(toolOnly, withHook).map { "hung" in it },
            "a call was never answered: tool only $toolOnly, with a hook $withHook")
        assertEquals(before, keysAfterSettling(before, 3_000), "keys left: ${Handles.count - before}")
    }

    @Test
    fun limitedParallelismOneWithBlockingBodies() = runBlocking {
        val before = settledKeys()
        val sleeper = Tool("echo", "Sleeps.") { Thread.sleep(200); "\"slept\"" }
        val one = Dispatchers.Default.limitedParallelism(1)
        Agent(scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")), listOf(sleeper),
            listOf(Hook("tool_call") { "{}" }), context = one).use { agent ->
            val results = withTimeout(20_000) { (1..8).map { async { agent.run(prompt) } }.awaitAll() }
            assertTrue(results.all { it.status == Status.COMPLETED }, "${results.map { it.status }}")
        }
        assertEquals(before, keysAfterSettling(before))
    }

    @Test
    fun exceptionHandlerAndThreadContextElements() = runBlocking {
        val before = settledKeys()
        val seen = AtomicReference<String?>()
        val handled = AtomicInteger()
        val tagged = Tool("echo", "Tagged.") { seen.set(tagValue.get()); "\"tagged\"" }
        val context = Dispatchers.IO + Tag("req-42") + CoroutineName("tools") +
            CoroutineExceptionHandler { _, _ -> handled.incrementAndGet() }
        assertEquals(listOf("COMPLETED/tagged"), runsEnd(context, tagged, runs = 1))
        assertEquals("req-42", seen.get())
        assertEquals(0, handled.get())
        assertEquals(before, keysAfterSettling(before, 3_000))
    }

    /** docs/kotlin.md: bodies run on Dispatchers.IO unless the context says otherwise; a CoroutineName alone names no dispatcher. */
    @Test
    fun aContextWithoutADispatcherStillRunsBodiesOnIo() = runBlocking {
        val dispatcher = AtomicReference<Any?>()
        val where = Tool("echo", "Which dispatcher?") {
            dispatcher.set(kotlin.coroutines.coroutineContext[kotlin.coroutines.ContinuationInterceptor]); "\"here\""
        }
        runsEnd(CoroutineName("named"), where, runs = 1)
        // Blocking bodies then take Dispatchers.Default's few threads, where IO would allow 64.
        assertEquals(Dispatchers.IO, dispatcher.get(), "a CoroutineName alone moved bodies to ${dispatcher.get()}")
    }

    @Test
    fun refusedContexts() {
        assertThrows<IllegalArgumentException> { Agent(scripted(), context = Dispatchers.Unconfined + CoroutineName("x")) }
        assertThrows<IllegalArgumentException> { Agent(scripted(), context = Dispatchers.IO + Job()) }
        assertThrows<IllegalArgumentException> { Agent(scripted(), context = kotlinx.coroutines.NonCancellable) }
    }

    @Serializable
    @Description("A plan the customer is on.")
    enum class DescribedPlan { BASIC }

    @Serializable
    @Description("A customer's id.")
    @JvmInline
    value class DescribedId(val v: String)

    @Serializable
    data class UsesDescribed(val plan: DescribedPlan, val id: DescribedId)

    /** docs/kotlin.md: @Description on a property or class. An enum's or value class's own description is dropped. */
    @Test
    fun classDescriptionsOfEnumsAndValueClasses() {
        val properties = schema<UsesDescribed>()["properties"]!!.jsonObject
        assertEquals(listOf("A plan the customer is on.", "A customer's id."),
            listOf("plan", "id").map { properties[it]!!.jsonObject["description"]?.jsonPrimitive?.content }, "$properties")
    }

    // ====================================================== 4. utf8

    private fun strict(s: String): ByteArray? = try {
        val encoder = Charsets.UTF_8.newEncoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
        val buffer = encoder.encode(CharBuffer.wrap(s))
        ByteArray(buffer.remaining()).also { buffer.get(it) }
    } catch (invalid: CharacterCodingException) {
        null
    }

    private fun ours(s: String): ByteArray? = try {
        s.utf8()
    } catch (invalid: FerruleException) {
        assertEquals(ErrorCode.INVALID_UTF8, invalid.code)
        null
    }

    @Test
    fun utf8AgreesWithTheStrictEncoder() {
        val pieces = listOf("a", "é", "\u20AC", "\uD83D\uDE00", "\uD800", "\uDC00", "\uDBFF", "\uDFFF", "\uDC00\uD800", "\u0000", "\uFFFF")
        val random = Random(7)
        val cases = mutableListOf("", "\uD800", "\uDC00", "\uD83D\uDE00", "\uDE00\uD83D", "a\uD800", "\uDC00a",
            "\uD83D\uDE00\uD800", "\uD800\uD83D\uDE00", "\uD83D\uD83D\uDE00", "\uD83D\uDE00\uDE00", "x".repeat(100_000) + "\uD800")
        repeat(20_000) { cases += (0 until random.nextInt(0, 12)).joinToString("") { pieces.random(random) } }
        repeat(2_000) { cases += String(CharArray(random.nextInt(0, 40)) { random.nextInt(0, 0x10000).toChar() }) }
        for (s in cases) {
            val expected = strict(s)
            val actual = ours(s)
            if (expected == null) {
                assertNull(actual, "accepted ${s.map { it.code.toString(16) }}")
            } else {
                assertTrue(expected.contentEquals(actual), "differs on ${s.map { it.code.toString(16) }}")
            }
        }
    }

    // ====================================================== 5. schemas

    private inline fun <reified T> schema(allowExtra: Boolean = false) = schemaOf(serializer<T>().descriptor, allowExtra)

    /**
     * Builds an agent with a typed tool of [T], has the scripted model call it with [value]
     * as [json] encodes it, and returns what happened: "ok" when it decoded back equal.
     */
    private suspend fun <T> roundTrip(serializer: KSerializer<T>, value: T, json: Json = Json): String {
        val seen = AtomicReference<Any?>()
        val t = typedTool("rt", "Round trip.", ToolOptions(), false, serializer, serializer<String>()) { _, args ->
            seen.set(args); "ok"
        }
        val arguments = json.encodeToString(serializer, value)
        val result = try {
            Agent(scripted(callTurn("c1", "rt", arguments), answerTurn("Done.")), listOf(t)).use { it.run(prompt) }
        } catch (refused: FerruleException) {
            return "agent refused the schema: $refused"
        }
        val toolMessage = result.messages.first { it.role == "tool" }
        return when {
            toolMessage.isError -> "error result for $arguments: ${toolMessage.text}"
            seen.get() != value -> "decoded ${seen.get()} from $arguments"
            else -> "ok"
        }
    }

    @Test
    fun mutualRecursionMapsNullablesAndGenerics() = runBlocking {
        val a = MutA("x", MutB(MutA("y", MutB(MutA("z")))))
        val outcomes = mapOf(
            "MutA" to roundTrip(serializer(), a),
            "MutRoot" to roundTrip(serializer(), MutRoot(a, MutB(a))),
            "MapNode" to roundTrip(serializer(), MapNode("r", mapOf("k" to MapNode("c", mapOf("j" to MapNode("d")))))),
            "NullNode" to roundTrip(serializer(), NullNode(1, NullNode(2, NullNode(3)))),
            "TwoTrees" to roundTrip(serializer(), TwoTrees(Tree(1, listOf(Tree(2))), Tree("a", listOf(Tree("b"))),
                Tree(Tree(1), listOf(Tree(Tree(2, listOf(Tree(3)))))))),
            "VNode" to roundTrip(serializer(), VNode(1, NodeRef(VNode(2, NodeRef(VNode(3)))))),
            "HoldsVNode" to roundTrip(serializer(), HoldsVNode(VNode(1, NodeRef(VNode(2))))),
            "Mixed" to roundTrip(serializer(), Mixed(1, Mixed("a", Mixed("b")))),
        )
        assertEquals(outcomes.mapValues { "ok" }, outcomes)
        val defs = schema<TwoTrees>()["\$defs"]!!.jsonObject.keys
        assertEquals(3, defs.size, "$defs")
    }

    @Test
    fun defsNamesAreUniqueForClassesOfTheSameSimpleName() = runBlocking {
        val value = SameSimpleNames(Node3(true, Node3(false)), P1.Node(1, P1.Node(2)), P2.Node("b", P2.Node("c")))
        val defs = schema<SameSimpleNames>()["\$defs"]!!.jsonObject.keys
        val outcome = roundTrip(serializer(), value)
        assertEquals(listOf(3, "ok"), listOf(defs.size, outcome), "\$defs: $defs")
    }

    @Test
    fun defsNamesAreEscapedInReferences() = runBlocking {
        val outcomes = mapOf(
            "slash" to roundTrip(serializer(), HoldsSlashNode(SlashNode(1, listOf(SlashNode(2))))),
            "space" to roundTrip(serializer(), HoldsSpaceNode(SpaceNode(1, listOf(SpaceNode(2))))),
        )
        assertEquals(outcomes.mapValues { "ok" }, outcomes, "refs: ${schema<HoldsSlashNode>()["properties"]}")
    }

    @Test
    fun oddPropertyNamesObjectsTransientsOptionalsNullablesNumbers() = runBlocking {
        val outcomes = mapOf(
            "odd names" to roundTrip(serializer(), OddPropertyNames("r", 1, 2, listOf(3))),
            "data object" to roundTrip(serializer(), Ping),
            "with object" to roundTrip(serializer(), WithObject(Ping, 3)),
            "optionals" to roundTrip(serializer(), Optionals(a = 1, d = null)),
            "optionals, defaults encoded" to roundTrip(serializer(), Optionals(a = 1, c = "c", d = "d"), Json { encodeDefaults = true }),
            "nullables, all null" to roundTrip(serializer(), Nullables(null, null, null, null, null, null, null, null, null)),
            "nullables, all set" to roundTrip(serializer(), Nullables(1, listOf("a", null), mapOf("k" to null, "j" to 2),
                CustomerId("C"), UInt.MAX_VALUE, Plan.SILVER, Folder("f", listOf(Folder("g"))), ULong.MAX_VALUE, UByte.MAX_VALUE)),
            "numbers" to roundTrip(serializer(), Numbers(Float.MAX_VALUE, Double.MIN_VALUE, Long.MIN_VALUE, ULong.MAX_VALUE, 'é',
                Short.MIN_VALUE, Byte.MAX_VALUE)),
            "numbers 2" to roundTrip(serializer(), Numbers(0.1f, -0.0, Long.MAX_VALUE, 0u, '"', 0, 0)),
        )
        assertEquals(outcomes.mapValues { "ok" }, outcomes)
    }

    /** Unsigned properties get a minimum but no maximum: an out-of-range value passes the schema. */
    @Test
    fun unsignedBounds() = runBlocking {
        val counted = tool<Counted, String>("counted", "Counts.") { _, args -> "n=${args.n}" }
        val result = Agent(scripted(callTurn("c1", "counted", """{"n": 4294967296}"""), answerTurn("x")), listOf(counted))
            .use { it.run(prompt) }
        val text = result.messages.first { it.role == "tool" }.text
        assertTrue(text.startsWith("Invalid arguments"), "the schema let 2^32 through to the decoder: $text")
    }

    @Test
    fun sealedDeepInsideHasNoSchema() {
        assertEquals(ErrorCode.INVALID_SCHEMA,
            assertThrows<FerruleException> { tool<DeepSealed, String>("deep", "Deep.") { _, _ -> "" } }.code)
    }

    // ====================================================== 6. results, options, usage, messages

    @Test
    fun everyResultShapeFerruleTakesDecodesInEvents() = runBlocking {
        val shapes = listOf(
            "\"plain\"",
            """{"content": "a string content"}""",
            """{"content": []}""",
            """{"content": [{"type": "text", "text": "a"}], "details": null, "usage": {"input_tokens": 18446744073709551615}}""",
            """{"is_error": true, "content": [{"type": "text", "text": "bad"}]}""",
            """{"content": [{"type": "text", "text": "t"}], "terminate": false, "title": "T", "display": "D", "summary": "S"}""",
        )
        val problems = mutableListOf<String>()
        for (shape in shapes) {
            val t = Tool("shape", "Shapes.") { call -> call.update(shape); shape }
            Agent(scripted(callTurn("c1", "shape"), answerTurn("Done.")), listOf(t)).use { agent ->
                agent.start(prompt).use { run ->
                    val events = withTimeout(10_000) { run.events.toList() }
                    val end = events.filterIsInstance<Event.ToolExecutionEnd>().single()
                    val update = events.filterIsInstance<Event.ToolExecutionUpdate>().singleOrNull()
                    runCatching { end.toolResult }.onFailure { problems += "end of $shape: $it; result=${end.result}" }
                    if (update == null) {
                        problems += "no update for $shape"
                    } else {
                        runCatching { update.partialResult }.onFailure { problems += "update of $shape: $it; partial=${update.partial}" }
                    }
                }
            }
        }
        assertTrue(problems.isEmpty(), problems.joinToString("\n"))
    }

    @Test
    fun toolResultUsageReachesTheEvent() = runBlocking {
        val t = tool<Ping, ToolResult>("usage", "Uses.") { _, _ ->
            ToolResult.text("spent", isError = false).copy(usage = Usage(inputTokens = 7, outputTokens = 3, cachedTokens = 1))
        }
        Agent(scripted(callTurn("c1", "usage"), answerTurn("Done.")), listOf(t)).use { agent ->
            agent.start(prompt).use { run ->
                val end = run.events.toList().filterIsInstance<Event.ToolExecutionEnd>().single()
                assertEquals(Usage(inputTokens = 7, outputTokens = 3, cachedTokens = 1), end.toolResult.usage, "${end.result}")
                assertEquals("spent", end.toolResult.text)
            }
        }
        val negative = Tool("neg", "Negative usage.") {
            ToolResult.text("x").copy(usage = Usage(inputTokens = -1)).json
        }
        val result = Agent(scripted(callTurn("c1", "neg"), answerTurn("Done.")), listOf(negative)).use { it.run(prompt) }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
        assertTrue(result.messages[2].isError, "a negative count is refused: ${result.messages[2].text}")
    }

    @Test
    fun usageSaturatesEverywhere() {
        val max = "18446744073709551615"
        val decoded = FerruleJson.decodeFromString(Usage.serializer(),
            """{"input_tokens": $max, "output_tokens": 99999999999999999999999, "cached_tokens": 9223372036854775807}""")
        assertEquals(Usage(inputTokens = Long.MAX_VALUE, outputTokens = Long.MAX_VALUE, cachedTokens = Long.MAX_VALUE), decoded)
        val message = FerruleJson.decodeFromString(Message.serializer(),
            """{"role": "assistant", "content": null, "usage": {"input_tokens": $max}}""")
        assertEquals(Long.MAX_VALUE, message.usage?.inputTokens)
        assertEquals(emptyList<Part>(), message.content)
        assertEquals("", message.text)
        // A count as a string (some providers do this) or as 5.0.
        val read = runCatching { FerruleJson.decodeFromString(Usage.serializer(), """{"input_tokens": "5"}""").inputTokens }
        assertEquals(5L, read.getOrNull())
    }

    @Test
    fun toolOptionsAndRuntimeConfiguration() = runBlocking {
        assertEquals(ErrorCode.INVALID_UTF8, assertThrows<FerruleException> { Library.configureRuntime("{\"x\uD800\": 1}") }.code)
        val bad = assertThrows<FerruleException> {
            Agent(scripted(), listOf(Tool("t", "t", options = ToolOptions(execution = "bogus")) { "\"\"" }))
        }
        assertEquals(ErrorCode.INVALID_ARG, bad.code)
        val negative = runCatching {
            Agent(scripted(), listOf(Tool("t", "t", options = ToolOptions(timeoutMs = -1)) { "\"\"" })).close()
        }
        assertEquals(ErrorCode.INVALID_ARG, (negative.exceptionOrNull() as? FerruleException)?.code, "$negative")
        Agent(scripted(answerTurn("x"))).use { it.run(prompt) }
        assertEquals(ErrorCode.ALREADY_INITIALIZED,
            assertThrows<FerruleException> { Library.configureRuntime("""{"worker_threads": 2}""") }.code)
    }

    @Test
    fun injectAndInputsWithLoneSurrogates() = runBlocking {
        val started = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        waitingAgent(started, cancelled).use { agent ->
            assertEquals(ErrorCode.INVALID_UTF8, assertThrows<FerruleException> { agent.start(RunInput.prompt("a\uDC00")) }.code)
            agent.start(prompt).use { run ->
                started.await()
                assertEquals(ErrorCode.INVALID_UTF8, assertThrows<FerruleException> { run.inject(Message.user("\uD800")) }.code)
                run.cancel()
                assertEquals(Status.CANCELLED, withTimeout(10_000) { run.await() }.status)
            }
        }
        val hook = Hook("tool_call") { JsonObject(mapOf("deny" to JsonPrimitive("no\uD800"))).toString() }
        val result = Agent(scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")), listOf(echo), listOf(hook))
            .use { withTimeout(10_000) { it.run(prompt) } }
        assertEquals(ErrorCode.HOOK_ABORTED, result.error?.code, "${result.error}")
        val partial = Tool("p", "Partial.") { call ->
            val thrown = runCatching { call.update("\"\uDBFF\"") }.exceptionOrNull()
            JsonPrimitive("update threw ${(thrown as? FerruleException)?.code}").toString()
        }
        val r = Agent(scripted(callTurn("c1", "p"), answerTurn("Done.")), listOf(partial)).use { it.run(prompt) }
        assertEquals("update threw INVALID_UTF8", r.messages[2].text)
    }
}
