package dev.ferrule

import com.sun.jna.Pointer
import kotlinx.serialization.KSerializer
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/**
 * A function ferrule consults at one stage of every run of an agent: "run_start",
 * "turn_start", "tool_call", "tool_result" or "final_answer" (docs/hooks.md). It
 * runs in a coroutine, gets the payload JSON and gives the decision JSON (`{}` to
 * go on). An exception it throws aborts the run (`HOOK_ABORTED`, with its
 * message). The coroutine is cancelled when the run stops waiting for it.
 */
class Hook(val stage: String, internal val decide: suspend (payloadJson: String) -> String) {
    /** Adds the hook to a builder, registered `nonblocking`; its consultations run on [host]. */
    internal fun register(builder: Pointer, host: CoroutineHost) {
        val stages = """{"stages": [${JsonPrimitive(stage)}], "nonblocking": true}""".utf8()
        val consult: (Pointer) -> Unit = { handle -> consult(handle, host) }
        Handles.handOver(consult) { key ->
            Native.lib.ferrule_agent_builder_add_hook(builder, stages, stages.length, CoroutineHost.request, key,
                Handles.release)
        }?.let { throw it }
    }

    private fun consult(handle: Pointer, host: CoroutineHost) {
        val payload = Native.lib.ferrule_hook_payload(handle).text()
        host.answer({ onCancel, key, free -> Native.lib.ferrule_hook_on_cancel(handle, onCancel, key, free) },
            fallback = { respond(handle, abort("the hook failed")) }) {
            respond(handle, runCatching { decide(payload) }.getOrElse { abort(it.reason("the hook")) })
        }
    }

    /** Responds with [decision]; one with no UTF-8 form aborts the run instead. */
    private fun respond(handle: Pointer, decision: String) {
        val bytes = decision.utf8Or { abort("the hook's decision is not valid Unicode (${it.detail})") }
        FerruleException.take(Native.lib.ferrule_hook_respond(handle, bytes, bytes.length))
    }

    private fun abort(reason: String) = JsonObject(mapOf("abort" to JsonPrimitive(reason))).toString()
}

/**
 * The hook of [stage] whose [body] takes its payload and gives its decision
 * (each stage's is generated, in HookStages_gen.kt).
 */
internal fun <P> typedHook(stage: String, payload: KSerializer<P>, body: suspend (P) -> HookDecision) =
    Hook(stage) { json -> body(FerruleJson.decodeFromString(payload, json)).json }
