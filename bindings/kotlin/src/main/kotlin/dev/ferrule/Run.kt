package dev.ferrule

import com.sun.jna.Pointer
import com.sun.jna.ptr.NativeLongByReference
import com.sun.jna.ptr.PointerByReference
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.isActive
import kotlinx.coroutines.withContext
import java.io.Closeable

/**
 * A run. [events] gives its events in order; [await] its result. Cancel it with
 * [cancel] or by cancelling the coroutine that awaits it or collects its events;
 * [close] frees the handle (cancelling a run still going).
 */
class Run private constructor(pointer: Pointer, private val sink: EventSink) : Closeable {
    /** The run's id ("run-7"). */
    val id: String = Native.lib.ferrule_run_id(pointer).text()
    private val handle = OwnedHandle(pointer) { Native.lib.ferrule_run_free(it) }
    private val cleanable = OwnedHandle.cleaner.register(this, handle)

    /**
     * The run's events in order; the flow completes after [Event.RunEnd]. One
     * collector. Cancelling the collecting coroutine cancels the run; a
     * collector that stops early on its own (`first()`, `take(n)`) does not.
     */
    val events: Flow<Event> = flow {
        try {
            for (json in sink.channel) emit(Event.decode(json))
        } catch (stop: CancellationException) {
            if (!currentCoroutineContext().isActive) cancel()
            throw stop
        }
    }

    /**
     * The run's result once it has ended and let go of the host's tools, for
     * every status (a failed run has its error inside). Cancelling the awaiting
     * coroutine cancels the run and throws [CancellationException].
     */
    suspend fun await(): RunResult {
        try {
            sink.ended.await()
        } catch (stop: CancellationException) {
            cancel()
            throw stop
        }
        // A handle of its own, so that a close meanwhile frees nothing in use.
        val own = handle.use { Native.lib.ferrule_run_clone(it) }
            ?: throw FerruleException(ErrorCode.INVALID_ARG, "the run is closed")
        val json = withContext(Dispatchers.IO + NonCancellable) {
            val text = PointerByReference()
            val length = NativeLongByReference()
            try {
                FerruleException.check(Native.lib.ferrule_run_wait(own, text, length))
                text.value.getByteArray(0, length.value.toLong().toInt()).toString(Charsets.UTF_8)
            } finally {
                Native.lib.ferrule_string_free(text.value)
                Native.lib.ferrule_run_free(own)
            }
        }
        return FerruleJson.decodeFromString(RunResult.serializer(), json)
    }

    /** Cancels the run: its tools' coroutines are cancelled and it ends `cancelled`. Never blocks. */
    fun cancel() {
        handle.use { Native.lib.ferrule_run_cancel(it) }
    }

    /** Queues a user or system message into the live run (README "Injection"). */
    fun inject(message: Message) {
        val bytes = FerruleJson.encodeToString(Message.serializer(), message).utf8()
        handle.use { FerruleException.check(Native.lib.ferrule_run_inject(it, bytes, bytes.length)) }
            ?: throw FerruleException(ErrorCode.INVALID_ARG, "the run is closed")
    }

    /**
     * Frees the handle; a live run is cancelled (it still ends properly). Any
     * number of times; a run collected without it is freed then.
     */
    override fun close() = cleanable.clean()

    internal companion object {
        fun start(agent: Pointer, inputJson: String): Run {
            val sink = EventSink()
            val input = inputJson.utf8()
            val out = PointerByReference()
            Handles.handOver(sink) { key ->
                Native.lib.ferrule_agent_start(agent, input, input.length, EventSink.deliver, key, EventSink.finish, out)
            }?.let { throw it }
            return Run(out.value, sink)
        }
    }
}

/** Where a run's events go; ferrule holds it (by key) until the run has ended. */
internal class EventSink {
    val channel = Channel<String>(Channel.UNLIMITED)
    val ended = CompletableDeferred<Unit>()

    companion object {
        val deliver = Native.attached(EventFn { userData, json, length ->
            val sink = Handles.get<EventSink>(userData) ?: return@EventFn
            val text = json?.getByteArray(0, length.toLong().toInt())?.toString(Charsets.UTF_8) ?: return@EventFn
            sink.channel.trySend(text)
        })

        /** `free_user_data`: right after `run_end`. */
        val finish = Native.attached(FreeFn { userData ->
            val sink = Handles.get<EventSink>(userData)
            Handles.remove(userData)
            sink?.channel?.close()
            sink?.ended?.complete(Unit)
        })
    }
}
