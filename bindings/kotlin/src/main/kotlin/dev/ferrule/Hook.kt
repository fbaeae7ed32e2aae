package dev.ferrule

import com.sun.jna.Pointer
import kotlinx.serialization.KSerializer
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlin.coroutines.AbstractCoroutineContextElement
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.coroutineContext

/**
 * How a hook is consulted. [inline] starts its coroutine on ferrule's runtime
 * thread, inside the callback (as an inline [Tool]'s): a hook that does not
 * suspend then decides with no thread hand-off; it must never block, and it
 * resumes on the agent's context after its first suspension. [withoutHistory]
 * leaves the history out of its run_start and turn_start payloads (`messages`
 * is empty, `messageCount` says how many there are), so a consultation costs
 * the same at any length of the run.
 */
data class HookOptions(val inline: Boolean = false, val withoutHistory: Boolean = false)

/**
 * A function ferrule consults at one stage of every run of an agent: "run_start",
 * "turn_start", "tool_call", "tool_result" or "final_answer" (docs/hooks.md). It
 * runs in a coroutine, gets the payload JSON and gives the decision JSON (`{}` to
 * go on). An exception it throws aborts the run (`HOOK_ABORTED`, with its
 * message). The coroutine is cancelled when the run stops waiting for it.
 */
class Hook internal constructor(
    val stage: String,
    val options: HookOptions,
    /** The hook is given the new messages of each payload and keeps the rest for the run (KeptHistory.kt). */
    internal val keepsHistory: Boolean,
    internal val decide: suspend (payloadJson: String) -> String,
) {
    /** A hook consulted with [options]. */
    constructor(stage: String, options: HookOptions, decide: suspend (payloadJson: String) -> String) :
        this(stage, options, false, decide)

    /** A hook consulted with the default [HookOptions]. */
    constructor(stage: String, decide: suspend (payloadJson: String) -> String) : this(stage, HookOptions(), decide)

    /** Adds the hook to a builder, registered `nonblocking`; its consultations run on [host]. */
    internal fun register(builder: Pointer, host: CoroutineHost) {
        val history = when {
            options.withoutHistory -> """, "history": "none""""
            keepsHistory -> """, "history": "new""""
            else -> ""
        }
        val stages = """{"stages": [${JsonPrimitive(stage)}], "nonblocking": true$history}""".utf8()
        val consult: (Pointer) -> Unit = { handle -> consult(handle, host) }
        Handles.handOver(consult) { key ->
            Native.lib.ferrule_agent_builder_add_hook(builder, stages, stages.length, CoroutineHost.request, key,
                Handles.release)
        }?.let { throw it }
    }

    private fun consult(handle: Pointer, host: CoroutineHost) {
        val payload = StrSlots.get().let { Native.lib.ferrule_hook_strings(handle, null, it.slots[0]); it.text(0) }
        val consultation = HookConsultation(handle)
        host.answer({ onCancel, key, free -> Native.lib.ferrule_hook_on_cancel(handle, onCancel, key, free) },
            fallback = { respond(consultation, abort("the hook failed")) }, inline = options.inline,
            context = consultation) {
            respond(consultation, runCatching { decide(payload) }.getOrElse { abort(it.reason("the hook")) })
        }
    }

    /** Responds with [decision]; one with no UTF-8 form aborts the run instead. */
    private fun respond(consultation: HookConsultation, decision: String) {
        consultation.lent.answering()
        val handle = consultation.handle
        if (decision == PROCEED_JSON) {
            FerruleException.take(Native.lib.ferrule_hook_respond(handle, proceed, proceedLength))
            return
        }
        val bytes = decision.utf8Or { abort("the hook's decision is not valid Unicode (${it.detail})") }
        FerruleException.take(Native.lib.ferrule_hook_respond(handle, bytes, bytes.length))
    }

    private fun abort(reason: String) = JsonObject(mapOf("abort" to JsonPrimitive(reason))).toString()

    private companion object {
        const val PROCEED_JSON = "{}"

        /**
         * The decision most consultations give, in native memory for the life
         * of the process: passing an array costs JNA a copy in and out per call.
         */
        private val proceedBytes = PROCEED_JSON.utf8()
        val proceed = proceedBytes.memory()!!
        val proceedLength = proceedBytes.length
    }
}

/**
 * The consultation a hook's coroutine decides, in its coroutine context:
 * `coroutineContext[HookConsultation]?.traceparent` is the W3C `traceparent` of
 * the span the hook is consulted in (the run's `invoke_agent` span), for the
 * hook's own spans to go under it (see `FerruleOpenTelemetry.hookContext`);
 * empty when the run records no spans, and once the hook decided.
 */
class HookConsultation internal constructor(internal val handle: Pointer) :
    AbstractCoroutineContextElement(HookConsultation) {
    internal val lent = LentStrings(handle)

    val traceparent: String get() = lent.copy(Native.lib::ferrule_hook_traceparent)

    /** The key of the consultation in a coroutine context. */
    companion object Key : CoroutineContext.Key<HookConsultation>
}

/**
 * The hook of [stage] whose [body] takes its payload and gives its decision
 * (each stage's is generated, in HookStages_gen.kt).
 */
internal fun <P> typedHook(stage: String, payload: KSerializer<P>, options: HookOptions, body: suspend (P) -> HookDecision) =
    Hook(stage, options, keepsHistory = payload == TurnStartPayload.serializer()) { json ->
        val decoded = FerruleJson.decodeFromString(payload, json)
        @Suppress("UNCHECKED_CAST")
        val complete = if (decoded is TurnStartPayload) KeptHistory.complete(decoded, json, coroutineContext) as P else decoded
        body(complete).json
    }
