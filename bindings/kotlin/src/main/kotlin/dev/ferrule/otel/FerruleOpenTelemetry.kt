package dev.ferrule.otel

import dev.ferrule.FerruleJson
import dev.ferrule.HookConsultation
import dev.ferrule.Library
import dev.ferrule.RunInput
import dev.ferrule.ToolCall
import dev.ferrule.setTracer
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.common.Attributes
import io.opentelemetry.api.trace.Span
import io.opentelemetry.api.trace.SpanContext
import io.opentelemetry.api.trace.SpanKind
import io.opentelemetry.api.trace.StatusCode
import io.opentelemetry.api.trace.TraceFlags
import io.opentelemetry.api.trace.TraceState
import io.opentelemetry.context.Context
import io.opentelemetry.sdk.common.InstrumentationScopeInfo
import io.opentelemetry.sdk.resources.Resource
import io.opentelemetry.sdk.trace.ReadableSpan
import io.opentelemetry.sdk.trace.SpanProcessor
import io.opentelemetry.sdk.trace.data.EventData
import io.opentelemetry.sdk.trace.data.LinkData
import io.opentelemetry.sdk.trace.data.SpanData
import io.opentelemetry.sdk.trace.data.StatusData
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.contentOrNull
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.longOrNull

/**
 * ferrule's traces in OpenTelemetry's Java SDK: spans reach the host's
 * exporter with ferrule's own trace and span ids, a run goes under the host's
 * current span, and a tool's spans go under its call's `execute_tool` span
 * and a hook's under the run's.
 * The spans follow the GenAI semantic conventions v1.38.0 (docs/tracing.md).
 * Needs `io.opentelemetry:opentelemetry-sdk-trace` (an optional dependency of
 * this package).
 */
object FerruleOpenTelemetry {
    /** The version of the semantic conventions ferrule's spans follow. */
    const val SCHEMA_URL = "https://opentelemetry.io/schemas/1.38.0"

    /**
     * Makes every run record spans and hands each, when it ends, to
     * [processor] (the span processor of the host's `SdkTracerProvider`, which
     * batches and exports them with the host's own), as a span of [resource]
     * (pass the provider's, so ferrule's spans name the host's service) and of
     * the instrumentation scope `ferrule`. Sets the process's tracer
     * (`Library.setTracer`).
     */
    fun export(processor: SpanProcessor, resource: Resource = Resource.getDefault()) {
        val scope = InstrumentationScopeInfo.builder("ferrule").setVersion(Library.version).setSchemaUrl(SCHEMA_URL).build()
        Library.setTracer { json -> processor.onEnd(EndedSpan(decode(json, resource, scope))) }
    }

    /** [input] with the span of [context] as the run's parent; [input] as it is without a valid span. */
    fun input(input: RunInput, context: Context = Context.current()): RunInput {
        val span = Span.fromContext(context).spanContext
        if (!span.isValid) return input
        val traceparent = "00-${span.traceId}-${span.spanId}-${span.traceFlags.asHex()}"
        val state = span.traceState.asMap().entries.joinToString(",") { "${it.key}=${it.value}" }
        return input.withTraceContext(traceparent, state.ifEmpty { null })
    }

    /**
     * [context] with [call]'s `execute_tool` span as its (remote) parent span,
     * so spans the tool starts in it go under the call; [context] as it is when
     * the run records no spans.
     */
    fun contextOf(call: ToolCall, context: Context = Context.current()): Context {
        val parent = parseTraceparent(call.traceparent) ?: return context
        return context.with(Span.wrap(parent))
    }

    /**
     * Inside a hook's coroutine: [context] with the span the hook is consulted
     * in (the run's `invoke_agent` span) as its (remote) parent span, so spans
     * the hook starts in it go under the run; [context] as it is when the run
     * records no spans, and outside a hook.
     */
    suspend fun hookContext(context: Context = Context.current()): Context {
        val consultation = currentCoroutineContext()[HookConsultation] ?: return context
        val parent = parseTraceparent(consultation.traceparent) ?: return context
        return context.with(Span.wrap(parent))
    }

    /** The W3C `tracestate` list [text] as the SDK's `TraceState`, in its order; empty when there is none. */
    internal fun traceState(text: String?): TraceState {
        if (text.isNullOrEmpty()) return TraceState.getDefault()
        val builder = TraceState.builder()
        // The builder puts each entry first: the last member goes in first.
        for (member in text.split(',').map { it.trim() }.filter { it.isNotEmpty() }.asReversed()) {
            val at = member.indexOf('=')
            if (at > 0) builder.put(member.substring(0, at), member.substring(at + 1))
        }
        return builder.build()
    }

    internal fun parseTraceparent(text: String): SpanContext? {
        val parts = text.split('-')
        if (parts.size != 4 || parts[0] != "00") return null
        val flags = if (parts[3] == "01") TraceFlags.getSampled() else TraceFlags.getDefault()
        return SpanContext.createFromRemoteParent(parts[1], parts[2], flags, TraceState.getDefault()).takeIf { it.isValid }
    }

