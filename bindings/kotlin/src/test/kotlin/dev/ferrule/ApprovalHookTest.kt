package dev.ferrule

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.File
import java.util.Collections

class ApprovalHookTest {
    @Test
    fun interruptResumeInANewAgentThroughAFileAndAlways() = runBlocking {
        val ran = Collections.synchronizedList(mutableListOf<String>())
        fun agent() = Agent(scripted(
            FerruleJson.parseToJsonElement("""{"tool_calls": [{"id": "c1", "name": "delete", "arguments": {"text": "a"}},
                {"id": "c2", "name": "echo", "arguments": {"text": "b"}}]}"""),
            callTurn("c3", "delete", """{"text": "c"}"""), answerTurn("Done.")),
            listOf(Tool("delete", "Deletes.", options = ToolOptions(needsApproval = true)) { call ->
                ran += call.id
                "\"deleted\""
            }, echo))
        val first = agent().use { it.run(RunInput.prompt("Delete a.")) }
        assertEquals(Status.INTERRUPTED, first.status)
        assertEquals(listOf("c1"), first.interruptions.map { it.callId })
        assertTrue(ran.isEmpty(), "nothing of the batch ran")
        val file = File.createTempFile("ferrule-state", ".json").apply { deleteOnExit() }
        file.writeText(first.stateJson!!)
        agent().use { other ->
            val refused = assertThrows<FerruleException> { other.start(RunInput.resume(file.readText(), emptyMap())) }
            assertEquals(ErrorCode.INVALID_ARG, refused.code)
            assertTrue(refused.detail.contains("c1"), refused.detail)
            val resumed = other.run(RunInput.resume(file.readText(), mapOf("c1" to Decision(approve = true, always = true))))
            assertEquals(Status.COMPLETED, resumed.status, "${resumed.error}")
            assertNull(resumed.stateJson)
            assertEquals(listOf("c1", "c3"), ran.toList(), "always approved the later call too")
        }
    }

    @Serializable
    data class Plan(val customer: String, val plan: String)

    @Test
    fun structuredOutputAndAnExecuteOnlyRun() = runBlocking {
        val config = scripted(answerTurn("""{"customer": "C-1", "plan": "gold"}""")).copy(
            outputSchema = FerruleJson.parseToJsonElement("""{"type": "object", "required": ["customer", "plan"]}"""))
        val result = Agent(config).use { it.run(RunInput.prompt("Plan?")) }
        assertEquals(Plan("C-1", "gold"), result.output<Plan>())
        val plain = Agent(scripted(answerTurn("gold"))).use { it.run(RunInput.prompt("Plan?")) }
        assertEquals(ErrorCode.INVALID_OUTPUT, assertThrows<FerruleException> { plain.output<Plan>() }.code)

        val executed = Agent(scripted(), listOf(echo)).use {
            it.run(RunInput.execute(Message("assistant", toolCalls = listOf(ToolCallRequest("h1", "echo", """{"text": "mine"}"""))),
                listOf(Message.user("Echo mine."))))
        }
        assertEquals(listOf("user", "assistant", "tool"), executed.messages.map { it.role })
        assertEquals("mine from kotlin", executed.messages.last().text)
    }

