package dev.ferrule

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.concurrent.atomic.AtomicInteger

class AgentToolTest {
    /** A worker whose model calls `delete` (needing approval when [careful]), then answers. */
    private fun worker(careful: Boolean, deleted: AtomicInteger) = Agent(
        scripted(callTurn("d1", "delete", """{"text": "old"}"""), answerTurn("worker done")),
        listOf(Tool("delete", "Deletes.", options = ToolOptions(needsApproval = careful)) {
            deleted.incrementAndGet()
            "\"deleted\""
        }))

    /** A boss whose model calls the worker, then answers. */
    private fun boss(worker: Agent) = Agent(
        scripted(callTurn("c1", "worker", """{"input": "clean up"}"""), answerTurn("boss done")),
        agents = listOf(AgentTool.tool("worker", "Cleans up.", worker)))

    @Test
    fun aCalledAgentsEventsArriveWrappedInsideItsCall() = runBlocking {
        val deleted = AtomicInteger()
        val child = worker(false, deleted)
        val parent = boss(child)
        child.close()
        parent.use {
            val run = it.start(RunInput.prompt("Go."))
            var inside = false
            val nested = mutableListOf<Event>()
            run.events.collect { event ->
                when (event) {
                    is Event.ToolExecutionStart -> inside = true
                    is Event.ToolExecutionEnd -> inside = false
                    is Event.AgentEvent -> {
                        assertTrue(inside, "a nested event outside its call")
                        assertEquals(listOf("c1", "worker"), listOf(event.callId, event.agent))
                        assertEquals(1, event.depth)
                        nested += event.event
                    }
                    else -> {}
                }
            }
            val result = run.await()
            assertEquals(Status.COMPLETED, result.status)
            assertEquals(1, deleted.get())
            assertEquals("run_start", nested.first().type)
            assertEquals(Status.COMPLETED, (nested.last() as Event.RunEnd).status)
        }
    }

    @Test
    fun anApprovalInsideAnAgentResumesByItsKey() = runBlocking {
        val deleted = AtomicInteger()
        val first = boss(worker(true, deleted)).use { it.run(RunInput.prompt("Go.")) }
        assertEquals(Status.INTERRUPTED, first.status)
        val waiting = first.interruptions.single()
        assertEquals("c1/d1", waiting.key)
        assertEquals(listOf("c1"), waiting.path)
        assertEquals("worker", waiting.agent)
        val resumed = boss(worker(true, deleted)).use {
            it.run(RunInput.resume(first.stateJson!!, mapOf(waiting.key to Decision(approve = true))))
        }
        assertEquals(Status.COMPLETED, resumed.status, "${resumed.error}")
        assertEquals(1, deleted.get())
    }

    @Test
    fun aHandoffHandsTheRunOn() = runBlocking {
        val billing = Agent(scripted(answerTurn("unused"), answerTurn("billing here")))
        val front = Agent(
            scripted(callTurn("h1", "transfer_to_billing")),
            agents = listOf(AgentTool.handoff("billing", "Billing.", billing,
                AgentToolOptions(handoffMessages = "without_tool_calls"))))
        billing.close()
        front.use {
            val run = it.start(RunInput.prompt("My bill."))
            val handoffs = mutableListOf<String>()
            run.events.collect { event -> if (event is Event.Handoff) handoffs += "${event.callId}>${event.to}" }
            val result = run.await()
            assertEquals(Status.COMPLETED, result.status)
            assertEquals("billing", result.agent)
            assertEquals(listOf("h1>billing"), handoffs)
        }
    }

    @Test
    fun aBadOrClosedAgentIsRefused() {
        val child = Agent(scripted(answerTurn("x")))
        val bad = assertThrows<FerruleException> {
            Agent(scripted(answerTurn("x")), agents = listOf(AgentTool.tool("bad name", "", child)))
        }
        assertEquals(ErrorCode.INVALID_ARG, bad.code)
        child.close()
        val closed = assertThrows<FerruleException> {
            Agent(scripted(answerTurn("x")), agents = listOf(AgentTool.tool("worker", "", child)))
        }
        assertTrue(closed.detail.contains("closed"), closed.detail)
    }

    @Test
    fun nestedEventsOfEveryShapeDecode() {
        val head = """"type": "agent_event", "run_id": "run-1", "call_id": "c1", "agent": "worker", "depth": 1"""
        val deep = Event.decode("""{$head, "event": {$head, "event": {"type": "turn_start", "run_id": "run-3", "turn": 2}}}""")
        val inner = ((deep as Event.AgentEvent).event as Event.AgentEvent).event
        assertEquals(Event.TurnStart("run-3", 2), inner)
        val unknown = Event.decode("""{$head, "event": {"type": "later_kind", "run_id": "run-2"}}""") as Event.AgentEvent
        assertEquals("later_kind", (unknown.event as Event.Unknown).type)
        val notAnEvent = Event.decode("""{$head, "event": null}""") as Event.AgentEvent
        assertTrue(notAnEvent.event is Event.Unknown)
        assertTrue(Event.decode("{$head}") is Event.Unknown, "an agent_event without its event")
    }
}
