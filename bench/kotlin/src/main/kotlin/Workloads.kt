// Runs W1 (one no-op call per round, 2,000 rounds) and W2 (64 parallel
// schema-validated calls per round, 200 rounds) with a Kotlin tool that answers
// "ok" at once (on the agent's context, and inline), plain and with every event
// collected, with an inline tool and the transcript left out of the result, W1
// with the model in Kotlin too (a host model answering each request at once),
// on the default context (Dispatchers.IO) and on
// Dispatchers.Default, and W1 with a no-op hook on every stage, and prints the
// cost per round and per call of one whole run (the best and the median of the
// runs; for hooks, the rounds' share of that, from the first turn_start to the
// last, and the median round near round 10 and near round 2,000).
import dev.ferrule.Agent
import dev.ferrule.Hook
import dev.ferrule.HookDecision
import dev.ferrule.HookOptions
import dev.ferrule.HostModel
import dev.ferrule.Library
import dev.ferrule.ModelDelta
import dev.ferrule.RunInput
import dev.ferrule.Status
import dev.ferrule.Tool
import dev.ferrule.onFinalAnswer
import dev.ferrule.onRunStart
import dev.ferrule.onToolCall
import dev.ferrule.onToolResult
import dev.ferrule.onTurnStart
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import java.io.File

/**
 * Runs [run] until the JIT has had its time with it: at least twice and for at
 * least a second (two runs alone left the first figure of each kind, which
 * meets code the JIT had not compiled yet, up to twice as slow as the same
 * figure measured later in the process).
 */
inline fun warmUp(run: () -> Unit) {
    val start = System.nanoTime()
    var times = 0
    while (times < 2 || System.nanoTime() - start < 1_000_000_000L) {
        run()
        times++
    }
}

/** W1's model in Kotlin: the call each round, then "done" in the last. */
val w1Model = HostModel { request ->
    flowOf(if (request.turn < 2000) ModelDelta.ToolCall(0, "c1", "noop", "{}") else ModelDelta.Text("done"))
}

fun main() = runBlocking {
    val workloads = Json.parseToJsonElement(File("../workloads.json").readText()).jsonObject
    val runs = System.getenv("FERRULE_BENCH_RUNS")?.toIntOrNull() ?: 7
    // FERRULE_BENCH_ONLY: a pattern the figures' labels must match (to profile one).
    val only = System.getenv("FERRULE_BENCH_ONLY")?.let(::Regex)
    println("ferrule ${Library.version}, Kotlin tool, $runs runs per figure")
    val hostModelConfig = """{"model": {"provider": "host", "name": "w1"}, "max_rounds": 2000}"""
    for ((contextName, context) in listOf("Dispatchers.IO" to Dispatchers.IO, "Dispatchers.Default" to Dispatchers.Default)) {
        // The run's transcript left out of its result (`withoutMessages`), as
        // LangChain4j's AI service gives the answer alone: inline tools only.
        for ((events, model, withoutMessages) in
            listOf(Triple(false, null, false), Triple(true, null, false), Triple(false, w1Model, false), Triple(false, null, true))) {
            for ((name, schema) in listOf("w1" to "open_schema", "w2" to "schema")) for (inline in listOf(false, true)) {
                if (model != null && (name != "w1" || inline)) continue
                if (withoutMessages && !inline) continue
                val label = name.uppercase() + (if (model != null) " on a Kotlin host model" else "") +
                    (if (inline) ", inline tool" else "") + (if (events) " with events" else "") +
                    (if (withoutMessages) " without messages" else "")
                if (only != null && !only.containsMatchIn("$label on $contextName")) continue
                val workload = workloads[name]!!.jsonObject
                val noop = Tool("noop", "Does nothing.", workloads[schema].toString(), inline = inline) { "\"ok\"" }
                val config = if (model != null) hostModelConfig else workload["config"].toString()
                val input = if (withoutMessages) RunInput.prompt("go").withoutMessages() else RunInput.prompt("go")
                Agent(config, listOf(noop), context = context, model = model).use { agent ->
                    warmUp { agent.run(input) }
                    val seconds = (1..runs).map {
                        val start = System.nanoTime()
                        val result = if (events) {
                            agent.start(input).use { run ->
                                run.events.collect()
                                run.await()
                            }
                        } else {
                            agent.run(input)
                        }
                        check(result.status == Status.COMPLETED)
                        (System.nanoTime() - start) / 1e9
                    }.sorted()
                    val rounds = workload["rounds"]!!.jsonPrimitive.int
                    val calls = workload["calls"]!!.jsonPrimitive.int
                    fun figure(s: Double) = "%.1f µs/round, %.2f µs/call".format(s / rounds * 1e6, s / calls * 1e6)
                    println("$label on $contextName: best ${figure(seconds.first())}; " +
                        "median ${figure(seconds[seconds.size / 2])}")
                }
            }
        }
    }
    for ((name, calls) in listOf("w1" to 1, "w2" to 64)) {
        val label = "${name.uppercase()} on LangChain4j"
        if (only != null && !only.containsMatchIn(label)) continue
        val workload = workloads[name]!!.jsonObject
        val rounds = workload["rounds"]!!.jsonPrimitive.int
        val seconds = langchain4j(rounds, calls, runs)
        val total = workload["calls"]!!.jsonPrimitive.int
        fun figure(s: Double) = "%.1f µs/round, %.2f µs/call".format(s / rounds * 1e6, s / total * 1e6)
        println("$label: best ${figure(seconds.first())}; median ${figure(seconds[seconds.size / 2])}")
    }
    if (only == null || only.containsMatchIn("hooks")) {
        hooks(workloads["w1"]!!.jsonObject["config"].toString(), workloads["open_schema"].toString(), runs)
    }
}