    @Test
    fun typedHooksAtEveryStageAndInjection() = runBlocking {
        var finals = 0
        val hooks = listOf(
            onRunStart { HookDecision.ReplaceMessages(listOf(Message.user("Replaced."))) },
            onTurnStart { payload -> if (payload.turn ==
                1) {
                HookDecision.Inject(listOf(Message.system("Be terse.")))
            } else {
                HookDecision.Proceed
            } },
            onToolCall { payload ->
                when (payload.call.id) {
                    "c1" -> HookDecision.Deny("Not this one.")
                    "c2" -> HookDecision.ReplaceArguments(buildJsonObject { put("text", "changed") })
                    else -> HookDecision.Proceed
                }
            },
            onToolResult { payload ->
                if (payload.callId == "c3") HookDecision.ReplaceResult(ToolResult.text("redacted")) else HookDecision.Proceed
            },
            onFinalAnswer { if (finals++ == 0) HookDecision.Retry("Say it again.") else HookDecision.Proceed },
        )
        val script = FerruleJson.parseToJsonElement("""{"tool_calls": [
            {"id": "c1", "name": "echo", "arguments": {"text": "one"}},
            {"id": "c2", "name": "echo", "arguments": {"text": "two"}},
            {"id": "c3", "name": "echo", "arguments": {"text": "three"}}]}""")
        val result = Agent(scripted(script, answerTurn("First."), answerTurn("Second.")), listOf(echo), hooks)
            .use { it.run(RunInput.prompt("Original.")) }
        assertEquals(Status.COMPLETED, result.status, "${result.error}")
        assertEquals(listOf("user: Replaced.", "system: Be terse.", "assistant: ", "tool: Not this one.",
            "tool: changed from kotlin", "tool: redacted", "assistant: First.", "user: Say it again.", "assistant: Second."),
            result.messages.map { "${it.role}: ${it.text}" })
        assertEquals("injection", result.messages[1].origin)
    }

    @Test
    fun typedTurnStartHooksSeeTheWholeHistoryFromTheNewMessages() = runBlocking {
        assertTrue(onTurnStart { HookDecision.Proceed }.keepsHistory)
        assertFalse(onRunStart { HookDecision.Proceed }.keepsHistory)
        for (inline in listOf(false, true)) {
            val whole = Collections.synchronizedList(mutableListOf<List<Message>>())
            val typed = Collections.synchronizedList(mutableListOf<List<Message>>())
            val replaceAtTurnFour = Hook("turn_start", HookOptions(inline = inline)) { payload ->
                if (payload.contains(""""turn":4""")) """{"messages": [{"role": "user", "content": "again"}]}""" else "{}"
            }
            val noteWhole = Hook("turn_start", HookOptions(inline = inline)) { payload ->
                whole += FerruleJson.decodeFromString(TurnStartPayload.serializer(), payload).messages
                "{}"
            }
            val keep = onTurnStart(HookOptions(inline = inline)) { payload ->
                typed += payload.messages
                HookDecision.Proceed
            }
            val turns = (1..12).map { callTurn("c$it", "echo", """{"text": "x"}""") } + answerTurn("Done.")
            Agent(scripted(*turns.toTypedArray()), listOf(echo), listOf(replaceAtTurnFour, noteWhole, keep)).use { agent ->
                repeat(2) {
                    whole.clear()
                    typed.clear()
                    val result = agent.run(RunInput.prompt("go"))
                    assertEquals(Status.COMPLETED, result.status, "${result.error}")
                    assertEquals(whole.toList(), typed.toList(), "inline $inline")
                    assertEquals(listOf(1, 3, 5, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19), typed.map { it.size })
                    // What an earlier turn was given stays as it was.
                    assertEquals("go", typed[2][0].text)
                    // Each message was decoded once: the turns share what was kept.
                    assertTrue(typed[1][0] === typed[0][0] && typed[12][4] === typed[6][4] && typed[3][0] !== typed[0][0])
                }
            }
        }
    }

    @Test
    fun aThrowingOrAbortingHookAbortsTheRun() = runBlocking {
        for (hook in listOf(onToolCall { throw IllegalStateException("vetoed by policy") },
            onToolCall { HookDecision.Abort("vetoed by policy") })) {
            val result = Agent(scripted(callTurn("c1", "echo", """{"text": "x"}"""), answerTurn("Done.")), listOf(echo),
                listOf(hook)).use { it.run(RunInput.prompt("Go.")) }
            assertEquals(Status.FAILED, result.status)
            assertEquals(ErrorCode.HOOK_ABORTED, result.error?.code)
            assertTrue(result.error!!.message.contains("vetoed by policy"))
        }
    }
}
