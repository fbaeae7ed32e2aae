package dev.ferrule

import dev.ferrule.otel.FerruleOpenTelemetry
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter
import io.opentelemetry.sdk.trace.SdkTracerProvider
import io.opentelemetry.sdk.trace.data.SpanData
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import kotlinx.serialization.json.putJsonArray
import kotlinx.serialization.json.putJsonObject
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Test

class TracerTest {
    @AfterEach
    fun removeTracer() = Library.removeTracer()

    private val script = arrayOf(
        buildJsonObject {
            putJsonArray("tool_calls") {
                add(buildJsonObject { put("id", "c1"); put("name", "lookup"); putJsonObject("arguments") {} })
            }
        },
        buildJsonObject { put("text", "done") },
    )

    /**
     * A run under the host's current span shows in the host's SDK with
     * ferrule's ids: invoke_agent under the host's span, execute_tool under it,
     * the span the tool started in its call's context under execute_tool, and
     * the spans hooks (inline or not) started in their context under invoke_agent.
     */
    @Test
    fun spansReachTheHostsExporterUnderItsSpans() = runBlocking {
        val exporter = InMemorySpanExporter.create()
        val provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()
        val tracer = provider.get("host")
        FerruleOpenTelemetry.export(SimpleSpanProcessor.create(exporter))
        val lookup = Tool("lookup", "Looks up a plan.", """{"type": "object"}""") { call ->
            tracer.spanBuilder("db.query").setParent(FerruleOpenTelemetry.contextOf(call)).startSpan().end()
            JsonPrimitive("Gold").toString()
        }
        val policy = { name: String, options: HookOptions ->
            onToolCall(options) {
                tracer.spanBuilder(name).setParent(FerruleOpenTelemetry.hookContext()).startSpan().end()
                HookDecision.Proceed
            }
        }
        val hooks = listOf(policy("policy.check", HookOptions()), policy("policy.inline", HookOptions(inline = true)))
        val config = scripted(*script).copy(name = "support")
        val request = tracer.spanBuilder("handle request").startSpan()
        Agent(config, listOf(lookup), hooks).use { agent ->
            val input = request.makeCurrent().use { FerruleOpenTelemetry.input(RunInput.prompt("go")) }
            assertEquals(Status.COMPLETED, agent.run(input).status)
        }
        request.end()
        var byName: Map<String, SpanData> = emptyMap()
        repeat(1000) {
            byName = exporter.finishedSpanItems.associateBy { it.name }
            if (byName.size == 7) return@repeat
            Thread.sleep(10)
        }
        assertEquals(
            setOf("handle request", "invoke_agent support", "chat", "execute_tool lookup", "db.query", "policy.check", "policy.inline"),
            byName.keys,
        )
        val host = byName.getValue("handle request")
        val run = byName.getValue("invoke_agent support")
        val call = byName.getValue("execute_tool lookup")
        assertEquals(setOf(host.traceId), byName.values.map { it.traceId }.toSet())
        assertEquals(host.spanId, run.parentSpanId)
        assertEquals(run.spanId, call.parentSpanId)
        assertEquals(call.spanId, byName.getValue("db.query").parentSpanId)
        assertEquals(run.spanId, byName.getValue("policy.check").parentSpanId)
        assertEquals(run.spanId, byName.getValue("policy.inline").parentSpanId)
        assertEquals("c1", call.attributes.get(AttributeKey.stringKey("gen_ai.tool.call.id")))
        assertEquals("ferrule", call.instrumentationScopeInfo.name)
    }

    /** The run's `tracestate` reaches the host's SDK with every span of the run, in its order. */
    @Test
    fun theTracestateReachesTheHostsSpans() = runBlocking {
        val exporter = InMemorySpanExporter.create()
        FerruleOpenTelemetry.export(SimpleSpanProcessor.create(exporter))
        val input = RunInput.prompt("go")
            .withTraceContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=abc,other=1")
        Agent(scripted(buildJsonObject { put("text", "done") }).copy(name = "support")).use { agent ->
            assertEquals(Status.COMPLETED, agent.run(input).status)
        }
        var spans: List<SpanData> = emptyList()
        repeat(1000) {
            spans = exporter.finishedSpanItems
            if (spans.size < 2) Thread.sleep(10)
        }
        assertEquals(2, spans.size)
        for (span in spans) {
            val members = mutableListOf<Pair<String, String>>()
            span.spanContext.traceState.forEach { key, value -> members += key to value }
            assertEquals(listOf("vendor" to "abc", "other" to "1"), members)
            assertEquals("abc", span.parentSpanContext.traceState.get("vendor"))
        }
    }

    @Test
    fun withoutATracerACallHasNoTraceparent() = runBlocking {
        var seen: String? = null
        val lookup = Tool("lookup", "Looks up a plan.", """{"type": "object"}""") { call ->
            seen = call.traceparent
            JsonPrimitive("Gold").toString()
        }
        Agent(scripted(*script), listOf(lookup)).use { agent -> agent.run(RunInput.prompt("go")) }
        assertEquals("", seen)
        assertNull(FerruleOpenTelemetry.parseTraceparent(""))
        assertNotNull(FerruleOpenTelemetry.parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
        Unit
    }
}
