package dev.ferrule

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import java.io.File

class RecordingTest {
    /** The cassette of conformance scenario 048: two runs recorded, the first of them replayed here. */
    private val cassette = File("../../tests/conformance/cassettes/048_replay_from_a_cassette.jsonl").absolutePath

    private val lookup = Tool("lookup", "Looks up a customer's plan.",
        """{"type": "object", "properties": {"customer_id": {"type": "string"}}, "required": ["customer_id"]}""") {
        JsonPrimitive("Gold").toString()
    }

    @Test
    fun aModelConfiguredWithARecordingReplaysItWithNoServerAndNoKey() = runBlocking {
        val config = AgentConfig(ModelConfig("openai", name = "test-model", baseUrl = "http://127.0.0.1:9/v1",
            apiKeyEnv = "FERRULE_CONFORMANCE_UNSET_KEY", record = Recording(cassette, mode = "replay")))
        Agent(config, listOf(lookup)).use { agent ->
            val result = agent.run(RunInput.prompt("Plan of C-100?"))
            assertEquals(Status.COMPLETED, result.status, "$result")
            assertEquals("C-100 is on Gold.", result.final?.text)
            assertEquals(listOf(3L, 4L), agent.unusedRecordings().map { it.index })
            assertEquals(setOf("/v1/chat/completions"), agent.unusedRecordings().map { it.path }.toSet())
            // The same prompt again finds its exchanges used.
            val again = agent.run(RunInput.prompt("Plan of C-100?"))
            assertEquals(ErrorCode.REPLAY_MISMATCH, again.error?.code)
        }
    }

    @Test
    fun aModelWithoutACassetteHasNoUnusedRecordings() {
        val agent = Agent(scripted())
        assertEquals(ErrorCode.INVALID_ARG, assertThrows<FerruleException> { agent.unusedRecordings() }.code)
        agent.close()
        assertEquals(ErrorCode.INVALID_ARG, assertThrows<FerruleException> { agent.unusedRecordings() }.code)
    }
}
