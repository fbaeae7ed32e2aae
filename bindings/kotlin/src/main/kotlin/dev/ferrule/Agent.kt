package dev.ferrule

import com.sun.jna.ptr.PointerByReference
import kotlinx.coroutines.Dispatchers
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import java.io.Closeable
import kotlin.coroutines.CoroutineContext

/**
 * A built agent: configuration (the configuration JSON of the C ABI), tools and
 * hooks, immutable. Start any number of runs, from any thread or coroutine; runs
 * keep what they need, so [close] may come while runs go on. Tool and hook
 * bodies run in coroutines on [context]: Dispatchers.IO unless given, so a
 * body that blocks its thread slows only its own run, as ferrule's C hosts
 * may block; not Unconfined, and without a Job (runs cancel their calls). The
 * library's ABI version is checked when the first agent is made.
 */
class Agent(
    configJson: String,
    tools: List<Tool> = emptyList(),
    hooks: List<Hook> = emptyList(),
    context: CoroutineContext = Dispatchers.IO,
    /** Agents the model is offered, as tools or handoffs; they may be closed once this is built. */
    agents: List<AgentTool> = emptyList(),
    /** The model a `"host"` provider runs, named by the configuration's `model.name`. */
    model: HostModel? = null,
) : Closeable {
    internal val handle: OwnedHandle
    private val cleanable: java.lang.ref.Cleaner.Cleanable

    /** An agent of [config], encoded as the configuration JSON. */
    constructor(
        config: AgentConfig,
        tools: List<Tool> = emptyList(),
        hooks: List<Hook> = emptyList(),
        context: CoroutineContext = Dispatchers.IO,
        agents: List<AgentTool> = emptyList(),
        model: HostModel? = null,
    ) : this(FerruleJson.encodeToString(AgentConfig.serializer(), config), tools, hooks, context, agents, model)

    init {
        check(Library.abiMatches) {
            "libferrule ${Library.version} speaks another ABI than this package (${Library.ABI_VERSION})"
        }
        val host = CoroutineHost(context)
        val lib = Native.lib
        val config = configJson.utf8()
        val builderOut = PointerByReference()
        FerruleException.check(lib.ferrule_agent_builder_new(config, config.length, builderOut))
        val builder = builderOut.value
        try {
            tools.forEach { it.register(builder, host) }
            hooks.forEach { it.register(builder, host) }
            agents.forEach { it.register(builder) }
            model?.register(builder, modelName(configJson), host)
        } catch (error: Throwable) {
            lib.ferrule_agent_builder_free(builder)
            throw error
        }
        val agentOut = PointerByReference()
        FerruleException.check(lib.ferrule_agent_build(builder, agentOut))
        handle = OwnedHandle(agentOut.value) { lib.ferrule_agent_free(it) }
        cleanable = OwnedHandle.cleaner.register(this, handle)
    }

    private fun modelName(configJson: String): String = runCatching {
        FerruleJson.parseToJsonElement(configJson).jsonObject["model"]?.jsonObject?.get("name")?.jsonPrimitive?.content
    }.getOrNull() ?: ""

    /** Starts a run; its events and result come through the [Run]. */
    fun start(input: RunInput): Run = start(input, keepEvents = true)

    /**
     * Runs to the end and returns the result (every status), keeping none of
     * the run's events. Cancelling the coroutine cancels the run.
     */
    suspend fun run(input: RunInput): RunResult = start(input, keepEvents = false).use { it.await() }

    private fun start(input: RunInput, keepEvents: Boolean): Run =
        handle.use { Run.start(it, input, keepEvents) }
            ?: throw FerruleException(ErrorCode.INVALID_ARG, "the agent is closed")

    /**
     * The exchanges of the cassette the agent's model replays (`model.record`
     * with mode `replay` or `replay_or_record`) that none of its requests has
     * used so far, in cassette order: read once the runs are over, it says
     * what a replay left out. [FerruleException] `INVALID_ARG` when the model
     * replays no cassette, or the agent is closed. Any thread.
     */
    fun unusedRecordings(): List<UnusedExchange> {
        val json = handle.use { agent ->
            takeString { text, length -> Native.lib.ferrule_agent_unused_recordings(agent, text, length) }
        } ?: throw FerruleException(ErrorCode.INVALID_ARG, "the agent is closed")
        return FerruleJson.decodeFromString(UnusedRecordings.serializer(), json).unused
    }

    /** What `ferrule_agent_unused_recordings` writes. */
    @kotlinx.serialization.Serializable
    private class UnusedRecordings(val unused: List<UnusedExchange>)

    /**
     * Lets go of the agent; runs already started go on. Any number of times; an
     * agent collected without it is let go of then.
     */
    override fun close() = cleanable.clean()
}
