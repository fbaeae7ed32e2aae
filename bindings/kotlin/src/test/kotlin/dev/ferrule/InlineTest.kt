package dev.ferrule

import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.ThreadContextElement
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.yield
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.Collections
import java.util.concurrent.atomic.AtomicInteger
import kotlin.coroutines.CoroutineContext

/** Inline tools and hooks: started inside ferrule's callback, on its runtime thread. */
class InlineTest {
    @Test
    fun anInlineToolRunsInTheCallbackUntilItSuspends() = runBlocking {
        val threads = Collections.synchronizedList(mutableListOf<String>())
        val quick = Tool("quick", "Answers at once.", inline = true) { call ->
            threads += Thread.currentThread().name
            if (call.id == "c2") {
                yield() // suspends: the rest runs on the agent's context
                threads += Thread.currentThread().name
            }
            if (call.id == "c3") throw IllegalStateException("three is refused")
            "\"ok ${call.id}\""
        }
        val result = Agent(scripted(callTurn("c1", "quick"), callTurn("c2", "quick"), callTurn("c3", "quick"),
            answerTurn("Done.")), listOf(quick)).use { it.run(RunInput.prompt("go")) }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
        val tools = result.messages.filter { it.role == "tool" }
        assertEquals(listOf("ok c1", "ok c2", "three is refused"), tools.map { it.text })
        assertEquals(listOf(false, false, true), tools.map { it.isError })
        assertTrue(threads[0].startsWith("ferrule-"), "$threads")
        assertTrue(threads[1].startsWith("ferrule-"), "$threads")
        assertTrue(!threads[2].startsWith("ferrule-"), "after its suspension, on the agent's context: $threads")
    }

    /** A thread-local state the agent's context sets wherever its coroutines run (as MDC's context does). */
    private class Tag(val value: String) : ThreadContextElement<String?> {
        companion object Key : CoroutineContext.Key<Tag> {
            val current = ThreadLocal<String?>()
        }

        override val key get() = Key

        override fun updateThreadContext(context: CoroutineContext): String? =
            current.get().also { current.set(value) }

        override fun restoreThreadContext(context: CoroutineContext, oldState: String?) = current.set(oldState)
    }

    @Test
    fun anInlineBodySeesTheContextsThreadStateFromItsStart() = runBlocking {
        val seen = Collections.synchronizedList(mutableListOf<String>())
        val quick = Tool("quick", "Answers at once.", inline = true) { call ->
            seen += "${Thread.currentThread().name.startsWith("ferrule-")} ${Tag.current.get()}"
            if (call.id == "c2") {
                yield()
                seen += "${Thread.currentThread().name.startsWith("ferrule-")} ${Tag.current.get()}"
            }
            "\"ok\""
        }
        val hook = onToolCall(HookOptions(inline = true)) {
            seen += "hook ${Tag.current.get()}"
            HookDecision.Proceed
        }
        val script = scripted(callTurn("c1", "quick"), callTurn("c2", "quick"), answerTurn("Done."))
        val result = Agent(script, listOf(quick), listOf(hook), context = Dispatchers.Default + Tag("run"))
            .use { it.run(RunInput.prompt("go")) }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
        assertEquals(listOf("hook run", "true run", "hook run", "true run", "false run"), seen.toList())
    }

    @Test
    fun inlineHooksWithoutHistorySeeTheCount() = runBlocking {
        val seen = Collections.synchronizedList(mutableListOf<Pair<Int, Int>>())
        val options = HookOptions(inline = true, withoutHistory = true)
        val hooks = listOf(
            onRunStart(options) { seen += it.messageCount.toInt() to it.messages.size; HookDecision.Proceed },
            onTurnStart(options) { seen += it.messageCount.toInt() to it.messages.size; HookDecision.Proceed },
            onToolCall(HookOptions(inline = true)) { HookDecision.Proceed },
        )
        val result = Agent(scripted(callTurn("c1", "echo", """{"text": "a"}"""), answerTurn("Done.")), listOf(echo), hooks)
            .use { it.run(RunInput.prompt("go")) }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
        assertEquals(listOf(1 to 0, 1 to 0, 3 to 0), seen.toList())
    }

    @Test
    fun inlineCompletionsRaceCancel() = runBlocking {
        val calls = AtomicInteger()
        val quick = Tool("quick", "Answers at once.", inline = true) { calls.incrementAndGet(); "\"ok\"" }
        val script = FerruleJson.parseToJsonElement(
            """{"tool_calls": [{"id": "a", "name": "quick", "arguments": {}},
                {"id": "b", "name": "quick", "arguments": {}}], "repeat": 40}""")
        Agent(scripted(script, answerTurn("Done.")).copy(maxRounds = 50), listOf(quick)).use { agent ->
            (0 until 200).map { i ->
                async {
                    agent.start(RunInput.prompt("go")).use { run ->
                        // Every fourth run goes to its end, so calls are made whatever the timing.
                        if (i % 4 != 0) {
                            delay((i % 3).toLong())
                            run.cancel()
                        }
                        val status = run.await().status
                        assertTrue(status == Status.CANCELLED || status == Status.COMPLETED, "$status")
                        if (i % 4 == 0) assertEquals(Status.COMPLETED, status)
                    }
                }
            }.awaitAll()
        }
        assertTrue(calls.get() > 0)
    }
}