    private fun decode(json: String, resource: Resource, scope: InstrumentationScopeInfo): SpanData {
        val span = FerruleJson.parseToJsonElement(json).jsonObject
        val text = { key: String -> span[key]?.jsonPrimitive?.contentOrNull }
        val state = traceState(text("tracestate"))
        val context = SpanContext.create(text("trace_id")!!, text("span_id")!!, TraceFlags.getSampled(), state)
        // In this process, as every span of ferrule's and the host's span its
        // run goes under are: not remote.
        val parent = text("parent_span_id")?.let {
            SpanContext.create(text("trace_id")!!, it, TraceFlags.getSampled(), state)
        } ?: SpanContext.getInvalid()
        val status = span["status"]?.jsonObject
        val failed = status?.get("code")?.jsonPrimitive?.contentOrNull == "error"
        val events = span["events"]?.jsonArray.orEmpty().map { event ->
            val fields = event.jsonObject
            EventData.create(
                fields["time_unix_nano"]!!.jsonPrimitive.longOrNull ?: 0,
                fields["name"]!!.jsonPrimitive.content,
                attributes(fields["attributes"]),
            )
        }
        return FerruleSpanData(
            name = text("name")!!,
            kind = if (text("kind") == "client") SpanKind.CLIENT else SpanKind.INTERNAL,
            spanContext = context,
            parentSpanContext = parent,
            status = when (failed) {
                true -> StatusData.create(StatusCode.ERROR, status.get("message")?.jsonPrimitive?.contentOrNull ?: "")
                false -> StatusData.unset()
            },
            startEpochNanos = span["start_time_unix_nano"]!!.jsonPrimitive.longOrNull ?: 0,
            endEpochNanos = span["end_time_unix_nano"]!!.jsonPrimitive.longOrNull ?: 0,
            attributes = attributes(span["attributes"]),
            events = events,
            resource = resource,
            scope = scope,
        )
    }

    private fun attributes(json: JsonElement?): Attributes {
        val builder = Attributes.builder()
        for ((key, value) in json?.jsonObject.orEmpty()) {
            when (value) {
                is JsonArray -> builder.put(AttributeKey.stringArrayKey(key), value.map { it.jsonPrimitive.content })
                is JsonPrimitive -> when {
                    value.isString -> builder.put(key, value.content)
                    value.booleanOrNull != null -> builder.put(key, value.booleanOrNull!!)
                    value.longOrNull != null -> builder.put(key, value.longOrNull!!)
                    else -> value.content.toDoubleOrNull()?.let { builder.put(key, it) }
                }
                is JsonObject -> builder.put(key, value.toString())
            }
        }
        return builder.build()
    }
}

/** A finished span of ferrule's, as the SDK's span processors take it. */
private class EndedSpan(private val data: SpanData) : ReadableSpan {
    override fun getSpanContext(): SpanContext = data.spanContext
    override fun getParentSpanContext(): SpanContext = data.parentSpanContext
    override fun getName(): String = data.name
    override fun toSpanData(): SpanData = data
    @Deprecated("use getInstrumentationScopeInfo", ReplaceWith("getInstrumentationScopeInfo()"))
    @Suppress("DEPRECATION", "OVERRIDE_DEPRECATION")
    override fun getInstrumentationLibraryInfo(): io.opentelemetry.sdk.common.InstrumentationLibraryInfo =
        data.instrumentationLibraryInfo
    override fun getInstrumentationScopeInfo(): InstrumentationScopeInfo = data.instrumentationScopeInfo
    override fun hasEnded() = true
    override fun getLatencyNanos() = data.endEpochNanos - data.startEpochNanos
    override fun getKind(): SpanKind = data.kind
    override fun <T : Any> getAttribute(key: AttributeKey<T>): T? = data.attributes.get(key)
    override fun getAttributes(): Attributes = data.attributes
}

/** A finished span of ferrule's, as the SDK's exporters take it. */
private class FerruleSpanData(
    private val name: String,
    private val kind: SpanKind,
    private val spanContext: SpanContext,
    private val parentSpanContext: SpanContext,
    private val status: StatusData,
    private val startEpochNanos: Long,
    private val endEpochNanos: Long,
    private val attributes: Attributes,
    private val events: List<EventData>,
    private val resource: Resource,
    private val scope: InstrumentationScopeInfo,
) : SpanData {
    override fun getName() = name
    override fun getKind() = kind
    override fun getSpanContext() = spanContext
    override fun getParentSpanContext() = parentSpanContext
    override fun getStatus() = status
    override fun getStartEpochNanos() = startEpochNanos
    override fun getAttributes() = attributes
    override fun getEvents() = events
    override fun getLinks(): List<LinkData> = emptyList()
    override fun getEndEpochNanos() = endEpochNanos
    override fun hasEnded() = true
    override fun getTotalRecordedEvents() = events.size
    override fun getTotalRecordedLinks() = 0
    override fun getTotalAttributeCount() = attributes.size()
    @Deprecated("use getInstrumentationScopeInfo", ReplaceWith("getInstrumentationScopeInfo()"))
    @Suppress("DEPRECATION", "OVERRIDE_DEPRECATION")
    override fun getInstrumentationLibraryInfo(): io.opentelemetry.sdk.common.InstrumentationLibraryInfo =
        io.opentelemetry.sdk.common.InstrumentationLibraryInfo.create(scope.name, scope.version)
    override fun getInstrumentationScopeInfo() = scope
    override fun getResource() = resource
}
