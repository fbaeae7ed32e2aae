// Runs W1 (one no-op call per round, 2,000 rounds) and W2 (64 parallel
// schema-validated calls per round, 200 rounds) with a Kotlin tool that answers
// "ok" at once, plain and with every event collected, and W1 with the model in
// Kotlin too (a host model answering each request at once), on the default
// context (Dispatchers.IO) and on Dispatchers.Default, and prints the cost per
// round and per call of one whole run (the best and the median of the runs).
import dev.ferrule.Agent
import dev.ferrule.HostModel
import dev.ferrule.Library
import dev.ferrule.ModelDelta
import dev.ferrule.RunInput
import dev.ferrule.Status
import dev.ferrule.Tool
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.flow.flowOf
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import java.io.File

/** W1's model in Kotlin: the call each round, then "done" in the last. */
val w1Model = HostModel { request ->
    flowOf(if (request.turn < 2000) ModelDelta.ToolCall(0, "c1", "noop", "{}") else ModelDelta.Text("done"))
}

fun main() = runBlocking {
    val workloads = Json.parseToJsonElement(File("../workloads.json").readText()).jsonObject
    val runs = System.getenv("FERRULE_BENCH_RUNS")?.toIntOrNull() ?: 7
    println("ferrule ${Library.version}, Kotlin tool, $runs runs per figure")
    val hostModelConfig = """{"model": {"provider": "host", "name": "w1"}, "max_rounds": 2000}"""
    for ((contextName, context) in listOf("Dispatchers.IO" to Dispatchers.IO, "Dispatchers.Default" to Dispatchers.Default)) {
        for ((events, model) in listOf(false to null, true to null, false to w1Model)) {
            for ((name, schema) in listOf("w1" to "open_schema", "w2" to "schema")) {
                if (model != null && name != "w1") continue
                val workload = workloads[name]!!.jsonObject
                val noop = Tool("noop", "Does nothing.", workloads[schema].toString()) { "\"ok\"" }
                val config = if (model != null) hostModelConfig else workload["config"].toString()
                Agent(config, listOf(noop), context = context, model = model).use { agent ->
                    repeat(2) { agent.run(RunInput.prompt("go")) } // warm up the JIT
                    val seconds = (1..runs).map {
                        val start = System.nanoTime()
                        val result = if (events) {
                            agent.start(RunInput.prompt("go")).use { run ->
                                run.events.collect()
                                run.await()
                            }
                        } else {
                            agent.run(RunInput.prompt("go"))
                        }
                        check(result.status == Status.COMPLETED)
                        (System.nanoTime() - start) / 1e9
                    }.sorted()
                    val rounds = workload["rounds"]!!.jsonPrimitive.int
                    val calls = workload["calls"]!!.jsonPrimitive.int
                    fun figure(s: Double) = "%.1f µs/round, %.2f µs/call".format(s / rounds * 1e6, s / calls * 1e6)
                    val label = name.uppercase() + (if (model != null) " on a Kotlin host model" else "") + (if (events) " with events" else "")
                    println("$label on $contextName: best ${figure(seconds.first())}; " +
                        "median ${figure(seconds[seconds.size / 2])}")
                }
            }
        }
    }
}
