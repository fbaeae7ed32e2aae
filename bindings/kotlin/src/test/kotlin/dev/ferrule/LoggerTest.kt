package dev.ferrule

import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.concurrent.CopyOnWriteArrayList
import java.util.logging.Handler
import java.util.logging.Level
import java.util.logging.Logger

class LoggerTest {
    /** Nothing listens on port 1: the request fails, is tried once more, and fails. */
    private val unreachable = AgentConfig(ModelConfig("openai-compatible", name = "m",
        baseUrl = "http://127.0.0.1:1/v1", maxRetries = 1, retryBackoffMs = 1))

    /** The id of a run of the unreachable model, once it has ended. */
    private fun failedRun(): String = runBlocking {
        Agent(unreachable).use { agent ->
            agent.start(RunInput.prompt("go")).use { run ->
                assertEquals(ErrorCode.PROVIDER_NETWORK, run.await().error?.code)
                run.id
            }
        }
    }

    /** The items [pick] picks, once there is one (or ten seconds passed). */
    private fun <T> waitFor(items: List<T>, pick: (T) -> Boolean): List<T> {
        val deadline = System.nanoTime() + 10_000_000_000
        while (items.none(pick) && System.nanoTime() < deadline) Thread.sleep(10)
        return items.filter(pick)
    }

    @AfterEach
    fun removeLogger() = Library.removeLogger()

    @Test
    fun aRetriedRequestReachesTheLoggerAtItsLevel() {
        val kept = CopyOnWriteArrayList<LogRecord>()
        Library.setLogger(LogLevel.WARN) { kept.add(it) }
        val runId = failedRun()
        val ofRun = waitFor(kept) { it.fields["run_id"] == JsonPrimitive(runId) }
        assertEquals(1, ofRun.size, "$kept")
        val record = ofRun.single()
        assertEquals(LogLevel.WARN, record.level)
        assertEquals("ferrule::provider", record.target)
        assertEquals(JsonPrimitive(2), record.fields["attempt"])
        assertEquals(JsonPrimitive("PROVIDER_NETWORK"), record.fields["code"])
        assertTrue(kept.all { it.level == LogLevel.WARN || it.level == LogLevel.ERROR }, "$kept")
    }

    @Test
    fun recordsReachAJavaUtilLoggingLoggerAtItsLevels() {
        val published = CopyOnWriteArrayList<java.util.logging.LogRecord>()
        val logger = Logger.getLogger("ferrule-test").apply {
            useParentHandlers = false
            level = Level.WARNING
            addHandler(object : Handler() {
                override fun publish(record: java.util.logging.LogRecord) { published.add(record) }
                override fun flush() {}
                override fun close() {}
            })
        }
        Library.logTo(logger)
        val runId = failedRun()
        val ofRun = waitFor(published) { it.message.contains("\"run_id\":\"$runId\"") }
        assertEquals(1, ofRun.size)
        val record = ofRun.single()
        assertEquals(Level.WARNING, record.level)
        assertEquals("ferrule::provider", record.loggerName)
        assertTrue(record.message.contains("tried again"), record.message)
        assertEquals(null, record.parameters, "the text is not a MessageFormat pattern")
        assertTrue(System.currentTimeMillis() - record.instant.toEpochMilli() in 0..60_000)
        assertEquals(
            listOf(Level.SEVERE, Level.WARNING, Level.INFO, Level.FINE, Level.FINEST),
            LogLevel.entries.map { it.julLevel },
        )
    }
}
