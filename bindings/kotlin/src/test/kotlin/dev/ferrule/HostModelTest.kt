package dev.ferrule

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.util.concurrent.atomic.AtomicInteger

class HostModelTest {
    private fun hostConfig(extra: ModelConfig.() -> ModelConfig = { this }) =
        AgentConfig(ModelConfig("host", name = "pocket").extra(), builtinTools = BuiltinTools(disable = true))

    @Test
    fun aHostModelStreamsACallThenAnswersWithWhatTheToolSaid() = runBlocking {
        val requests = mutableListOf<ModelRequest>()
        val model = HostModel { request ->
            synchronized(requests) { requests += request }
            flow {
                val last = request.newMessages().last()
                if (last.role != "tool") {
                    emit(ModelDelta.Thinking("need an echo"))
                    emit(ModelDelta.Text("Calling."))
                    emit(ModelDelta.ToolCall(0, name = "echo", arguments = """{"text":"""))
                    emit(ModelDelta.ToolCall(0, arguments = """"hi"}"""))
                    emit(ModelDelta.Tokens(Usage(inputTokens = 10, outputTokens = 3)))
                } else {
                    emit(ModelDelta.Text("It said: ${last.text}"))
                    emit(ModelDelta.Stop("end_turn"))
                }
            }
        }
        Agent(hostConfig(), listOf(echo), model = model).use { agent ->
            val result = withTimeout(10_000) { agent.run(RunInput.prompt("echo hi")) }
            assertEquals(Status.COMPLETED, result.status, "$result")
            assertEquals("It said: hi from kotlin", result.final?.text)
            val call = result.messages[1].toolCalls.single()
            assertTrue(call.id.startsWith("call_"), call.id)
            assertEquals("""{"text":"hi"}""", call.arguments)
            assertEquals(10, result.usage.inputTokens)
            val (first, second) = synchronized(requests) { requests.toList() }
            assertEquals(listOf("pocket", "pocket"), listOf(first.model, second.model))
            assertEquals(listOf(1, 2), listOf(first.turn, second.turn))
            assertTrue(first.runId.startsWith("run-") && second.runId == first.runId, first.runId)
            assertEquals(listOf(0, 1), listOf(first.firstNewMessage, second.firstNewMessage))
            assertEquals(3, second.messageCount)
            assertEquals(listOf("assistant", "tool"), second.newMessages().map { it.role })
            assertEquals(listOf("echo"), first.tools.map { it.name })
        }
    }

    @Test
    fun failuresRetriesAndCancellationReachTheModel() = runBlocking {
        val attempts = AtomicInteger()
        val flaky = HostModel { _ ->
            flow {
                if (attempts.incrementAndGet() == 1) throw ModelException(ErrorCode.PROVIDER_RATE_LIMITED, "slow down", true)
                emit(ModelDelta.Text("fine"))
            }
        }
        Agent(hostConfig { copy(maxRetries = 2, retryBackoffMs = 1) }, model = flaky).use { agent ->
            val result = withTimeout(10_000) { agent.run(RunInput.prompt("go")) }
            assertEquals(Status.COMPLETED, result.status, "$result")
            assertEquals("fine", result.final?.text)
            assertEquals(2, attempts.get())
        }

        val broken = HostModel { _ -> flow<ModelDelta> { error("the engine broke") } }
        Agent(hostConfig(), model = broken).use { agent ->
            val result = withTimeout(10_000) { agent.run(RunInput.prompt("go")) }
            assertEquals(Status.FAILED, result.status)
            assertEquals(ErrorCode.PROVIDER_SERVER, result.error?.code)
            assertTrue(result.error?.message?.contains("the engine broke") == true, "${result.error}")
        }

        // Cancelled once the model was asked (a cancel before that never asks it).
        val asked = CompletableDeferred<Unit>()
        val cancelled = CompletableDeferred<Unit>()
        val waiting = HostModel { _ ->
            flow<ModelDelta> {
                asked.complete(Unit)
                try {
                    awaitCancellation()
                } finally {
                    cancelled.complete(Unit)
                }
            }
        }
        Agent(hostConfig(), model = waiting).use { agent ->
            agent.start(RunInput.prompt("go")).use { run ->
                withTimeout(10_000) { asked.await() }
                run.cancel()
                withTimeout(10_000) { cancelled.await() }
                assertEquals(Status.CANCELLED, withTimeout(10_000) { run.await() }.status)
            }
        }

        val refused = assertThrows<FerruleException> { Agent(hostConfig().copy(model = ModelConfig("scripted")), model = waiting) }
        assertEquals(ErrorCode.INVALID_ARG, refused.code)
        val missing = assertThrows<FerruleException> { Agent(hostConfig()) }
        assertTrue(missing.detail.contains("no model was set"), missing.detail)
    }
}
