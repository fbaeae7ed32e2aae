package dev.ferrule

import com.sun.jna.Memory
import com.sun.jna.Pointer
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.DelicateCoroutinesApi
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/**
 * A Kotlin function the model can call, with a JSON schema of its own
 * (Draft 2020-12; null allows any object) and options JSON (README "Tools").
 * Its body runs in a coroutine for each call; what it returns is the result
 * JSON (a JSON string is a text result), and an exception it throws becomes an
 * error result the model sees. The coroutine is cancelled when the call times
 * out or its run is cancelled.
 */
class Tool(
    val name: String,
    val description: String,
    val schema: String? = null,
    val options: String = "{}",
    internal val body: suspend (ToolCall) -> String,
) {
    /** Adds the tool to a builder, registered `nonblocking`. */
    internal fun register(builder: Pointer) {
        val options = optionsWithNonblocking(options)
        val strings = listOf(name, description, schema ?: "", options).map { it.utf8() }
        val memory = strings.map { bytes -> if (bytes.isEmpty()) null else Memory(bytes.size.toLong()).apply { write(0, bytes, 0, bytes.size) } }
        val spec = ToolSpec().apply {
            struct_size = size()
            this.name = memory[0]; name_len = strings[0].length
            this.description = memory[1]; description_len = strings[1].length
            input_schema = memory[2]; input_schema_len = strings[2].length
            this.options = memory[3]; options_len = strings[3].length
            execute = Dispatch.execute
            free_user_data = Handles.release
        }
        Handles.handOver(this) { key ->
            spec.user_data = key
            Native.lib.ferrule_agent_builder_add_tool(builder, spec)
        }?.let { throw it }
    }

    internal companion object {
        /** The options object with `"nonblocking": true`: every Kotlin tool hands its call to a coroutine. */
        fun optionsWithNonblocking(options: String): String {
            val fields = FerruleJson.parseToJsonElement(options.ifBlank { "{}" }) as? JsonObject
                ?: throw FerruleException(ErrorCode.INVALID_ARG, "tool options must be a JSON object")
            return JsonObject(fields + ("nonblocking" to JsonPrimitive(true))).toString()
        }
    }
}

/** One call of a tool, handed to its body. */
class ToolCall internal constructor(private val handle: Pointer) {
    /** The call id the model gave. */
    val id: String = Native.lib.ferrule_tool_call_id(handle).text()
    val name: String = Native.lib.ferrule_tool_call_name(handle).text()
    /** The arguments as the model wrote them: a JSON object that satisfied the schema. */
    val arguments: String = Native.lib.ferrule_tool_call_arguments(handle).text()

    /** Whether the call timed out or its run was cancelled. */
    val isCancelled: Boolean get() = Native.lib.ferrule_tool_call_is_cancelled(handle)

    /** Sends a provisional result as a `tool_execution_update` event; it never reaches the model. */
    fun update(partial: ToolResult) = update(partial.json)

    /** Sends a provisional result given as result JSON (a JSON string, or a result object). */
    fun update(resultJson: String) {
        val bytes = resultJson.utf8()
        FerruleException.check(Native.lib.ferrule_tool_call_update(handle, bytes, bytes.length))
    }

    internal fun complete(resultJson: String) {
        val bytes = resultJson.utf8()
        FerruleException.take(Native.lib.ferrule_tool_call_complete(handle, bytes, bytes.length))
    }

    internal fun fail(message: String) {
        val bytes = message.utf8()
        FerruleException.take(Native.lib.ferrule_tool_call_fail(handle, bytes, bytes.length))
    }
}

/** ferrule's callbacks into Kotlin: singletons, so never collected while C may call them. */
internal object Dispatch {
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    /** A tool's callback, on ferrule's runtime (the tool is `nonblocking`): launches and returns. */
    val execute = Native.attached(ToolFn { userData, handle ->
        val tool = Handles.get<Tool>(userData) ?: return@ToolFn
        if (handle == null) return@ToolFn
        val call = ToolCall(handle)
        launchCancellable({ onCancel, key, free -> Native.lib.ferrule_tool_call_on_cancel(handle, onCancel, key, free) }) {
            val outcome = runCatching { tool.body(call) }
            outcome.fold({ call.complete(it) }, { call.fail(it.message ?: it.toString()) })
        }
    })

    /**
     * Launches [work], which answers a request (a tool call, a hook) exactly
     * once, and has [registerCanceller] (`ferrule_tool_call_on_cancel` or
     * `ferrule_hook_on_cancel`) cancel it when ferrule stops waiting.
     */
    @OptIn(DelicateCoroutinesApi::class)
    fun launchCancellable(registerCanceller: (CancelFn, Pointer, FreeFn) -> Pointer?, work: suspend () -> Unit) {
        // ATOMIC: a coroutine cancelled before it starts still runs, so the
        // request is answered whatever happens.
        val job = scope.launch(start = CoroutineStart.ATOMIC) { work() }
        // An error means the request was answered already: nothing is left to cancel.
        Handles.handOver(job) { key -> registerCanceller(cancelJob, key, Handles.release) }
    }

    /** Cancels the coroutine of a call ferrule stopped waiting for. */
    val cancelJob = Native.attached(CancelFn { userData -> Handles.get<Job>(userData)?.cancel() })
}

