import CFerrule
import Foundation

extension Library {
    /// Sends ferrule's log records of `level` and more severe to `logger`:
    /// retried model requests, dropped tool calls, what MCP servers write on
    /// stderr, cassettes that cannot be written (docs/logging.md). ferrule
    /// writes nothing to stdout or stderr itself.
    ///
    /// `logger` runs on one thread of ferrule's, one record at a time, in the
    /// order they were made; a run never waits for it, so a logger that falls
    /// behind loses records, and the next it gets says how many. The logger is
    /// the process's: setting one replaces the one before, which still gets
    /// the records made for it. Throws `resourceExhausted` when the system
    /// refuses the logger's thread.
    public static func setLogger(level: LogLevel, _ logger: @escaping @Sendable (LogRecord) -> Void) throws {
        let sink = LogSink(logger)
        if let error = handOver(
            sink,
            { ferrule_runtime_set_logger(LogSink.receive, $0, releaseBox, level.number) }
        ) {
            throw error
        }
    }

    /// Removes the logger set with `setLogger`, which still gets the records
    /// made for it.
    public static func removeLogger() {
        _ = FerruleError.take(ferrule_runtime_set_logger(nil, nil, nil, 0))
    }
}

extension LogLevel {
    /// The number the C ABI gives the level (`FERRULE_LOG_LEVEL_*`).
    var number: UInt32 {
        switch self {
        case .error: UInt32(FERRULE_LOG_LEVEL_ERROR.rawValue)
        case .warn: UInt32(FERRULE_LOG_LEVEL_WARN.rawValue)
        case .info: UInt32(FERRULE_LOG_LEVEL_INFO.rawValue)
        case .debug: UInt32(FERRULE_LOG_LEVEL_DEBUG.rawValue)
        case .trace: UInt32(FERRULE_LOG_LEVEL_TRACE.rawValue)
        }
    }
}

/// The logger, as ferrule's user data.
private final class LogSink: Sendable {
    private let logger: @Sendable (LogRecord) -> Void

    init(_ logger: @escaping @Sendable (LogRecord) -> Void) { self.logger = logger }

    static let receive: ferrule_log_fn = { userData, json, length in
        guard let sink = unbox(userData, as: LogSink.self), let json else { return }
        let text = UnsafeRawBufferPointer(start: json, count: length)
        guard let record = try? JSONReader.decode(LogRecord.self, from: text) else { return }
        sink.logger(record)
    }
}
