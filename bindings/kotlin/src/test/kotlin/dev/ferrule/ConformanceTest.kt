package dev.ferrule

import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.delay
import kotlinx.coroutines.isActive
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.KSerializer
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
import java.nio.file.Files
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.atomic.AtomicReference

/**
 * The Kotlin runner of the shared scenarios of tests/conformance: every tool and
 * hook is written in Kotlin from the scenario's declared behaviour, each run is
 * observed through this package's types, and the one judge (ferrule-conformance,
 * tests/conformance/README.md) decides.
 */
class ConformanceTest {
    @Test
    fun everyScenario() = runEveryScenario(hostModel = false)

    /** Every scenario with each scripted model replaced by a Kotlin host model replaying its script ([ScriptReplay]). */
    @Test
    fun everyScenarioOnAHostModel() = runEveryScenario(hostModel = true)

    private fun runEveryScenario(hostModel: Boolean) = runBlocking {
        val directory = File(System.getProperty("ferrule.conformance") ?: "../../tests/conformance")
        val files = directory.listFiles { file -> file.name.endsWith(".json") }!!.sortedBy { it.name }
        assertTrue(files.size > 30, "scenarios in $directory")
        val suffix = if (hostModel) "-host-model" else ""
        val out = System.getProperty("ferrule.observations")?.let { File(it + suffix) }
            ?: Files.createTempDirectory("ferrule-kotlin").toFile()
        out.deleteRecursively()
        out.mkdirs()
        files.map { file ->
            async {
                val name = file.name.removeSuffix(".json")
                val spec = FerruleJson.parseToJsonElement(file.readText()).jsonObject
                val observation = Scenario(name, spec, hostModel, directory).observe()
                File(out, file.name).writeText(observation.toString())
            }
        }.awaitAll()
        val judge = System.getProperty("ferrule.judge") ?: "../../target/release/ferrule-conformance"
        val process = ProcessBuilder(judge, out.path).redirectErrorStream(true).start()
        val verdict = process.inputStream.bufferedReader().readText()
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the judge ($judge) ended")
        assertEquals(0, process.exitValue(), "the judge ($judge; make judge builds it):\n$verdict")
    }
}

internal val JsonElement?.text: String? get() = (this as? JsonPrimitive)?.takeIf { it.isString }?.content
private val JsonElement?.isTrue: Boolean get() = (this as? JsonPrimitive)?.booleanOrNull == true

/** One scenario (read from [directory]), and what its tools and hooks share with the runner. */
private class Scenario(val name: String, val spec: JsonObject, val hostModel: Boolean, val directory: File) {
    val cancelHandlers = AtomicInteger()
    val hookCalls = java.util.Collections.synchronizedList(mutableListOf<JsonElement>())
    val current = AtomicReference<Run?>()

    /** What each call of the current run was given, by call id. */
    val traceparents = java.util.concurrent.ConcurrentHashMap<String, JsonElement>()

    /** Every span the tracer received, when the scenario is traced. */
    val spans = java.util.Collections.synchronizedList(mutableListOf<JsonElement>())
    val traced = spec["trace"].isTrue
    val config = FerruleJson.decodeFromJsonElement(AgentConfig.serializer(), spec["config"]!!)

    /** The observation: one step per run, the first and then each resume. */
    suspend fun observe(): JsonObject {
        val steps = mutableListOf<JsonElement>()
        try {
            steps()
        } catch (error: Throwable) {
            runnerError(error.toString())
        }.forEach { steps += it }
        val runner = if (hostModel) "kotlin-host-model" else "kotlin"
        return JsonObject(mapOf("runner" to JsonPrimitive(runner), "scenario" to JsonPrimitive(name), "steps" to JsonArray(steps)))
    }

    private fun runnerError(why: String) = listOf(JsonObject(mapOf("runner_error" to JsonPrimitive(why))))

    private suspend fun steps(): List<JsonElement> {
        // AgentConfig mirrors the configuration JSON: nothing is lost on the way.
        val again = FerruleJson.encodeToJsonElement(AgentConfig.serializer(), config)
        if (again != spec["config"]) return runnerError("AgentConfig loses fields: $again")
        val agent = build(config, spec["tools"], spec["agents"], hooks())
        // A traced scenario holds the process's tracer while it runs.
        if (traced) Library.setTracer { span -> spans += FerruleJson.parseToJsonElement(span) }
        try {
            return runs(agent)
        } finally {
            if (traced) Library.removeTracer()
        }
    }

