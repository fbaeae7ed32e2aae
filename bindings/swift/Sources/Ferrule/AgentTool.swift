import CFerrule
import Foundation

/// A built agent offered to another agent's model (docs/agents.md): as a tool
/// whose calls run it nested in the calling run, or as a handoff, the tool
/// `transfer_to_<name>`, which hands the run to it.
///
/// A called agent's events arrive inside its call as `.agentEvent`, its tokens
/// count once in the call's and the run's usage, cancelling the run (or the
/// call's timeout) cancels it, and an approval it waits for interrupts the
/// calling run: resume with decisions keyed by each interruption's `key`.
public struct AgentTool: Sendable {
    /// How the model is offered the agent.
    public enum Mode: String, Sendable {
        /// A tool whose calls run the agent and answer with its answer.
        case tool
        /// A tool that hands the run to the agent.
        case handoff
    }

    /// The tool's name, or for a handoff the name after `transfer_to_`.
    public let name: String
    public let description: String
    public let agent: Agent
    public let mode: Mode
    /// `timeoutMs` and `needsApproval`; for a handoff `needsApproval` and
    /// `handoffMessages` (`"all"` or `"without_tool_calls"`).
    public let options: AgentToolOptions

    /// `agent` as the tool `name`: a call's `input` argument is its prompt, and
    /// its answer (or its structured output) is the call's result.
    public static func tool(
        _ name: String, description: String, agent: Agent, options: AgentToolOptions = AgentToolOptions()
    ) -> AgentTool {
        AgentTool(name: name, description: description, agent: agent, mode: .tool, options: options)
    }

    /// `agent` as the handoff `transfer_to_<name>`: the run goes on with its
    /// system prompt, tools and model, and the result's `agent` names it.
    public static func handoff(
        _ name: String, description: String, agent: Agent, options: AgentToolOptions = AgentToolOptions()
    ) -> AgentTool {
        AgentTool(name: name, description: description, agent: agent, mode: .handoff, options: options)
    }

    /// Adds the agent to a builder, which keeps a handle of its own.
    func register(with builder: OpaquePointer) throws {
        let options = String(decoding: try JSONCoding.encode(options), as: UTF8.self)
        let error = withUTF8Arg(name) { name, nameLength in
            withUTF8Arg(description) { description, descriptionLength in
                withUTF8Arg(mode.rawValue) { mode, modeLength in
                    withUTF8Arg(options) { options, optionsLength in
                        var spec = ferrule_agent_tool_spec(
                            struct_size: UInt32(MemoryLayout<ferrule_agent_tool_spec>.size),
                            name: name, name_len: nameLength, description: description,
                            description_len: descriptionLength, agent: agent.handle, input_schema: nil,
                            input_schema_len: 0, mode: mode, mode_len: modeLength, options: options,
                            options_len: optionsLength)
                        return withExtendedLifetime(agent) {
                            FerruleError.take(ferrule_agent_builder_add_agent(builder, &spec))
                        }
                    }
                }
            }
        }
        if let error { throw error }
    }
}
