package dev.ferrule

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotSame
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

class EventsTest {
    private fun agent() = Agent(scripted(callTurn("c1", "echo", """{"text": "hi"}"""), answerTurn("Done.")), listOf(echo))

    private val everyEvent = listOf("run_start", "turn_start", "tool_call_delta", "message_end", "tool_execution_start",
        "tool_execution_end", "turn_end", "turn_start", "message_delta", "message_end", "turn_end", "run_end")

    @Test
    fun eventsWaitForACollectorThatComesAfterTheResult() = runBlocking {
        agent().use { agent ->
            agent.start(RunInput.prompt("Echo.")).use { run ->
                assertEquals(Status.COMPLETED, run.await().status)
                assertEquals(everyEvent, run.events.map { it.type }.toList())
            }
        }
    }

    @Test
    fun anAwaitAfterRunEndTakesTheResultItCarried() = runBlocking {
        agent().use { agent ->
            // Collected first: the result is run_end's, read once (not read again from ferrule_run_wait).
            agent.start(RunInput.prompt("Echo.")).use { run ->
                val end = run.events.toList().last() as Event.RunEnd
                assertSame(end.result, run.await())
                assertSame(end.result, run.await(), "a second await gives the same result")
            }
            // Awaited first: read from ferrule_run_wait, equal to what run_end carried.
            agent.start(RunInput.prompt("Echo.")).use { run ->
                val result = run.await()
                val end = run.events.toList().last() as Event.RunEnd
                assertNotSame(end.result, result)
                assertEquals(end.result.messages, result.messages)
            }
        }
        // A run without a reader: its result is run_end's text, read by the await.
        agent().use { agent ->
            val result = agent.run(RunInput.prompt("Echo."))
            assertEquals(Status.COMPLETED, result.status)
            assertEquals(listOf("user", "assistant", "tool", "assistant"), result.messages.map { it.role })
            assertEquals("Done.", result.messages.last().text)
        }
    }

    @Test
    fun aCollectorLaunchedBeforeTheAwaitGetsEveryEvent() = runBlocking {
        agent().use { agent ->
            agent.start(RunInput.prompt("Echo.")).use { run ->
                val types = mutableListOf<String>()
                val collector = launch { run.events.collect { types += it.type } }
                run.await()
                collector.join()
                assertEquals(everyEvent, types)
            }
        }
    }

    @Test
    fun oneCollectorAtATime() = runBlocking {
        val gate = CompletableDeferred<Unit>()
        val inside = CompletableDeferred<Unit>()
        agent().use { agent ->
            agent.start(RunInput.prompt("Echo.")).use { run ->
                val first = async {
                    run.events.map {
                        inside.complete(Unit)
                        gate.await()
                        it.type
                    }.toList()
                }
                inside.await()
                val second = assertThrows<IllegalStateException> { run.events.toList() }
                assertEquals("the events of a run are collected by one collector at a time", second.message)
                gate.complete(Unit)
                assertEquals(everyEvent, first.await())
                assertEquals(emptyList<Event>(), run.events.toList(), "after run_end nothing is left")
            }
        }
    }

    @Test
    fun aCollectorThatStopsEarlyLeavesTheRestToTheNext() = runBlocking {
        agent().use { agent ->
            agent.start(RunInput.prompt("Echo.")).use { run ->
                assertEquals("run_start", run.events.first().type)
                assertEquals(listOf("turn_start", "tool_call_delta"), run.events.take(2).map { it.type }.toList())
                assertEquals(Status.COMPLETED, run.await().status, "stopping early is not cancelling")
                assertEquals(everyEvent.drop(3), run.events.map { it.type }.toList())
            }
        }
    }

    @Test
    fun aRunClosedBeforeItsEventsWereCollectedHasNoneLeft() = runBlocking {
        agent().use { agent ->
            val run = agent.start(RunInput.prompt("Echo."))
            run.close()
            assertEquals(emptyList<Event>(), run.events.toList())
        }
        withTimeoutOrNull(10_000) { while (Handles.count > 0) delay(1) }
        assertEquals(0, Handles.count, "the run's sink was released once it ended")
    }

    @Test
    fun toolEventsCarryTheResultsDecoded() = runBlocking {
        val progress = Tool("progress", "Reports progress.") { call ->
            call.update(ToolResult.text("half way"))
            call.update(""" "three quarters" """)
            ToolResult(content = listOf(Part.text("done")), title = "Progress").json
        }
        Agent(scripted(callTurn("c1", "progress"), answerTurn("Done.")), listOf(progress)).use { agent ->
            val events = agent.start(RunInput.prompt("Go.")).use { it.events.toList() }
            assertEquals(listOf("half way", "three quarters"),
                events.filterIsInstance<Event.ToolExecutionUpdate>().map { it.partialResult.text })
            val end = events.filterIsInstance<Event.ToolExecutionEnd>().single()
            assertEquals(ToolResult(content = listOf(Part.text("done")), title = "Progress"), end.toolResult)
        }
    }

    @Test
    fun theResultIsKeptForLaterAwaitsAfterClose() = runBlocking {
        agent().use { agent ->
            val run = agent.start(RunInput.prompt("Echo."))
            val first = run.await()
            run.close()
            assertTrue(first === run.await(), "the same result, without the closed handle")
        }
    }

    /**
     * Bursts of events race a collector's cancellation and the run's end:
     * whatever the timing, what a cancelled collector got and what the next
     * one gets are every event once, in order, `run_end` last. (A collector
     * whose body suspends and is cancelled there gets its event again in the
     * next collector, as `Run.events` says.)
     */
    @Test
    fun burstsRaceACancelledCollector() = runBlocking {
        agent().use { agent ->
            repeat(300) { i ->
                agent.start(RunInput.prompt("Echo.")).use { run ->
                    val first = mutableListOf<String>()
                    val collector = launch(Dispatchers.Default) { run.events.collect { first += it.type } }
                    if (i % 3 != 0) delay((i % 4).toLong())
                    collector.cancelAndJoin()
                    val rest = run.events.map { it.type }.toList()
                    val seen = first + rest
                    assertEquals("run_start", seen.first(), "$seen")
                    assertEquals("run_end", seen.last(), "$seen")
                    assertEquals(1, seen.count { it == "run_end" }, "$seen")
                    val status = run.await().status
                    if (status == Status.COMPLETED) assertEquals(everyEvent, seen)
                    // A cancelled run's events are fewer, never more or repeated.
                    for (type in seen.toSet()) assertTrue(seen.count { it == type } <= everyEvent.count { it == type }, "$seen")
                }
            }
        }
    }
}