/**
 * W1 with a no-op hook on every stage (inline, without the history) and an
 * inline tool: typed hooks, whose payloads are decoded, then raw ones, which
 * answer `{}` to the payload's JSON; last the typed ones with the history (given
 * the new messages, the rest kept for the run).
 */
suspend fun hooks(config: String, schema: String, runs: Int) {
    val turns = mutableListOf<Long>()
    val options = HookOptions(inline = true, withoutHistory = true)
    val raw = listOf("run_start", "turn_start", "tool_call", "tool_result", "final_answer").map { stage ->
        Hook(stage, options) {
            if (stage == "turn_start") turns += System.nanoTime()
            "{}"
        }
    }
    val variants = listOf(
        "inline hooks without history" to typedHooks(options, turns),
        "inline raw hooks without history" to raw,
        "inline hooks with the history" to typedHooks(HookOptions(inline = true), turns),
    )
    for ((label, hooks) in variants) {
        hooksOf(label, hooks, turns, config, schema, runs)
    }
}

/** A typed no-op hook on every stage, with [options]; the turn_start one notes each turn's start in [turns]. */
fun typedHooks(options: HookOptions, turns: MutableList<Long>) = listOf(
    onRunStart(options) { HookDecision.Proceed },
    onTurnStart(options) { turns += System.nanoTime(); HookDecision.Proceed },
    onToolCall(options) { HookDecision.Proceed },
    onToolResult(options) { HookDecision.Proceed },
    onFinalAnswer(options) { HookDecision.Proceed },
)

/** W1 with [hooks], which note each turn's start in [turns]. */
suspend fun hooksOf(label: String, hooks: List<Hook>, turns: MutableList<Long>, config: String, schema: String, runs: Int) {
    val noop = Tool("noop", "Does nothing.", schema, inline = true) { "\"ok\"" }
    Agent(config, listOf(noop), hooks, context = Dispatchers.Default).use { agent ->
        warmUp { agent.run(RunInput.prompt("go")) }
        val early = mutableListOf<Long>()
        val late = mutableListOf<Long>()
        val rounds = mutableListOf<Double>()
        val whole = (1..runs).map {
            turns.clear()
            val start = System.nanoTime()
            check(agent.run(RunInput.prompt("go")).status == Status.COMPLETED)
            val elapsed = System.nanoTime() - start
            rounds += (turns.last() - turns.first()).toDouble() / (turns.size - 1) / 1e3
            for (i in 5 until 15) early += turns[i] - turns[i - 1]
            for (i in turns.size - 10 until turns.size) late += turns[i] - turns[i - 1]
            elapsed / 2000.0 / 1e3
        }.sorted()
        fun median(values: List<Long>) = values.sorted()[values.size / 2] / 1e3
        println(("W1 with $label on Dispatchers.Default: median %.1f µs/round, " +
            "of which the rounds %.1f; ").format(whole[whole.size / 2], rounds.sorted()[rounds.size / 2]) +
            "round 10: %.1f µs, round 2000: %.1f µs".format(median(early), median(late)))
    }
}
