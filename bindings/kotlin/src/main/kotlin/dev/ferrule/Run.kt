package dev.ferrule

import com.sun.jna.Pointer
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
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import java.io.Closeable
import java.util.concurrent.ConcurrentLinkedDeque
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference

/**
 * A run. [events] gives its events in order; [await] its result. Cancel it with
 * [cancel] or by cancelling the coroutine that awaits it or collects its events;
 * [close] frees the handle (cancelling a run still going). Every method may be
 * called from any thread or coroutine.
 */
class Run private constructor(pointer: Pointer, private val sink: EventSink) : Closeable {
    /** The run's id ("run-7"). */
    val id: String = Native.lib.ferrule_run_id(pointer).text()
    private val handle = OwnedHandle(pointer) { run ->
        // Other handles (an await's) may outlive this one: a free must cancel by itself.
        Native.lib.ferrule_run_cancel(run)
        Native.lib.ferrule_run_free(run)
    }
    private val cleanable = OwnedHandle.cleaner.register(this, handle)
    @Volatile private var result: RunResult? = null

    /**
     * The run's events in order; the flow completes after [Event.RunEnd].
     * Events wait in memory for a collector, so one that starts after the run,
     * or after [await], misses nothing; one collector at a time (another
     * meanwhile throws [IllegalStateException]), and a collector that stops
     * early on its own (`first()`, `take(n)`) leaves the rest to the next one
     * without cancelling the run. Cancelling the collecting coroutine cancels
     * the run; the event it was handed when cancelled is handed to the next
     * collector too (at least once). [close] lets go of events while nobody
     * collects them.
     */
    val events: Flow<Event> = flow {
        if (!sink.claim()) return@flow
        try {
            while (true) {
                val event = sink.next() ?: break
                try {
                    emit(event)
                } catch (stop: CancellationException) {
                    // Cancelled, not stopped early: the next collector gets this event too.
                    if (!currentCoroutineContext().isActive) sink.putBack(event)
                    throw stop
                }
            }
        } catch (stop: CancellationException) {
            if (!currentCoroutineContext().isActive) cancel()
            throw stop
        } finally {
            sink.release()
        }
    }

    /**
     * The run's result once it has ended and let go of the host's tools, for
     * every status (a failed run has its error inside); any number of times.
     * Cancelling the awaiting coroutine cancels the run and throws
     * [CancellationException]. An await under way when another thread closes
     * the run gets the cancelled run's result; one that starts after the close
     * gets the result an earlier await had, or `INVALID_ARG`.
     */
    suspend fun await(): RunResult {
        result?.let { return it }
        // A handle of its own, so that a close meanwhile neither frees what is
        // in use nor loses the result.
        val own = handle.use { Native.lib.ferrule_run_clone(it) }
            ?: return result ?: throw FerruleException(ErrorCode.INVALID_ARG, "the run is closed")
        try {
            try {
                sink.ended.await()
            } catch (stop: CancellationException) {
                Native.lib.ferrule_run_cancel(own)
                throw stop
            }
            // The result run_end carried, when the sink has it: ferrule_run_wait
            // then only waits for the run to let go of the host's tools, where it
            // would serialize the result again (and reading it twice costs as much).
            val ended = sink.takeEndResult()
            val json = withContext(Dispatchers.IO + NonCancellable) { waitForResult(own, withText = ended == null) }
            return (ended ?: readResult(json!!)).also { result = it }
        } finally {
            Native.lib.ferrule_run_free(own)
        }
    }

    private fun readResult(json: String): RunResult = try {
        FerruleJson.decodeFromString(RunResult.serializer(), json)
    } catch (unreadable: IllegalArgumentException) {
        throw FerruleException(ErrorCode.INVALID_JSON, "the run result does not decode: ${unreadable.message}")
    }

    /**
     * `ferrule_run_wait` on [own]: the result JSON, or null without [withText]
     * (the run has ended, so this does not block for long).
     */
    private fun waitForResult(own: Pointer, withText: Boolean): String? {
        if (!withText) {
            val refused = FerruleException.take(Native.lib.ferrule_run_wait(own, null, null)) ?: return null
            // A libferrule older than the wait without the text: ask for it, and drop it.
            if (refused.code != ErrorCode.NULL_ARG) throw refused
        }
        return takeString { text, length -> Native.lib.ferrule_run_wait(own, text, length) }
    }

    /** Cancels the run: its tools' coroutines are cancelled and it ends `cancelled`. Never blocks. */
    fun cancel() {
        handle.use { Native.lib.ferrule_run_cancel(it) }
    }

    /** Queues a user or system message into the live run (docs/hooks.md, "Injection"). */
    fun inject(message: Message) {
        val bytes = FerruleJson.encodeToString(Message.serializer(), message).utf8()
        handle.use { FerruleException.check(Native.lib.ferrule_run_inject(it, bytes, bytes.length)) }
            ?: throw FerruleException(ErrorCode.ALREADY_COMPLETED, "the run is closed")
    }

    /**
     * Frees the handle; a live run is cancelled (it still ends properly), and
     * events nobody is collecting are let go (a collector under way goes on to
     * the end). Any number of times; a run collected without it is freed then.
     */
    override fun close() {
        sink.letGoUncollected()
        cleanable.clean()
    }

