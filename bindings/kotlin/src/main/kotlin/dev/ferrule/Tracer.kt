package dev.ferrule

/**
 * Makes every run started from now on record spans after the OpenTelemetry
 * GenAI conventions (`invoke_agent`, `chat`, `execute_tool`; docs/tracing.md)
 * and hands each to [tracer] when it ends, as JSON (the schema's `span`), on
 * ferrule's tracer thread, one at a time, in the order they ended. A run never
 * waits for it: a tracer that falls behind loses spans, and one that throws
 * loses that span only. Replaces the process's tracer;
 * [FerruleOpenTelemetry][dev.ferrule.otel.FerruleOpenTelemetry] bridges it to
 * an OpenTelemetry SDK. `RESOURCE_EXHAUSTED` when the system refuses the
 * tracer's thread.
 */
fun Library.setTracer(tracer: (String) -> Unit) {
    Handles.handOver(SpanSink(tracer)) { key ->
        Native.lib.ferrule_runtime_set_tracer(SpanSink.receive, key, Handles.release)
    }?.let { throw it }
}

/** Removes the tracer: runs started after this record no spans. */
fun Library.removeTracer() {
    FerruleException.check(Native.lib.ferrule_runtime_set_tracer(null, null, null))
}

/** The tracer, as ferrule's user data. */
private class SpanSink(val tracer: (String) -> Unit) {
    companion object {
        val receive = Native.attached(EventFn { userData, json, length ->
            val sink = Handles.get<SpanSink>(userData) ?: return@EventFn
            if (json == null) return@EventFn
            val text = json.getByteArray(0, length.toLong().toInt()).toString(Charsets.UTF_8)
            runCatching { sink.tracer(text) }
        })
    }
}
