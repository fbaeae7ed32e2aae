package dev.ferrule

import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.intOrNull
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.longOrNull

/**
 * A host model replaying a scripted model's script, for the conformance
 * scenarios' host-model mode: the request's turn picks the entry, each entry
 * standing for `repeat` requests, as the scripted model counts.
 */
internal class ScriptReplay private constructor(private val script: List<JsonObject>) : HostModel {
    override fun generate(request: ModelRequest): Flow<ModelDelta> = flow {
        val entry = entry(request.turn)
            ?: throw ModelException(ErrorCode.PROVIDER_INVALID_REQUEST, "the script has no turn ${request.turn}")
        entry["delay_ms"]?.jsonPrimitive?.longOrNull?.let { delay(it) }
        entry["error"]?.jsonObject?.let { error ->
            val status = error["status"]?.jsonPrimitive?.intOrNull ?: 0
            throw ModelException(code(status), "scripted provider error (HTTP $status): ${error["message"].text ?: ""}")
        }
        entry["thinking"].text?.let { emit(ModelDelta.Thinking(it)) }
        entry["text"].text?.takeIf { it.isNotEmpty() }?.let { emit(ModelDelta.Text(it)) }
        entry["tool_calls"]?.jsonArray?.forEachIndexed { index, call ->
            val call = call.jsonObject
            // A string is the argument text as it is; another value, its compact JSON.
            val arguments = call["arguments"]?.let { it.text ?: it.toString() } ?: "{}"
            emit(ModelDelta.ToolCall(index, call["id"].text ?: "", call["name"].text ?: "", arguments))
        }
        emit(ModelDelta.Tokens(FerruleJson.decodeFromJsonElement(Usage.serializer(), entry["usage"] ?: JsonObject(emptyMap()))))
        entry["stop_reason"].text?.let { emit(ModelDelta.Stop(it)) }
    }

    /** The entry answering the run's request [turn] (from 1), if any. */
    private fun entry(turn: Int): JsonObject? {
        var left = turn
        for (entry in script) {
            val times = entry["repeat"]?.jsonPrimitive?.intOrNull ?: 1
            if (left <= times) return entry
            left -= times
        }
        return null
    }

    companion object {
        /** The fields of an entry a replay can play. */
        private val playable = setOf("text", "thinking", "tool_calls", "stop_reason", "usage", "delay_ms", "repeat", "error")

        /**
         * [config] with its scripted model replaced by the host model (`"provider": "host"`), and the replay of its
         * script; null when it names no scripted model.
         */
        fun replacing(config: AgentConfig): Pair<AgentConfig, ScriptReplay?> {
            if (config.model.provider != "scripted") return config to null
            val script = (config.model.script ?: emptyList()).map { it.jsonObject }
            script.forEach { entry ->
                require(playable.containsAll(entry.keys)) { "a host model cannot replay the script entry $entry" }
            }
            val model = config.model.copy(provider = "host", name = "script", script = null)
            return config.copy(model = model) to ScriptReplay(script)
        }

        /** The provider error class a scripted HTTP status stands for. */
        private fun code(status: Int): ErrorCode = when (status) {
            401, 403 -> ErrorCode.PROVIDER_AUTH
            404 -> ErrorCode.PROVIDER_NOT_FOUND
            429 -> ErrorCode.PROVIDER_RATE_LIMITED
            503, 529 -> ErrorCode.PROVIDER_OVERLOADED
            in 500..599 -> ErrorCode.PROVIDER_SERVER
            else -> ErrorCode.PROVIDER_INVALID_REQUEST
        }
    }
}
