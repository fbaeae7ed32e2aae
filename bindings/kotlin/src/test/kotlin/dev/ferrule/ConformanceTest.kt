package dev.ferrule

import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.isActive
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.builtins.ListSerializer
import kotlinx.serialization.builtins.MapSerializer
import kotlinx.serialization.builtins.serializer
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.intOrNull
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.longOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference

/**
 * The shared scenarios of tests/conformance, with every tool and hook written in
 * Kotlin from the scenario's declarative behaviour (tests/conformance/README.md).
 */
class ConformanceTest {
    @Test
    fun everyScenario() = runBlocking {
        val directory = File(System.getProperty("ferrule.conformance") ?: "../../tests/conformance")
        val files = directory.listFiles { file -> file.name.endsWith(".json") }!!.sortedBy { it.name }
        assertTrue(files.size > 30, "scenarios in $directory")
        val failures = files.map { file ->
            async { Scenario(FerruleJson.parseToJsonElement(file.readText()).jsonObject).run().map { "${file.name}: $it" } }
        }.awaitAll().flatten()
        assertEquals(emptyList<String>(), failures)
    }
}

private val JsonElement?.text: String? get() = (this as? JsonPrimitive)?.takeIf { it.isString }?.content
private val JsonElement?.isTrue: Boolean get() = (this as? JsonPrimitive)?.booleanOrNull == true

/** One scenario, and what its tools and hooks share with the runner. */
private class Scenario(val spec: JsonObject) {
    val failures = java.util.Collections.synchronizedList(mutableListOf<String>())
    val cancelHandlers = AtomicInteger()
    val hookCalls = java.util.Collections.synchronizedList(mutableListOf<JsonElement>())
    val current = AtomicReference<Run?>()
    val config = FerruleJson.decodeFromJsonElement(AgentConfig.serializer(), spec["config"]!!)

    init {
        // AgentConfig mirrors the configuration JSON: nothing is lost on the way.
        val again = FerruleJson.encodeToJsonElement(AgentConfig.serializer(), config)
        if (again != spec["config"]) failures += "AgentConfig loses fields: $again"
    }

    suspend fun run(): List<String> {
        try {
            steps()
        } catch (error: Throwable) {
            failures += error.toString()
        }
        return failures.toList()
    }

    private suspend fun steps() {
        val agent = build(spec["tools"])
        var result = step(agent, input(spec["input"]!!.jsonObject), spec["expect"]!!.jsonObject)
        for ((index, resume) in (spec["resumes"]?.jsonArray ?: JsonArray(emptyList())).withIndex()) {
            val resume = resume.jsonObject
            val state = result.state?.jsonObject ?: return run { failures += "resume $index: no state" }
            val patched = JsonObject(state + (resume["state_patch"]?.jsonObject ?: emptyMap()))
            val decisions = FerruleJson.decodeFromJsonElement(
                MapSerializer(String.serializer(), Decision.serializer()), resume["decisions"] ?: JsonObject(emptyMap()))
            val on = if (resume["new_agent"].isTrue) build(resume["tools"] ?: spec["tools"]) else agent
            val input = RunInput.resume(patched.toString(), decisions)
            val refusal = resume["start_error"]?.jsonObject
            if (refusal != null) {
                try {
                    on.start(input).close()
                    failures += "resume $index: started, expected $refusal"
                } catch (error: FerruleException) {
                    if (error.code.name != refusal["code"].text || !error.detail.contains(refusal["contains"].text ?: "")) {
                        failures += "resume $index: start gave $error, expected $refusal"
                    }
                }
            } else {
                result = step(on, input, resume["expect"]!!.jsonObject)
            }
            if (on !== agent) on.close()
        }
        agent.close()
    }

    private fun build(tools: JsonElement?): Agent = Agent(config, (tools?.jsonArray ?: JsonArray(emptyList())).map { tool ->
        val tool = tool.jsonObject
        Tool(tool["name"].text!!, tool["description"].text ?: "", tool["input_schema"]?.toString(),
            options(tool["options"]?.jsonObject), behaviour(tool["behaviour"]?.jsonObject ?: JsonObject(emptyMap())))
    }, hooks())

    /** The scenario's tool options as [ToolOptions]; every Kotlin tool is nonblocking, the rest must survive. */
    private fun options(options: JsonObject?): ToolOptions {
        val given = JsonObject((options ?: JsonObject(emptyMap())) - "nonblocking")
        val decoded = FerruleJson.decodeFromJsonElement(ToolOptions.serializer(), given)
        if (FerruleJson.encodeToJsonElement(ToolOptions.serializer(), decoded) != given) failures += "ToolOptions loses fields: $given"
        return decoded
    }

    /** One raw hook per stage named, answering with the decisions in order (`{}` once they run out). */
    private fun hooks(): List<Hook> = (spec["hooks"]?.jsonArray ?: JsonArray(emptyList())).flatMap { hook ->
        val hook = hook.jsonObject
        val decisions = hook["decisions"]?.jsonArray ?: JsonArray(emptyList())
        val next = AtomicInteger()
        hook["stages"]!!.jsonArray.map { stage ->
            Hook(stage.text!!) { payload ->
                hookCalls += JsonObject(mapOf("stage" to stage, "payload" to FerruleJson.parseToJsonElement(payload)))
                if (hook["never_respond"].isTrue) {
                    try {
                        awaitCancellation()
                    } finally {
                        cancelHandlers.incrementAndGet()
                    }
                }
                decisions.getOrNull(next.getAndIncrement())?.toString() ?: "{}"
            }
        }
    }

