package dev.ferrule

import com.sun.jna.NativeLong
import com.sun.jna.Pointer
import com.sun.jna.ptr.NativeLongByReference
import com.sun.jna.ptr.PointerByReference
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.receiveAsFlow
import kotlinx.coroutines.withContext
import java.io.Closeable

/**
 * A run. [events] gives each event's JSON in order, ending after `run_end`;
 * [await] the result JSON. Cancel with [cancel]; [close] lets go of the
 * handle (cancelling a run still going).
 */
class Run private constructor(private val handle: Pointer, private val sink: EventSink) : Closeable {
    /** The run's id ("run-7"). */
    val id: String = Native.lib.ferrule_run_id(handle).text()

    /** The run's events as JSON, in order; the flow completes after `run_end`. One collector. */
    val events: Flow<String> get() = sink.channel.receiveAsFlow()

    /** Waits for the run's end and returns the result JSON (every status). */
    suspend fun await(): String {
        sink.ended.await()
        return withContext(Dispatchers.IO) {
            val text = PointerByReference()
            val length = NativeLongByReference()
            FerruleException.check(Native.lib.ferrule_run_wait(handle, text, length))
            try {
                text.value.getByteArray(0, length.value.toLong().toInt()).toString(Charsets.UTF_8)
            } finally {
                Native.lib.ferrule_string_free(text.value)
            }
        }
    }

    /** Cancels the run; never blocks. */
    fun cancel() = Native.lib.ferrule_run_cancel(handle)

    private var closed = false

    /** Frees the handle; a live run is cancelled. Any number of times. */
    override fun close() {
        synchronized(this) {
            if (closed) return
            closed = true
        }
        Native.lib.ferrule_run_free(handle)
    }

    internal companion object {
        fun start(agent: Pointer, inputJson: String): Run {
            val sink = EventSink()
            val key = Handles.put(sink)
            val input = inputJson.utf8()
            val out = PointerByReference()
            val error = FerruleException.take(
                Native.lib.ferrule_agent_start(agent, input, input.length, EventSink.deliver, key, EventSink.finish, out))
            if (error != null) {
                Handles.remove(key)
                throw error
            }
            return Run(out.value, sink)
        }
    }
}

/** Where a run's events go; ferrule holds it (by key) until the run has ended. */
internal class EventSink {
    val channel = Channel<String>(Channel.UNLIMITED)
    val ended = CompletableDeferred<Unit>()

    companion object {
        val deliver = EventFn { userData, json, length ->
            val sink = Handles.get<EventSink>(userData) ?: return@EventFn
            val text = json?.getByteArray(0, length.toLong().toInt())?.toString(Charsets.UTF_8) ?: return@EventFn
            sink.channel.trySend(text)
        }

        /** `free_user_data`: right after `run_end`. */
        val finish = FreeFn { userData ->
            val sink = Handles.get<EventSink>(userData)
            Handles.remove(userData)
            sink?.channel?.close()
            sink?.ended?.complete(Unit)
        }
    }
}

