package dev.ferrule

import java.util.logging.Level

// ferrule's logs in the host's: retried model requests, dropped tool calls,
// what MCP servers write on stderr, cassettes that cannot be written
// (docs/logging.md). ferrule writes nothing to stdout or stderr itself.
//
// The logger is the process's: setting one replaces the one before, which
// still gets the records made for it. Records are handed over on one thread
// of ferrule's, one at a time, in the order they were made; a run never waits
// for the logger, so one that falls behind loses records, and the next it
// gets says how many.

/**
 * Sends ferrule's log records of [level] and more severe to [logger], on
 * ferrule's logger thread (see docs/logging.md); a logger that throws loses
 * that record only. Replaces the process's logger. `RESOURCE_EXHAUSTED` when
 * the system refuses the logger's thread.
 */
fun Library.setLogger(level: LogLevel, logger: (LogRecord) -> Unit) {
    Handles.handOver(LogSink(logger)) { key ->
        Native.lib.ferrule_runtime_set_logger(LogSink.receive, key, Handles.release, level.number)
    }?.let { throw it }
}

/**
 * Sends ferrule's log records to a `java.util.logging` logger (and through it
 * to SLF4J or Log4j, with their bridges), at the most detailed level it takes
 * now: error as SEVERE, warn as WARNING, info as INFO, debug as FINE and trace
 * as FINEST, with the record's target as the logger name and its fields (JSON)
 * after its message. Removes the logger when it takes none of them.
 */
fun Library.logTo(logger: java.util.logging.Logger) {
    val level = LogLevel.entries.lastOrNull { logger.isLoggable(it.julLevel) } ?: return removeLogger()
    setLogger(level) { record ->
        // The fields go in the text, not as parameters: with parameters, JUL
        // and its bridges read the message as a MessageFormat pattern, which
        // garbles quotes and braces of servers' and providers' words.
        val text = if (record.fields.isEmpty()) record.message else "${record.message} ${record.fields}"
        val out = java.util.logging.LogRecord(record.level.julLevel, text)
        out.loggerName = record.target
        out.instant = java.time.Instant.ofEpochSecond(0, record.timeUnixNano)
        logger.log(out)
    }
}

/** Removes ferrule's logger, which still gets the records made for it. */
fun Library.removeLogger() {
    FerruleException.check(Native.lib.ferrule_runtime_set_logger(null, null, null, 0))
}

/** The number the C ABI gives the level (`FERRULE_LOG_LEVEL_*`). */
private val LogLevel.number: Int get() = when (this) {
    LogLevel.ERROR -> 1
    LogLevel.WARN -> 2
    LogLevel.INFO -> 3
    LogLevel.DEBUG -> 4
    LogLevel.TRACE -> 5
}

/** The `java.util.logging` level of one of ferrule's. */
internal val LogLevel.julLevel: Level get() = when (this) {
    LogLevel.ERROR -> Level.SEVERE
    LogLevel.WARN -> Level.WARNING
    LogLevel.INFO -> Level.INFO
    LogLevel.DEBUG -> Level.FINE
    LogLevel.TRACE -> Level.FINEST
}

/** The logger, as ferrule's user data. */
private class LogSink(val logger: (LogRecord) -> Unit) {
    companion object {
        val receive = Native.attached(EventFn { userData, json, length ->
            val sink = Handles.get<LogSink>(userData) ?: return@EventFn
            if (json == null) return@EventFn
            val text = json.getByteArray(0, length.toLong().toInt()).toString(Charsets.UTF_8)
            val record = runCatching { FerruleJson.decodeFromString(LogRecord.serializer(), text) }.getOrNull()
            record?.let { runCatching { sink.logger(it) } }
        })
    }
}
