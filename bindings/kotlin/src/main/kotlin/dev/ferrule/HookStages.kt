package dev.ferrule

import kotlinx.serialization.KSerializer

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
