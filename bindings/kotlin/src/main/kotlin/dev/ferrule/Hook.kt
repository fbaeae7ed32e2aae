package dev.ferrule

import com.sun.jna.Pointer
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
        Handles.handOver(this) { key ->
            Native.lib.ferrule_agent_builder_add_hook(builder, stages, stages.length, HookDispatch.consult, key,
                Handles.release)
        }?.let { throw it }
    }
}

/** ferrule's hook callback: a singleton, so never collected while C may call it. */
internal object HookDispatch {
    /** On ferrule's runtime (the hook is `nonblocking`): launches and returns. */
    val consult = Native.attached(HookFn { userData, handle ->
        val hook = Handles.get<Hook>(userData) ?: return@HookFn
        if (handle == null) return@HookFn
        val payload = Native.lib.ferrule_hook_payload(handle).text()
        Dispatch.launchCancellable({ onCancel, key, free -> Native.lib.ferrule_hook_on_cancel(handle, onCancel, key, free) }) {
            val decision = runCatching { hook.decide(payload) }.getOrElse { error ->
                val reason = error.message?.takeIf { it.isNotBlank() } ?: "the hook threw ${error::class.simpleName}"
                JsonObject(mapOf("abort" to JsonPrimitive(reason))).toString()
            }
            val bytes = decision.utf8()
            FerruleException.take(Native.lib.ferrule_hook_respond(handle, bytes, bytes.length))
        }
    })
}
