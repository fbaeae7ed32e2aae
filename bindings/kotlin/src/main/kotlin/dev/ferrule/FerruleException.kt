package dev.ferrule

import com.sun.jna.Pointer

/** A stable ferrule error code (`FERRULE_ERROR_*` in ferrule.h); the numbers never change. */
enum class ErrorCode(val value: Int) {
    NULL_ARG(1), INVALID_UTF8(2), INVALID_JSON(3), INVALID_ARG(4), INVALID_SCHEMA(5), DUPLICATE_TOOL(6), PANIC(7),
    CANCELLED(8), TIMEOUT(9), WOULD_DEADLOCK(10), ALREADY_COMPLETED(11), ALREADY_INITIALIZED(12), FORKED(13),
    SHUTDOWN(14), TOOL_FAILED(15), SCRIPT_EXHAUSTED(16), RESOURCE_EXHAUSTED(17), INVALID_OUTPUT(18),
    HOOK_ABORTED(19), PROVIDER_AUTH(32), PROVIDER_INVALID_REQUEST(33), PROVIDER_NOT_FOUND(34),
    PROVIDER_RATE_LIMITED(35), PROVIDER_OVERLOADED(36), PROVIDER_SERVER(37), PROVIDER_NETWORK(38),
    PROVIDER_MALFORMED_STREAM(39),
    /** A code this package does not know yet. */
    UNKNOWN(0);

    companion object {
        fun of(value: Int): ErrorCode = entries.firstOrNull { it.value == value } ?: UNKNOWN
    }
}

/** Every error ferrule reports, with its stable [code]. */
class FerruleException(val code: ErrorCode, val detail: String) : Exception("${code.name}: $detail") {
    internal companion object {
        /** Takes ownership of an error a C function returned: null for NULL. */
        fun take(error: Pointer?): FerruleException? {
            if (error == null) return null
            val lib = Native.lib
            try {
                return FerruleException(ErrorCode.of(lib.ferrule_error_code(error)), lib.ferrule_error_message(error).text())
            } finally {
                lib.ferrule_error_free(error)
            }
        }

        /** Throws the error a C function returned, if any. */
        fun check(error: Pointer?) {
            take(error)?.let { throw it }
        }
    }
}

/**
 * What a tool's or hook's exception tells the model or the run: its message, or
 * its class when it has none (or reading it throws).
 */
internal fun Throwable.reason(thrower: String): String =
    runCatching { message }.getOrNull()?.takeIf { it.isNotBlank() } ?: "$thrower threw ${javaClass.name}"
