package dev.ferrule

import com.sun.jna.Pointer

/**
 * A Kotlin function the model can call, with a JSON schema of its own
 * (Draft 2020-12; null allows any object) and [options]. Its body runs in a
 * coroutine for each call, on the agent's coroutine context; what it returns is
 * the result JSON (a JSON string is a text result), and an exception it throws
 * becomes an error result the model sees. The coroutine is cancelled when the
 * call times out or its run is cancelled. One tool may serve several agents.
 *
 * An [inline] tool's coroutine starts on ferrule's runtime thread, inside the
 * callback, and runs there until it first suspends: a body that returns
 * without suspending (a lookup in memory, a computation of microseconds)
 * completes its call with no thread hand-off, which is most of what such a call
 * costs. Such a body must never block: while it runs, its run and every run
 * sharing that thread wait. After a suspension it goes on on the agent's
 * context.
 */
class Tool(
    val name: String,
    val description: String,
    val schema: String? = null,
    val options: ToolOptions = ToolOptions(),
    val inline: Boolean,
    internal val body: suspend (ToolCall) -> String,
) {
    /** A tool whose body runs on the agent's coroutine context. */
    constructor(
        name: String,
        description: String,
        schema: String? = null,
        options: ToolOptions = ToolOptions(),
        body: suspend (ToolCall) -> String,
    ) : this(name, description, schema, options, false, body)

    /** Adds the tool to a builder, registered `nonblocking`; its calls run on [host]. */
    internal fun register(builder: Pointer, host: CoroutineHost) {
        val strings = listOf(name, description, schema ?: "", options.json).map { it.utf8() }
        val memory = strings.map { it.memory() }
        val spec = ToolSpec().apply {
            struct_size = size()
            this.name = memory[0]; name_len = strings[0].length
            this.description = memory[1]; description_len = strings[1].length
            input_schema = memory[2]; input_schema_len = strings[2].length
            this.options = memory[3]; options_len = strings[3].length
            execute = Native.directAddress(CoroutineHost.request)
            free_user_data = Handles.release
        }
        val execute: (Pointer) -> Unit = { handle ->
            // A call that cannot even be read is failed, never left
            // unanswered.
            val call = try {
                ToolCall(handle)
            } catch (unread: Throwable) {
                val message = "the tool call could not be read: ${unread.reason("the binding")}"
                    .utf8Or { "the tool call could not be read" }
                FerruleException.take(Native.lib.ferrule_tool_call_fail(handle, message, message.length))
                null
            }
            call?.let { execute(it, host) }
        }
        Handles.handOver(execute) { key ->
            spec.user_data = key
            Native.lib.ferrule_agent_builder_add_tool(builder, spec)
        }?.let { throw it }
    }

    private fun execute(call: ToolCall, host: CoroutineHost) = host.answer({ onCancel, key, free ->
        Native.lib.ferrule_tool_call_on_cancel(call.handle, onCancel, key, free)
    }, fallback = { call.fail("the tool failed") }, inline = inline) {
        runCatching { body(call) }.fold({ call.complete(it) }, { call.fail(it.reason("the tool")) })
    }
}

/** One call of a tool, handed to its body. */
class ToolCall internal constructor(internal val handle: Pointer) {
    /** The call id the model gave. */
    val id: String
    val name: String
    /** The arguments as the model wrote them: a JSON object that satisfied the schema. */
    val arguments: String

    init {
        val strings = StrSlots.get()
        Native.lib.ferrule_tool_call_strings(handle, strings.slots[0], strings.slots[1], strings.slots[2])
        id = strings.text(0)
        name = strings.text(1)
        arguments = strings.text(2)
    }

    /**
     * The W3C `traceparent` of the call's `execute_tool` span, for the tool's
     * own spans to go under it; empty when the run records no spans, and once
     * the call was answered.
     */
    val traceparent: String get() = lent.copy(Native.lib::ferrule_tool_call_traceparent)

    private val lent = LentStrings(handle)

    /**
     * Which time the call runs: 1, unless the host runs a call a run returned
     * again and says so (run input `invoke` with `attempt`), as after a crash.
     * A tool that must not do its work twice keys it by [id] and looks for an
     * earlier attempt's. 0 once the call was answered.
     */
    val attempt: Int get() = Native.lib.ferrule_tool_call_attempt(handle)

    /** Whether the call timed out or its run was cancelled (true as well once the call was answered). */
    val isCancelled: Boolean get() = Native.lib.ferrule_tool_call_is_cancelled(handle) != 0.toByte()

    /** Sends a provisional result as a `tool_execution_update` event; it never reaches the model. */
    fun update(partial: ToolResult) = update(partial.json)

    /** Sends a provisional result given as result JSON (a JSON string, or a result object). */
    fun update(resultJson: String) {
        val bytes = resultJson.utf8()
        FerruleException.check(lent.mayAnswer { Native.lib.ferrule_tool_call_update(handle, bytes, bytes.length) })
    }

    /** Completes the call; a result with no UTF-8 form fails it instead. */
    internal fun complete(resultJson: String) {
        val bytes = try {
            resultJson.utf8()
        } catch (invalid: FerruleException) {
            return fail("the tool's result is not valid Unicode: ${invalid.detail}")
        }
        lent.answering()
        FerruleException.take(Native.lib.ferrule_tool_call_complete(handle, bytes, bytes.length))
    }

    internal fun fail(message: String) {
        val bytes = message.utf8Or { "the tool failed with a message that is not valid Unicode (${it.detail})" }
        lent.answering()
        FerruleException.take(Native.lib.ferrule_tool_call_fail(handle, bytes, bytes.length))
    }
}
