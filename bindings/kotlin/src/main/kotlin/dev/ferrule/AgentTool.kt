package dev.ferrule

import com.sun.jna.Pointer

/**
 * A built agent offered to another agent's model (docs/agents.md): as a tool
 * whose calls run it nested in the calling run ([tool]), or as a handoff, the
 * tool `transfer_to_<name>`, which hands the run to it ([handoff]).
 *
 * A called agent's events arrive inside its call as [Event.AgentEvent], its
 * tokens count once in the call's and the run's usage, cancelling the run (or
 * the call's timeout) cancels it, and an approval it waits for interrupts the
 * calling run: resume with decisions keyed by each [Interruption.key].
 */
class AgentTool private constructor(
    /** The tool's name, or for a handoff the name after `transfer_to_`. */
    val name: String,
    val description: String,
    val agent: Agent,
    val mode: Mode,
    /** Timeout and approval; for a handoff, approval and `handoffMessages`. */
    val options: AgentToolOptions,
) {
    /** How the model is offered the agent. */
    enum class Mode(internal val json: String) {
        /** A tool whose calls run the agent and answer with its answer. */
        TOOL("tool"),

        /** A tool that hands the run to the agent. */
        HANDOFF("handoff"),
    }

    companion object {
        /** [agent] as the tool [name]: a call's `input` argument is its prompt, its answer the result. */
        fun tool(name: String, description: String, agent: Agent, options: AgentToolOptions = AgentToolOptions()) =
            AgentTool(name, description, agent, Mode.TOOL, options)

        /** [agent] as the handoff `transfer_to_<name>`; the result's `agent` names it once it answers. */
        fun handoff(name: String, description: String, agent: Agent, options: AgentToolOptions = AgentToolOptions()) =
            AgentTool(name, description, agent, Mode.HANDOFF, options)
    }

    /** Adds the agent to [builder], which keeps a handle of its own. */
    internal fun register(builder: Pointer) {
        val optionsJson = FerruleJson.encodeToString(AgentToolOptions.serializer(), options)
        val strings = listOf(name, description, mode.json, optionsJson).map { it.utf8() }
        val memory = strings.map { it.memory() }
        // The agent's handle stays live while the builder takes its own.
        val added = agent.handle.use { agentHandle ->
            val spec = AgentToolSpec().apply {
                struct_size = size()
                this.name = memory[0]; name_len = strings[0].length
                this.description = memory[1]; description_len = strings[1].length
                this.agent = agentHandle
                this.mode = memory[2]; mode_len = strings[2].length
                this.options = memory[3]; options_len = strings[3].length
            }
            Result.success(Native.lib.ferrule_agent_builder_add_agent(builder, spec))
        } ?: throw FerruleException(ErrorCode.INVALID_ARG, "the agent \"$name\" is closed")
        FerruleException.check(added.getOrNull())
    }
}
