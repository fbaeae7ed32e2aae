package dev.ferrule

import com.sun.jna.Pointer
import java.lang.ref.Cleaner

/**
 * One owned C handle (an agent or a run), freed once: by `close()`, or by the
 * [cleaner] when its owner is collected without it. Uses of the handle hold its
 * lock, so a free never races them.
 */
internal class OwnedHandle(private var pointer: Pointer?, private val free: (Pointer) -> Unit) : Runnable {
    /** Runs [body] with the handle while it is live; null once freed. */
    @Synchronized
    fun <T> use(body: (Pointer) -> T): T? = pointer?.let(body)

    /** Frees the handle (the first time). */
    @Synchronized
    override fun run() {
        pointer?.let(free)
        pointer = null
    }

    companion object {
        val cleaner: Cleaner = Cleaner.create()
    }
}
