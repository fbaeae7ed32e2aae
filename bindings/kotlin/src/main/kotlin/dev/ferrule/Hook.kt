package dev.ferrule

import com.sun.jna.Pointer
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.DelicateCoroutinesApi
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/**
 * A function ferrule consults at one stage of every run of an agent: "run_start",
 * "turn_start", "tool_call", "tool_result" or "final_answer" (README "Hooks"). It
 * runs in a coroutine, gets the payload JSON and gives the decision JSON (`{}` to
 * go on). An exception it throws aborts the run (`HOOK_ABORTED`, with its
 * message). The coroutine is cancelled when the run stops waiting for it.
 */
class Hook(val stage: String, internal val decide: suspend (payloadJson: String) -> String) {
    /** Adds the hook to a builder, registered `nonblocking`. */
    internal fun register(builder: Pointer) {
        val stages = """{"stages": [${JsonPrimitive(stage)}], "nonblocking": true}""".utf8()
        val key = Handles.put(this)
        val error = FerruleException.take(
            Native.lib.ferrule_agent_builder_add_hook(builder, stages, stages.length, HookDispatch.consult, key,
                Handles.release))
        if (error != null) {
            Handles.remove(key)
            throw error
        }
    }
}

/** ferrule's hook callback: a singleton, so never collected while C may call it. */
internal object HookDispatch {
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    /** On ferrule's runtime (the hook is `nonblocking`): launches and returns. */
    @OptIn(DelicateCoroutinesApi::class)
    val consult = Native.attached(HookFn { userData, handle ->
        val hook = Handles.get<Hook>(userData) ?: return@HookFn
        if (handle == null) return@HookFn
        val payload = Native.lib.ferrule_hook_payload(handle).text()
        // ATOMIC: a coroutine cancelled before it starts still runs, so the hook
        // is responded to exactly once whatever happens.
        val job = scope.launch(start = CoroutineStart.ATOMIC) {
            val decision = runCatching { hook.decide(payload) }.getOrElse { error ->
                val reason = error.message?.takeIf { it.isNotBlank() } ?: "the hook threw ${error::class.simpleName}"
                JsonObject(mapOf("abort" to JsonPrimitive(reason))).toString()
            }
            val bytes = decision.utf8()
            FerruleException.take(Native.lib.ferrule_hook_respond(handle, bytes, bytes.length))
        }
        val key = Handles.put(job)
        if (FerruleException.take(
                Native.lib.ferrule_hook_on_cancel(handle, Dispatch.cancelJob, key, Handles.release)) != null) {
            Handles.remove(key) // already responded to
        }
    })
}
