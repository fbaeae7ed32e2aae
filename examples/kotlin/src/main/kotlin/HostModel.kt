// The lookup_customer example on a model the host runs ("provider": "host"):
// PocketEngine, a stand-in for an on-device or local engine written in Kotlin,
// reads each request's new messages and streams its answer. Its first answer
// calls the Kotlin tool lookup_customer (with LookupArguments and plans from
// Lookup.kt); its second says what the tool found. Everything after the model
// (the call's validation, the tool, the events) is ferrule's, as with any
// provider. `make test-kotlin` runs it (mvn compile exec:java -Dexec.mainClass=HostModelKt).
import dev.ferrule.Agent
import dev.ferrule.AgentConfig
import dev.ferrule.BuiltinTools
import dev.ferrule.Event
import dev.ferrule.HostModel
import dev.ferrule.Library
import dev.ferrule.ModelConfig
import dev.ferrule.ModelDelta
import dev.ferrule.ModelRequest
import dev.ferrule.RunInput
import dev.ferrule.Usage
import dev.ferrule.text
import dev.ferrule.tool
import dev.ferrule.toolResult
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.Json
import kotlin.system.exitProcess

/** What lookup_customer finds, sent to the model as JSON text. */
@Serializable
data class Account(@SerialName("customer_id") val customerId: String, val plan: String)

val lookupAccount = tool<LookupArguments, Account>("lookup_customer", "Return the current plan for one customer ID.") { _, args ->
    Account(args.customerId, plans[args.customerId] ?: throw IllegalArgumentException("no customer ${args.customerId}"))
}

/**
 * The model. ferrule collects its flow in a coroutine on the agent's context for
 * each request; it reads only the messages the engine has not seen (an engine
 * that keeps its own cache of the conversation reads no more).
 */
object PocketEngine : HostModel {
    override fun generate(request: ModelRequest): Flow<ModelDelta> = flow {
        val result = request.newMessages().firstOrNull { it.role == "tool" }
        if (result == null) {
            emit(ModelDelta.Text("Let me look that up. "))
            // A call in pieces, without an id: ferrule makes one up.
            emit(ModelDelta.ToolCall(0, name = "lookup_customer", arguments = """{"customer_id":"""))
            emit(ModelDelta.ToolCall(0, arguments = """"C-100"}"""))
        } else {
            val found = Json.decodeFromString<Account>(result.text)
            emit(ModelDelta.Text("${found.customerId} is on the "))
            emit(ModelDelta.Text(found.plan))
            emit(ModelDelta.Text(" plan."))
        }
        emit(ModelDelta.Tokens(Usage(inputTokens = 12, outputTokens = 8)))
    }
}

fun main() = runBlocking {
    val config = AgentConfig(ModelConfig("host", name = "pocket-engine"),
        system = "You are a helpful account assistant. Use the tools to answer.", builtinTools = BuiltinTools(disable = true))
    println("ferrule ${Library.version}, model: ${config.model.provider} ${config.model.name}")
    // Two runtime workers are plenty for one run at a time (before the first run only).
    Library.configureRuntime("""{"worker_threads": 2}""")
    Agent(config, listOf(lookupAccount), model = PocketEngine).use { agent ->
        agent.start(RunInput.prompt("Which plan does C-100 use?")).use { run ->
            run.events.collect { event ->
                when (event) {
                    is Event.MessageDelta -> println("text \"${event.text}\"")
                    is Event.ToolCallDelta -> println("call ${event.index} \"${event.name ?: ""}\" ${event.argumentsDelta}")
                    is Event.ToolExecutionStart -> println("tool ${event.call.name}(${event.call.arguments}), id ${event.call.id}")
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