    /** The first run on [agent], then each resume from the last state a run gave. */
    private suspend fun runs(agent: Agent): List<JsonElement> {
        val steps = mutableListOf<JsonElement>()
        var (step, result) = step(agent, input(spec["input"]!!.jsonObject), spec["expect"]?.jsonObject)
        steps += step
        for (resume in spec["resumes"]?.jsonArray ?: JsonArray(emptyList())) {
            val resume = resume.jsonObject
            val state = result?.state?.takeIf { it != JsonNull }?.jsonObject ?: break
            val patched = JsonObject(state + (resume["state_patch"]?.jsonObject ?: emptyMap()))
            val decisions = FerruleJson.decodeFromJsonElement(
                MapSerializer(String.serializer(), Decision.serializer()), resume["decisions"] ?: JsonObject(emptyMap()))
            val on = if (resume["new_agent"].isTrue) build(config, resume["tools"] ?: spec["tools"], spec["agents"], hooks()) else agent
            val returned = resume["run_returned"]?.jsonObject
            val input = if (returned == null) {
                RunInput.resume(patched.toString(), decisions)
            } else {
                // Each returned call as an invoke run, the attempt given; their outcomes resume the run.
                val attempt = returned["attempt"]?.jsonPrimitive?.intOrNull ?: 1
                val outcomes = result.calls.associate { call ->
                    call.id to (on.run(RunInput.invoke(call, attempt)).outcome ?: JsonNull)
                }
                RunInput.resumeWithResults(patched.toString(), outcomes).returningCalls()
            }
            val (next, nextResult) = step(on, input, resume["expect"]?.jsonObject)
            steps += next
            if (nextResult != null) result = nextResult
            if (on !== agent) on.close()
        }
        agent.close()
        return steps
    }

    /** An agent of [config], [tools], [hooks] and the [agents] it is offered (each built first, then closed). */
    private fun build(config: AgentConfig, tools: JsonElement?, agents: JsonElement?, hooks: List<Hook>): Agent {
        val offered = (agents?.jsonArray ?: JsonArray(emptyList())).map { agent ->
            val spec = agent.jsonObject
            val child = build(FerruleJson.decodeFromJsonElement(AgentConfig.serializer(), spec["config"]!!),
                spec["tools"], spec["agents"], emptyList())
            val options = FerruleJson.decodeFromJsonElement(AgentToolOptions.serializer(),
                spec["options"] ?: JsonObject(emptyMap()))
            val name = spec["name"].text!!
            val description = spec["description"].text ?: ""
            if (spec["mode"].text == "handoff") {
                AgentTool.handoff(name, description, child, options)
            } else {
                AgentTool.tool(name, description, child, options)
            }
        }
        val made = (tools?.jsonArray ?: JsonArray(emptyList())).map { tool ->
            val tool = tool.jsonObject
            Tool(tool["name"].text!!, tool["description"].text ?: "", tool["input_schema"]?.toString(),
                options(tool["options"]?.jsonObject), behaviour(tool["behaviour"]?.jsonObject ?: JsonObject(emptyMap())))
        }
        val (modelConfig, replay) = if (hostModel) ScriptReplay.replacing(located(config)) else located(config) to null
        return Agent(modelConfig, made, hooks, agents = offered, model = replay).also { offered.forEach { it.agent.close() } }
    }

    /** [config] with a relative cassette path (`model.record.path`) made the scenario directory's. */
    private fun located(config: AgentConfig): AgentConfig {
        val record = config.model.record?.takeUnless { File(it.path).isAbsolute } ?: return config
        return config.copy(model = config.model.copy(record = record.copy(path = File(directory, record.path).absolutePath)))
    }

