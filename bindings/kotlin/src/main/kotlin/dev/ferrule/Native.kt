package dev.ferrule

import com.sun.jna.Callback
import com.sun.jna.CallbackReference
import com.sun.jna.CallbackThreadInitializer
import com.sun.jna.Memory
import com.sun.jna.NativeLong
import com.sun.jna.Pointer
import com.sun.jna.Structure
import com.sun.jna.ptr.NativeLongByReference
import com.sun.jna.ptr.PointerByReference
import java.lang.reflect.Method

/**
 * The C ABI of `include/ferrule.h`, through JNA's direct mapping: native
 * methods bound once, by [Native.lib]. Strings cross as UTF-8 byte arrays with
 * their length (`size_t` is a [NativeLong] on the Unix platforms ferrule runs
 * on); handles are [Pointer]s. Direct mapping costs a call a fraction of what
 * JNA's interface proxy does, and a callback passed to one of these functions
 * is called without the proxy's reflection (see [Native.directAddress] for
 * the callbacks of specs).
 */
@Suppress("FunctionName")
internal class FerruleLibrary {
    external fun ferrule_runtime_configure(json: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_runtime_set_logger(log: EventFn?, userData: Pointer?, free: FreeFn?, level: Int): Pointer?
    external fun ferrule_runtime_set_tracer(onSpan: EventFn?, userData: Pointer?, free: FreeFn?): Pointer?

    external fun ferrule_agent_builder_new(json: ByteArray, len: NativeLong, out: PointerByReference): Pointer?
    external fun ferrule_agent_builder_add_tool(builder: Pointer, spec: ToolSpec): Pointer?
    external fun ferrule_agent_builder_add_agent(builder: Pointer, spec: AgentToolSpec): Pointer?
    external fun ferrule_agent_builder_add_hook(
        builder: Pointer, stages: ByteArray, len: NativeLong, decide: RequestFn, userData: Pointer?, free: FreeFn?,
    ): Pointer?
    external fun ferrule_agent_build(builder: Pointer, out: PointerByReference): Pointer?
    external fun ferrule_agent_builder_free(builder: Pointer?)
    external fun ferrule_agent_free(agent: Pointer?)
    external fun ferrule_agent_unused_recordings(agent: Pointer, out: PointerByReference, len: NativeLongByReference): Pointer?
    external fun ferrule_agent_start(
        agent: Pointer, input: ByteArray, len: NativeLong, onEvent: EventFn?, userData: Pointer?, free: FreeFn?,
        out: PointerByReference,
    ): Pointer?

    external fun ferrule_error_code(error: Pointer?): Int
    external fun ferrule_error_message(error: Pointer?): FerruleStr.ByValue
    external fun ferrule_error_free(error: Pointer?)

    external fun ferrule_run_id(run: Pointer?): FerruleStr.ByValue
    external fun ferrule_run_wait(run: Pointer, result: PointerByReference?, len: NativeLongByReference?): Pointer?
    external fun ferrule_run_inject(run: Pointer, json: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_run_cancel(run: Pointer?)
    external fun ferrule_run_clone(run: Pointer?): Pointer?
    external fun ferrule_run_free(run: Pointer?)
    external fun ferrule_string_free(text: Pointer?)

    external fun ferrule_tool_call_strings(call: Pointer?, id: Pointer?, name: Pointer?, arguments: Pointer?)
    external fun ferrule_tool_call_traceparent(call: Pointer?): FerruleStr.ByValue
    external fun ferrule_tool_call_attempt(call: Pointer?): Int
    /** C's `bool` is one byte, of which JNA's `Boolean` would read four. */
    external fun ferrule_tool_call_is_cancelled(call: Pointer?): Byte
    external fun ferrule_tool_call_update(call: Pointer, json: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_tool_call_complete(call: Pointer, json: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_tool_call_fail(call: Pointer, message: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_tool_call_on_cancel(call: Pointer, onCancel: CancelFn, userData: Pointer?, free: FreeFn?): Pointer?

    external fun ferrule_agent_builder_set_model(builder: Pointer, spec: ModelSpec): Pointer?
    external fun ferrule_model_request_options_json(request: Pointer?): FerruleStr.ByValue
    external fun ferrule_model_request_new_messages_json(request: Pointer?): FerruleStr.ByValue
    external fun ferrule_model_request_text_delta(request: Pointer, text: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_model_request_thinking_delta(request: Pointer, text: ByteArray, len: NativeLong): Pointer?
    external fun ferrule_model_request_tool_call_delta(
        request: Pointer, index: Int, id: ByteArray, idLen: NativeLong, name: ByteArray, nameLen: NativeLong,
        arguments: ByteArray, argumentsLen: NativeLong,
    ): Pointer?
    external fun ferrule_model_request_usage(request: Pointer, input: Long, output: Long, cached: Long): Pointer?
    external fun ferrule_model_request_complete(request: Pointer, stopReason: ByteArray, len: NativeLong): Pointer?
    /** `retryable` is C's one-byte `bool`. */
    external fun ferrule_model_request_fail(
        request: Pointer, code: Int, message: ByteArray, len: NativeLong, retryable: Byte,
    ): Pointer?
    external fun ferrule_model_request_on_cancel(request: Pointer, onCancel: CancelFn, userData: Pointer?, free: FreeFn?): Pointer?

    external fun ferrule_hook_strings(hook: Pointer?, stage: Pointer?, payload: Pointer?)
    external fun ferrule_hook_traceparent(hook: Pointer?): FerruleStr.ByValue
    external fun ferrule_hook_respond(hook: Pointer, json: ByteArray, len: NativeLong): Pointer?
    /** The same with the decision in native memory: JNA lends it as it is, where it copies an array in and out. */
    external fun ferrule_hook_respond(hook: Pointer, json: Pointer, len: NativeLong): Pointer?
    external fun ferrule_hook_on_cancel(hook: Pointer, onCancel: CancelFn, userData: Pointer?, free: FreeFn?): Pointer?
    external fun ferrule_hook_run_state(hook: Pointer): Pointer?
    external fun ferrule_hook_set_run_state(hook: Pointer, state: Pointer?, free: FreeFn?): Pointer?
}

/**
 * `ferrule_str`: a borrowed UTF-8 string, NUL-terminated at `ptr[len]`. Each
 * instance is written in its thread's scratch memory instead of memory of its
 * own (which JNA would allocate and register for cleaning at every call that
 * returns one): read it with [text] before the thread's next such call.
 */
@Structure.FieldOrder("ptr", "len")
internal open class FerruleStr : Structure(scratch.get()) {
    @JvmField var ptr: Pointer? = null
    @JvmField var len: NativeLong = NativeLong(0)

    /** A copy of the text. */
    fun text(): String = utf8Text(ptr, len)

    class ByValue : FerruleStr(), Structure.ByValue

    private companion object {
        /** Room for one `ferrule_str` per thread. */
        val scratch: ThreadLocal<Memory> = ThreadLocal.withInitial { Memory(16) }
    }
}

/**
 * Three `ferrule_str` in the calling thread's scratch memory, for the
 * functions that write several strings at once (`ferrule_tool_call_strings`,
 * `ferrule_hook_strings`): a function returning one struct by value costs JNA
 * a `Structure` built by reflection, six times a plain call.
 */
internal class StrSlots private constructor() {
    private val memory = Memory(3L * SIZE)

    /** Where each string is written. */
    val slots: List<Pointer> = (0 until 3).map { memory.share(it * SIZE, SIZE) }

    /** A copy of the text written in the [index]th slot. */
    fun text(index: Int): String =
        utf8Text(memory.getPointer(index * SIZE), memory.getNativeLong(index * SIZE + com.sun.jna.Native.POINTER_SIZE))

    companion object {
        private val SIZE = (com.sun.jna.Native.POINTER_SIZE + NativeLong.SIZE).toLong()
        private val perThread: ThreadLocal<StrSlots> = ThreadLocal.withInitial { StrSlots() }

        /** The calling thread's slots: read them before its next call that writes them. */
        fun get(): StrSlots = perThread.get()
    }
}

/**
 * The string a function writes through `char **` and `size_t *` out-parameters
 * ([write] calls it with them, returning its error): checked, copied, and
 * freed with `ferrule_string_free`.
 */
internal fun takeString(write: (PointerByReference, NativeLongByReference) -> Pointer?): String {
    val text = PointerByReference()
    val length = NativeLongByReference()
    try {
        FerruleException.check(write(text, length))
        return utf8Text(text.value, length.value)
    } finally {
        Native.lib.ferrule_string_free(text.value)
    }
}

/** A copy of the UTF-8 text of a `ferrule_str`'s `ptr` and `len`; empty for none. */
private fun utf8Text(ptr: Pointer?, len: NativeLong): String {
    val length = len.toLong().toInt()
    if (length == 0) return ""
    return ptr?.getByteArray(0, length)?.toString(Charsets.UTF_8) ?: ""
}

/** `ferrule_tool_spec`; its strings and callbacks must stay reachable during the call. */
@Structure.FieldOrder(
    "struct_size", "name", "name_len", "description", "description_len", "input_schema", "input_schema_len",
    "options", "options_len", "execute", "user_data", "free_user_data",
)
internal class ToolSpec : Structure() {
    @JvmField var struct_size: Int = 0
    @JvmField var name: Pointer? = null
    @JvmField var name_len: NativeLong = NativeLong(0)
    @JvmField var description: Pointer? = null
    @JvmField var description_len: NativeLong = NativeLong(0)
    @JvmField var input_schema: Pointer? = null
    @JvmField var input_schema_len: NativeLong = NativeLong(0)
    @JvmField var options: Pointer? = null
    @JvmField var options_len: NativeLong = NativeLong(0)
    /** [directAddress] of the request callback. */
    @JvmField var execute: Pointer? = null
    @JvmField var user_data: Pointer? = null
    @JvmField var free_user_data: FreeFn? = null
}

/** `ferrule_agent_tool_spec`; its strings and agent must stay reachable during the call. */
@Structure.FieldOrder(
    "struct_size", "name", "name_len", "description", "description_len", "agent", "input_schema",
    "input_schema_len", "mode", "mode_len", "options", "options_len",
)
internal class AgentToolSpec : Structure() {
    @JvmField var struct_size: Int = 0
    @JvmField var name: Pointer? = null
    @JvmField var name_len: NativeLong = NativeLong(0)
    @JvmField var description: Pointer? = null
    @JvmField var description_len: NativeLong = NativeLong(0)
    @JvmField var agent: Pointer? = null
    @JvmField var input_schema: Pointer? = null
    @JvmField var input_schema_len: NativeLong = NativeLong(0)
    @JvmField var mode: Pointer? = null
    @JvmField var mode_len: NativeLong = NativeLong(0)
    @JvmField var options: Pointer? = null
    @JvmField var options_len: NativeLong = NativeLong(0)
}

/** `ferrule_model_spec`; its name and callback must stay reachable during the call. */
@Structure.FieldOrder("struct_size", "name", "name_len", "generate", "user_data", "free_user_data", "nonblocking")
internal class ModelSpec : Structure() {
    @JvmField var struct_size: Int = 0
    @JvmField var name: Pointer? = null
    @JvmField var name_len: NativeLong = NativeLong(0)
    /** [directAddress] of the request callback. */
    @JvmField var generate: Pointer? = null
    @JvmField var user_data: Pointer? = null
    @JvmField var free_user_data: FreeFn? = null
    /** C's one-byte `bool`. */
    @JvmField var nonblocking: Byte = 0
}

/** `ferrule_tool_fn`, `ferrule_hook_fn` and `ferrule_model_fn`: a request (a tool call, a hook, a model request) for the host to answer. */
internal fun interface RequestFn : Callback {
    fun invoke(userData: Pointer?, request: Pointer?)
}

/** `ferrule_event_fn`. */
internal fun interface EventFn : Callback {
    fun invoke(userData: Pointer?, json: Pointer?, len: NativeLong)
}

/** `ferrule_free_fn`. */
internal fun interface FreeFn : Callback {
    fun invoke(userData: Pointer?)
}

/** `ferrule_cancel_fn`. */
internal fun interface CancelFn : Callback {
    fun invoke(userData: Pointer?)
}

/**
 * `ferrule_version` and `ferrule_abi_version`, which every libferrule has
 * whatever its ABI: bound apart from [FerruleLibrary], so that a library of
 * another ABI is still named and refused clearly (`Library.abiMatches`).
 */
@Suppress("FunctionName")
internal class FerruleVersions {
    external fun ferrule_version(): FerruleStr.ByValue
    external fun ferrule_abi_version(): Int
}

/**
 * The loaded library: found through `jna.library.path`, the class path (by
 * this package's class loader) or the system's paths. A library that cannot
 * be loaded, or lacks one of the functions, is an `UnsatisfiedLinkError`
 * naming it, at each use until a later one succeeds.
 */
internal object Native {
    val versions: FerruleVersions by lazy { bound(FerruleVersions::class.java, ::FerruleVersions) }
    val lib: FerruleLibrary by lazy { bound(FerruleLibrary::class.java, ::FerruleLibrary) }

    private fun <T> bound(type: Class<T>, make: () -> T): T {
        com.sun.jna.Native.register(type, "ferrule")
        return make()
    }

    /**
     * The address JNA gives [callback] as the argument of a direct-mapped
     * function, whose calls skip the reflective proxy of other callbacks (a
     * third of a microsecond a tool call), for a spec's callback field, which
     * would get the proxied address. JNA hands it out only through a private
     * method (`CallbackReference.getFunctionPointer(callback, direct)`, JNA
     * 5.19): asked by reflection, with the proxied address when that is
     * refused. JNA holds [callback] weakly: it must stay reachable as long as
     * C may call it (the package's callbacks are singletons).
     */
    fun directAddress(callback: Callback): Pointer = directPointer?.let {
        try {
            it.invoke(null, callback, true) as Pointer
        } catch (refused: ReflectiveOperationException) {
            null
        }
    } ?: CallbackReference.getFunctionPointer(callback)

    private val directPointer: Method? = try {
        CallbackReference::class.java.getDeclaredMethod("getFunctionPointer", Callback::class.java, java.lang.Boolean.TYPE)
            .apply { isAccessible = true }
    } catch (refused: Exception) { // not there, or not to be made accessible (a module that keeps it closed)
        null
    }

    /**
     * Keeps ferrule's callback threads attached to the JVM between callbacks (as
     * daemon threads): JNA otherwise attaches and detaches a native thread for
     * every call, which cost most of a tool call's time.
     */
    fun <T : Callback> attached(callback: T): T = callback.also {
        com.sun.jna.Native.setCallbackThreadInitializer(it, CallbackThreadInitializer(true, false, "ferrule-callback"))
    }
}

/**
 * The string as UTF-8 for the C ABI's `(ptr, len)` arguments. A lone surrogate
 * has no UTF-8 form: `INVALID_UTF8`, where the JDK's encoder would write `?`.
 */
internal fun String.utf8(): ByteArray {
    var index = indexOfFirst(Char::isSurrogate)
    while (index in 0 until length) {
        val paired = this[index].isHighSurrogate() && index + 1 < length && this[index + 1].isLowSurrogate()
        if (!paired) throw FerruleException(ErrorCode.INVALID_UTF8, "a lone surrogate at index $index has no UTF-8 form")
        index += 2
        while (index < length && !this[index].isSurrogate()) index++
    }
    return toByteArray(Charsets.UTF_8)
}

/** The string as UTF-8, or [instead]'s text when it has none (a lone surrogate). */
internal inline fun String.utf8Or(instead: (invalid: FerruleException) -> String): ByteArray = try {
    utf8()
} catch (invalid: FerruleException) {
    instead(invalid).utf8()
}

internal val ByteArray.length: NativeLong get() = NativeLong(size.toLong())

/**
 * The bytes in native memory for a spec's string field (null when empty); the
 * caller keeps it alive while ferrule reads it.
 */
internal fun ByteArray.memory(): Memory? = if (isEmpty()) null else Memory(size.toLong()).also { it.write(0, this, 0, size) }