    /** A behaviour as a tool body. */
    private fun behaviour(behaviour: JsonObject): suspend (ToolCall) -> String = { call ->
        behaviour["inject"]?.let { message ->
            while (current.get() == null) delay(1)
            current.get()!!.inject(FerruleJson.decodeFromJsonElement(Message.serializer(), message))
        }
        when {
            behaviour["complete_on_cancel"].isTrue -> try {
                awaitCancellation()
            } finally {
                cancelHandlers.incrementAndGet()
            }
            behaviour["never_complete"].isTrue -> {
                while (!call.isCancelled) Thread.sleep(1)
                "\"completed after cancellation\""
            }
            else -> {
                behaviour["sleep_ms"]?.jsonPrimitive?.longOrNull?.let { delay(it) }
                behaviour["updates"]?.jsonArray?.forEach { call.update(it.toString()) }
                behaviour["fail"].text?.let { throw IllegalStateException(it) }
                behaviour["result_json"].text
                    ?: if (behaviour["echo"].isTrue) JsonPrimitive(call.arguments).toString()
                    else (behaviour["result"] ?: JsonNull).toString()
            }
        }
    }

    private fun input(input: JsonObject): RunInput {
        val tools = input["tools"]?.jsonArray?.map { it.text!! }
        val messages = FerruleJson.decodeFromJsonElement(ListSerializer(Message.serializer()),
            input["messages"] ?: JsonArray(emptyList()))
        val base = when {
            input["prompt"] != null -> RunInput.prompt(input["prompt"].text!!)
            input["execute"] != null -> RunInput.execute(FerruleJson.decodeFromJsonElement(Message.serializer(),
                JsonObject(input["execute"]!!.jsonObject + ("role" to JsonPrimitive("assistant")))), messages)
            else -> RunInput.messages(messages)
        }
        return base.limitedTo(tools)
    }

    private suspend fun step(agent: Agent, input: RunInput, expect: JsonObject): RunResult {
        cancelHandlers.set(0)
        hookCalls.clear()
        val run = agent.start(input)
        current.set(run)
        val events = mutableListOf<Event>()
        run.events.collect { events += it }
        val result = run.await()
        current.set(null)
        run.close()
        val types = events.map { it.type }
        if (types.firstOrNull() != "run_start" || types.lastOrNull() != "run_end" || types.count { it == "run_end" } != 1) {
            failures += "events do not open with run_start and close with one run_end: $types"
        }
        if (types.count { it == "tool_execution_start" } != types.count { it == "tool_execution_end" }) failures += "unbalanced tool executions"
        if (types.count { it == "turn_start" } != types.count { it == "turn_end" }) failures += "unbalanced turns"
        events.filterIsInstance<Event.Unknown>().forEach { failures += "an event this package does not know: ${it.json}" }
        if (events.any { it.runId != run.id }) failures += "an event of another run"
        expect["status"].text?.let { status ->
            val got = FerruleJson.encodeToJsonElement(Status.serializer(), result.status).text
            if (got != status) failures += "status $got, expected $status (error ${result.error})"
        }
        expect["error_code"].text?.let { if (result.error?.codeName != it) failures += "error ${result.error}, expected $it" }
        expect["events"]?.jsonArray?.map { it.text }?.let { if (types != it) failures += "events $types, expected $it" }
        expect["event_counts"]?.jsonObject?.forEach { (type, count) ->
            if (types.count { it == type } != count.jsonPrimitive.intOrNull) failures += "${types.count { it == type }} $type events, expected $count"
        }
        expect["transcript"]?.let { transcript ->
            val expected = FerruleJson.decodeFromJsonElement(ListSerializer(Message.serializer()), transcript)
            if (result.messages != expected) failures += "transcript differs; got ${result.messages}"
        }
        expect["results"]?.jsonArray?.let { results ->
            val got = result.messages.filter { it.role == "tool" }
            if (got.size != results.size) {
                failures += "${got.size} tool results, expected ${results.size}"
            } else {
                got.zip(results).forEach { (message, want) ->
                    val want = want.jsonObject
                    if (message.toolCallId != want["tool_call_id"].text || message.isError != want["is_error"].isTrue ||
                        !message.text.contains(want["text_contains"].text ?: "")) {
                        failures += "result $message, expected $want"
                    }
                }
            }
        }
        expect["output"]?.let { if ((result.output ?: JsonNull) != it) failures += "output ${result.output}, expected $it" }
        expect["interruptions"]?.let {
            val got = FerruleJson.encodeToJsonElement(ListSerializer(Interruption.serializer()), result.interruptions)
            if (got != it) failures += "interruptions $got, expected $it"
        }
        expect["rounds"]?.jsonPrimitive?.intOrNull?.let { if (result.rounds != it) failures += "${result.rounds} rounds, expected $it" }
        expect["usage"]?.let {
            val got = FerruleJson.encodeToJsonElement(Usage.serializer(), result.usage)
            if (got != it) failures += "usage $got, expected $it"
        }
        expect["hook_calls"]?.let { if (!contains(it, JsonArray(hookCalls.toList()))) failures += "hook calls differ; got $hookCalls" }
        expect["cancel_handlers"]?.jsonPrimitive?.intOrNull?.let { expected ->
            withTimeoutOrNull(10_000) { while (isActive && cancelHandlers.get() < expected) delay(1) }
            if (cancelHandlers.get() != expected) failures += "${cancelHandlers.get()} cancel handlers ran, expected $expected"
        }
        return result
    }
}

/** Whether [got] has everything [want] has: objects by key, arrays element by element, other values equal. */
private fun contains(want: JsonElement, got: JsonElement?): Boolean = when (want) {
    is JsonObject -> got is JsonObject && want.all { (key, value) -> contains(value, got[key] ?: JsonNull) }
    is JsonArray -> got is JsonArray && got.size == want.size && want.indices.all { contains(want[it], got[it]) }
    else -> want == got
}