    /** The scenario's tool options as [ToolOptions]; every Kotlin tool is nonblocking, the rest must survive. */
    private fun options(options: JsonObject?): ToolOptions {
        val given = JsonObject((options ?: JsonObject(emptyMap())) - "nonblocking")
        val decoded = FerruleJson.decodeFromJsonElement(ToolOptions.serializer(), given)
        check(FerruleJson.encodeToJsonElement(ToolOptions.serializer(), decoded) == given) { "ToolOptions loses fields: $given" }
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
        if (behaviour["traceparent"].isTrue) traceparents[call.id] = JsonPrimitive(call.traceparent)
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
                    ?: if (behaviour["echo"].isTrue) {
                        JsonPrimitive(call.arguments).toString()
                    } else if (behaviour["attempt"].isTrue) {
                        JsonPrimitive("attempt ${call.attempt}").toString()
                    } else {
                        (behaviour["result"] ?: JsonNull).toString()
                    }
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
        val context = input["trace_context"]?.jsonObject
        val traced = context?.let { base.withTraceContext(it["traceparent"].text!!, it["tracestate"].text) } ?: base
        val limited = traced.limitedTo(tools)
        val returning = when (val calls = input["calls"]) {
            null -> limited
            JsonPrimitive("return") -> limited.returningCalls()
            else -> error("calls $calls has no RunInput form")
        }
        return when (val messages = input["result_messages"]) {
            null -> returning
            JsonPrimitive("none") -> returning.withoutMessages()
            else -> error("result_messages $messages has no RunInput form")
        }
    }

    /** Starts [input] on [agent] and observes the run (its events and result as this package writes them, the hook
     *  consultations, the cancel handlers once [expect] says how many to wait for), or the refusal of its start. */
    private suspend fun step(agent: Agent, input: RunInput, expect: JsonObject?): Pair<JsonElement, RunResult?> {
        cancelHandlers.set(0)
        hookCalls.clear()
        traceparents.clear()
        val run = try {
            agent.start(input)
        } catch (error: FerruleException) {
            val refusal = JsonObject(mapOf("code" to JsonPrimitive(error.code.name), "message" to JsonPrimitive(error.detail)))
            return JsonObject(mapOf("start_error" to refusal)) to null
        }
        current.set(run)
        val events = mutableListOf<JsonElement>()
        run.events.collect { events += written(it) }
        val result = run.await()
        current.set(null)
        run.close()
        expect?.get("cancel_handlers")?.jsonPrimitive?.intOrNull?.let { expected ->
            withTimeoutOrNull(10_000) { while (isActive && cancelHandlers.get() < expected) delay(1) }
        }
        val step = mutableMapOf(
            "events" to JsonArray(events),
            "result" to FerruleJson.encodeToJsonElement(RunResult.serializer(), result),
            "hook_calls" to JsonArray(hookCalls.toList()),
            "cancel_handlers" to JsonPrimitive(cancelHandlers.get()),
        )
        if (expect?.containsKey("unused_recordings") == true) {
            step["unused_recordings"] =
                FerruleJson.encodeToJsonElement(ListSerializer(UnusedExchange.serializer()), agent.unusedRecordings())
        }
        if (traced) {
            step["spans"] = JsonArray(traceOf(run.id))
            step["traceparents"] = JsonObject(traceparents.toMap())
        }
        return JsonObject(step) to result
    }

    /** The spans of the trace of the run [runId], once its invoke_agent span came (the last of a trace to end; up to
     *  10 s), in the order they ended. */
    private suspend fun traceOf(runId: String): List<JsonElement> = withTimeoutOrNull(10_000) {
        while (isActive) {
            val all = synchronized(spans) { spans.toList() }
            val root = all.firstOrNull { it.jsonObject["attributes"]?.jsonObject?.get("ferrule.run.id").text == runId }
            if (root != null) return@withTimeoutOrNull all.filter { it.jsonObject["trace_id"] == root.jsonObject["trace_id"] }
            delay(1)
        }
        null
    } ?: emptyList()
}

/** An event as this package writes it, with its type; one it does not know (at any depth of nesting), marked as such. */
private fun written(event: Event): JsonElement {
    if (event is Event.Unknown) return JsonObject(mapOf("type" to JsonPrimitive("unknown"), "json" to event.json))

    @Suppress("UNCHECKED_CAST")
    val serializer = Event.serializers.getValue(event.type) as KSerializer<Event>
    val fields = FerruleJson.encodeToJsonElement(serializer, event).jsonObject + ("type" to JsonPrimitive(event.type))
    return JsonObject(if (event is Event.AgentEvent) fields + ("event" to written(event.event)) else fields)
}