    internal companion object {
        /** Starts a run of [agent]; without [keepEvents] its events are let go as they come. */
        fun start(agent: Pointer, input: RunInput, keepEvents: Boolean): Run {
            val sink = EventSink(keepEvents)
            // Without a reader, only run_end, which tells the sink the run is
            // over: the run builds no other event. With one, the events come
            // in bursts: one callback for all those queued by then.
            val asked = if (keepEvents) input.with("event_bursts", JsonPrimitive(true)) else input.with("events", JsonPrimitive("run_end"))
            val input = asked.json.utf8()
            val out = PointerByReference()
            Handles.handOver(sink) { key ->
                Native.lib.ferrule_agent_start(agent, input, input.length, EventSink.deliver, key, EventSink.finish, out)
            }?.let { throw it }
            return Run(out.value, sink)
        }
    }
}

/**
 * Where a run's events go; ferrule holds it (by key) until the run has ended.
 * Events come in bursts (the JSON list of the events queued by then) and wait
 * for a collector without bound (a bound would let a tool's progress update,
 * which waits for room, deadlock against a collector on the same dispatcher),
 * until the run is closed while nobody collects them.
 */
internal class EventSink(keep: Boolean) {
    /** A run without a reader: its one event is run_end, whose result [Run.await] reads. */
    private val endOnly = !keep

    /**
     * What run_end carried, for [takeEndResult]: its UTF-8 text (a run without
     * a reader), or its result once the collector decoded it; [TAKEN] once an
     * await took it or the run was closed, so that nothing keeps it after.
     */
    private val end = AtomicReference<Any?>(null)

    /**
     * Events taken from the channel and not handed on yet, oldest first: the
     * rest of a burst, and an event a cancelled collector had taken. The next
     * collector gets them first.
     */
    private val pending = ConcurrentLinkedDeque<Event>()
    val channel = Channel<String>(Channel.UNLIMITED, onUndeliveredElement = ::keepBurst)
    val ended = CompletableDeferred<Unit>()
    private val stage = AtomicInteger(if (keep) WAITING else LET_GO)
    @Volatile private var closed = false

    /** Takes the events for one collector: false when they were let go (nothing to collect). */
    fun claim(): Boolean = when (stage.compareAndExchange(WAITING, COLLECTING)) {
        WAITING -> true
        LET_GO -> false
        else -> throw IllegalStateException("the events of a run are collected by one collector at a time")
    }

    /** The next event, oldest first; null after the last. */
    suspend fun next(): Event? {
        while (true) {
            pending.pollFirst()?.let { return it }
            keepBurst(channel.receiveCatching().getOrNull() ?: return pending.pollFirst())
        }
    }

    /** Gives back an event its collector took and never handed on. */
    fun putBack(event: Event) {
        if (stage.get() != LET_GO) pending.addFirst(event)
    }

    /**
     * Keeps a burst's events (decoded) after those pending, unless they were
     * let go; what is not a JSON object (ferrule writes none) is an
     * [Event.Unknown] holding nothing, never an exception (this also runs as
     * the channel's handler of undelivered elements).
     */
    private fun keepBurst(burst: String) {
        if (stage.get() == LET_GO) return
        val events = runCatching { FerruleJson.parseToJsonElement(burst) }.getOrNull()
        for (event in events as? JsonArray ?: listOf(events)) {
            val decoded = (event as? JsonObject)?.let(Event::decode) ?: Event.Unknown("", "", JsonObject(emptyMap()))
            if (decoded is Event.RunEnd) end.compareAndSet(null, decoded.result)
            pending.addLast(decoded)
        }
    }

    /**
     * The run's result as run_end carried it, once the run has ended; null when
     * the sink has it not (a collector has not reached run_end yet, or its text
     * does not decode): `ferrule_run_wait` then gives it. Lets go of it.
     */
    fun takeEndResult(): RunResult? = when (val taken = end.getAndSet(TAKEN)) {
        is RunResult -> taken
        is ByteArray -> runCatching {
            FerruleJson.decodeFromString(RunEndResult.serializer(), taken.toString(Charsets.UTF_8)).result
        }.getOrNull()
        else -> null
    }

    /** The collector stopped: the events wait for the next one, unless the run was closed meanwhile. */
    fun release() {
        stage.compareAndSet(COLLECTING, WAITING)
        if (closed) letGo()
    }

    /** The run was closed: events nobody collects now are not kept. */
    fun letGoUncollected() {
        end.set(TAKEN)
        closed = true
        letGo()
    }

    private fun letGo() {
        if (stage.compareAndSet(WAITING, LET_GO)) {
            pending.clear()
            channel.cancel()
        }
    }

    companion object {
        private const val WAITING = 0
        private const val COLLECTING = 1
        private const val LET_GO = 2

        /** [end] once taken: nothing to keep. */
        private val TAKEN = Any()

        val deliver = Native.attached(EventFn { userData, json, length ->
            val sink = Handles.get<EventSink>(userData) ?: return@EventFn
            if (json == null) return@EventFn
            val bytes = { json.getByteArray(0, length.toLong().toInt()) }
            when {
                sink.endOnly -> sink.end.compareAndSet(null, bytes()) // decoded by the await, not on this thread
                sink.stage.get() != LET_GO -> sink.channel.trySend(bytes().toString(Charsets.UTF_8))
            }
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

/** The result of a run_end event's JSON, read without the rest of the event. */
@Serializable
private class RunEndResult(val result: RunResult)
