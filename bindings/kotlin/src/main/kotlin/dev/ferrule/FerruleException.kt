package dev.ferrule

import com.sun.jna.Pointer

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
