import CFerrule
import Foundation

extension Library {
    /// Makes every run started from now on record spans after the OpenTelemetry
    /// GenAI conventions (`invoke_agent`, `chat`, `execute_tool`;
    /// docs/tracing.md) and hands each to `tracer` when it ends, as JSON (the
    /// schema's `span`: ids, parent, name, kind, times, attributes, events,
    /// status), for the host to pass to its own tracing.
    ///
    /// `tracer` runs on one thread of ferrule's, one span at a time, in the
    /// order they ended; a run never waits for it, so a tracer that falls
    /// behind loses spans (the logger says how many). The tracer is the
    /// process's: setting one replaces the one before. Throws
    /// `resourceExhausted` when the system refuses the tracer's thread.
    public static func setTracer(_ tracer: @escaping @Sendable (Data) -> Void) throws {
        if let error = handOver(
            SpanSink(tracer),
            { ferrule_runtime_set_tracer(SpanSink.receive, $0, releaseBox) }
        ) {
            throw error
        }
    }

    /// Removes the tracer: runs started after this record no spans.
    public static func removeTracer() {
        _ = FerruleError.take(ferrule_runtime_set_tracer(nil, nil, nil))
    }
}

/// The tracer, as ferrule's user data.
private final class SpanSink: Sendable {
    private let tracer: @Sendable (Data) -> Void

    init(_ tracer: @escaping @Sendable (Data) -> Void) { self.tracer = tracer }

    static let receive: ferrule_span_fn = { userData, json, length in
        guard let sink = unbox(userData, as: SpanSink.self), let json else { return }
        sink.tracer(Data(UnsafeRawBufferPointer(start: json, count: length)))
    }
}
