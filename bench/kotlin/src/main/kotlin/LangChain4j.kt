// W1 and W2 on the peer a Kotlin user would pick: LangChain4j's AI services
// (dev.langchain4j:langchain4j), with a chat model written here that plays the
// scripted model's part (W1's call each round, W2's 64 calls, then "done") and
// a tool method that answers "ok" (LangChain4j decodes W2's arguments into its
// parameters but checks no JSON schema). W2's calls run concurrently
// (`executeToolsConcurrently`), as ferrule runs a batch.
import dev.langchain4j.agent.tool.P
import dev.langchain4j.agent.tool.Tool
import dev.langchain4j.agent.tool.ToolExecutionRequest
import dev.langchain4j.data.message.AiMessage
import dev.langchain4j.model.chat.ChatModel
import dev.langchain4j.model.chat.request.ChatRequest
import dev.langchain4j.model.chat.response.ChatResponse
import dev.langchain4j.service.AiServices

/** The scripted model's part: [calls] calls a round until the last of [rounds], then "done". */
class ScriptedChatModel(private val rounds: Int, private val calls: Int, private val arguments: (Int) -> String) : ChatModel {
    override fun doChat(request: ChatRequest): ChatResponse {
        // The prompt, then per round an assistant message and its results.
        val round = (request.messages().size - 1) / (calls + 1)
        val message = if (round >= rounds - 1) {
            AiMessage.from("done")
        } else {
            AiMessage.from((1..calls).map { i ->
                ToolExecutionRequest.builder().id("c$i").name("noop").arguments(arguments(i)).build()
            })
        }
        return ChatResponse.builder().aiMessage(message).build()
    }
}

/** The tool, as LangChain4j users write one. */
class NoopTools {
    @Tool("Does nothing.")
    fun noop(@P("an id", required = false) id: Int?, @P("a name", required = false) name: String?): String = "ok"
}

/** An AI service's interface: one prompt in, the answer out. */
interface Assistant {
    fun chat(prompt: String): String
}

/** The seconds of each of [runs] whole runs of [rounds] rounds of [calls] calls, sorted. */
fun langchain4j(rounds: Int, calls: Int, runs: Int): List<Double> {
    val model = ScriptedChatModel(rounds, calls) { i -> if (calls == 1) "{}" else """{"id": $i, "name": "a"}""" }
    var builder = AiServices.builder(Assistant::class.java).chatModel(model).tools(NoopTools())
        .maxSequentialToolsInvocations(rounds * calls + 10)
    if (calls > 1) builder = builder.executeToolsConcurrently()
    val assistant = builder.build()
    warmUp { check(assistant.chat("go") == "done") }
    return (1..runs).map {
        val start = System.nanoTime()
        check(assistant.chat("go") == "done")
        (System.nanoTime() - start) / 1e9
    }.sorted()
}
