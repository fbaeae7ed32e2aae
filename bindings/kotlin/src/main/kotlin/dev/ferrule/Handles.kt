package dev.ferrule

import com.sun.jna.Pointer
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * Kotlin objects handed to C as `user_data`: C holds a key, never a JVM
 * reference. Each key is put once and removed once, by [release] (ferrule's
 * `free_user_data`) or by the caller when the C call that would have taken it
 * failed. The callbacks are singletons, so JNA never sees them collected.
 */
internal object Handles {
    private val next = AtomicLong(1)
    private val live = ConcurrentHashMap<Long, Any>()

    fun put(value: Any): Pointer {
        val key = next.getAndIncrement()
        live[key] = value
        return Pointer(key)
    }

    @Suppress("UNCHECKED_CAST")
    fun <T> get(key: Pointer?): T? = key?.let { live[Pointer.nativeValue(it)] as T? }

    fun remove(key: Pointer?) {
        key?.let { live.remove(Pointer.nativeValue(it)) }
    }

    /**
     * Hands [value] to the C function [call] as its `user_data` (freed with
     * [release]); removed again when the call fails, since C did not take it
     * then. Returns the call's error.
     */
    fun handOver(value: Any, call: (key: Pointer) -> Pointer?): FerruleException? {
        val key = put(value)
        return FerruleException.take(call(key))?.also { remove(key) }
    }

    /** How many objects C holds now (for tests). */
    val count: Int get() = live.size

    /** ferrule's `free_user_data`. */
    val release = Native.attached(FreeFn { remove(it) })
}
