// The lookup_customer example: one typed Kotlin tool, the run's tool events
// printed as they happen. The scripted model drives it unless OPENAI_API_KEY or
// ANTHROPIC_API_KEY is set (FERRULE_MODEL then names the model).
import dev.ferrule.Agent
import dev.ferrule.AgentConfig
import dev.ferrule.BuiltinTools
import dev.ferrule.Event
import dev.ferrule.Library
import dev.ferrule.ModelConfig
import dev.ferrule.RunInput
import dev.ferrule.text
import dev.ferrule.tool
import dev.ferrule.toolResult
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement
import kotlin.system.exitProcess

@Serializable
data class LookupArguments(@SerialName("customer_id") val customerId: String)

val plans = mapOf("C-100" to "Gold", "C-200" to "Silver")

val lookupCustomer = tool<LookupArguments, String>("lookup_customer", "Return the current plan for one customer ID.") { _, args ->
    val plan = plans[args.customerId] ?: throw IllegalArgumentException("no customer ${args.customerId}")
    "Customer ${args.customerId} is on the $plan plan."
}

/** A real model when a key is set, else the scripted one. */
fun model(): ModelConfig {
    val name = System.getenv("FERRULE_MODEL")
    return when {
        System.getenv("OPENAI_API_KEY") != null -> ModelConfig("openai", name = name ?: "gpt-4.1-mini")
        System.getenv("ANTHROPIC_API_KEY") != null -> ModelConfig("anthropic", name = name ?: "claude-sonnet-4-5")
        else -> ModelConfig("scripted", script = Json.decodeFromString<List<JsonElement>>("""[
            {"text": "Let me look that up.", "tool_calls": [
                {"id": "call_1", "name": "lookup_customer", "arguments": {"customer_id": "C-100"}}]},
            {"text": "C-100 is on the Gold plan."}]"""))
    }
}

fun main() = runBlocking {
    val config = AgentConfig(model(), system = "You are a helpful account assistant. Use the tools to answer.",
        builtinTools = BuiltinTools(disable = true))
    println("ferrule ${Library.version}, model: ${config.model.provider} ${config.model.name ?: ""}")
    // Two runtime workers are plenty for one run at a time (before the first run only).
    Library.configureRuntime("""{"worker_threads": 2}""")
    Agent(config, listOf(lookupCustomer)).use { agent ->
        agent.start(RunInput.prompt("Which plan does C-100 use?")).use { run ->
            run.events.collect { event ->
                when (event) {
                    is Event.ToolExecutionStart -> println("tool ${event.call.name}(${event.call.arguments})")
                    is Event.ToolExecutionEnd -> println("  -> ${event.toolResult.text} (error: ${event.isError})")
                    is Event.RunEnd -> println("run ended: ${event.status}")
                    else -> {}
                }
            }
            val result = run.await()
            result.error?.let {
                System.err.println("the run failed: $it")
                exitProcess(1)
            }
            println("answer: ${result.final?.text}")
            println("(${result.rounds} rounds, ${result.usage.inputTokens} input and ${result.usage.outputTokens} output tokens)")
        }
    }
}
