package dev.ferrule

import kotlinx.serialization.KSerializer
import kotlinx.serialization.builtins.ListSerializer
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/** A hook's decision: `{}` ([Proceed]) or one of its stage's (docs/hooks.md). */
sealed class HookDecision {
    internal abstract val json: String

    /** Go on. */
    data object Proceed : HookDecision() {
        override val json get() = "{}"
    }

    /** run_start, turn_start: replace the input or the history. */
    data class ReplaceMessages(val messages: List<Message>) : HookDecision() {
        override val json get() = decision("messages", encode(ListSerializer(Message.serializer()), messages))
    }

    /** turn_start: this turn's tool set. */
    data class Tools(val names: List<String>) : HookDecision() {
        override val json get() = decision("tools", JsonArray(names.map(::JsonPrimitive)))
    }

    /** turn_start: messages appended before the request, marked as injections. */
    data class Inject(val messages: List<Message>) : HookDecision() {
        override val json get() = decision("inject", encode(ListSerializer(Message.serializer()), messages))
    }

    /** tool_call: the tool does not run; the model sees an error result with [text]. */
    data class Deny(val text: String) : HookDecision() {
        override val json get() = decision("deny", JsonPrimitive(text))
    }

    /** tool_call: replaced arguments, validated again. */
    data class ReplaceArguments(val arguments: JsonObject) : HookDecision() {
        override val json get() = decision("arguments", arguments)
    }

    /** tool_call: approves a call that needs approval. */
    data object Approve : HookDecision() {
        override val json get() = decision("approve", JsonPrimitive(true))
    }

    /** tool_call: the call needs approval; the run ends interrupted. */
    data object Interrupt : HookDecision() {
        override val json get() = decision("interrupt", JsonPrimitive(true))
    }

    /** tool_result: replaces the result (checked as a tool's). */
    data class ReplaceResult(val result: ToolResult) : HookDecision() {
        override val json get() = """{"result": ${result.json}}"""
    }

    /** final_answer: the feedback goes to the model and the loop goes on. */
    data class Retry(val feedback: String) : HookDecision() {
        override val json get() = decision("retry", JsonPrimitive(feedback))
    }

    private companion object {
        fun decision(key: String, value: JsonElement) = JsonObject(mapOf(key to value)).toString()
        fun <T> encode(serializer: KSerializer<T>, value: T) = FerruleJson.encodeToJsonElement(serializer, value)
    }
}

/** Consulted once, before anything else. */
fun onRunStart(body: suspend (RunStartPayload) -> HookDecision) = typedHook("run_start", RunStartPayload.serializer(), body)

/** Consulted before each model request. */
fun onTurnStart(body: suspend (TurnStartPayload) -> HookDecision) = typedHook("turn_start", TurnStartPayload.serializer(), body)

/** Consulted for every valid call of a batch, before any runs. */
fun onToolCall(body: suspend (ToolCallPayload) -> HookDecision) = typedHook("tool_call", ToolCallPayload.serializer(), body)

/** Consulted for the result of each call that ran. */
fun onToolResult(body: suspend (ToolResultPayload) -> HookDecision) =
    typedHook("tool_result", ToolResultPayload.serializer(), body)

/** Consulted for an answer that would end the run. */
fun onFinalAnswer(body: suspend (FinalAnswerPayload) -> HookDecision) =
    typedHook("final_answer", FinalAnswerPayload.serializer(), body)

private fun <P> typedHook(stage: String, payload: KSerializer<P>, body: suspend (P) -> HookDecision) =
    Hook(stage) { json -> body(FerruleJson.decodeFromString(payload, json)).json }
