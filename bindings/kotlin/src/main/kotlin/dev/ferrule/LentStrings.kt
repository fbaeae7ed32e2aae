package dev.ferrule

import com.sun.jna.Pointer

/**
 * The strings ferrule lends with a tool call or hook consultation, which go
 * when the request is answered. A read and the answer take turns here, so a
 * read from another coroutine never copies a string the answer freed.
 */
internal class LentStrings(private val handle: Pointer) {
    private var answered = false

    /** A copy of the string [lend] gives for the handle; empty once the request was answered. */
    fun copy(lend: (Pointer) -> FerruleStr.ByValue): String = synchronized(this) {
        if (answered) "" else lend(handle).text()
    }

    /** Marks the request answered, before the answer is given: later reads are empty. */
    fun answering() = synchronized(this) { answered = true }

    /** Runs [call], which may answer the request (an update ferrule finds invalid ends the call), between reads. */
    fun <R> mayAnswer(call: () -> R): R = synchronized(this) { call() }
}
