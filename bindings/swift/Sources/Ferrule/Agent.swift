import CFerrule
import Foundation

/// A built agent: its configuration, tools and hooks, immutable. Start any
/// number of runs, from any task or thread. A run keeps what it needs of the
/// agent, so the agent may be released while runs go on.
public final class Agent: Sendable {
    nonisolated(unsafe) let handle: OpaquePointer

    /// Builds an agent, with other agents its model is offered (as tools or
    /// handoffs) and, for `"provider": "host"`, the model the host runs. Throws a `FerruleError` naming what is wrong: an invalid
    /// configuration (`invalidArg`), a tool's schema (`invalidSchema`), two tools
    /// of one name (`duplicateTool`), agents nested more than 8 deep
    /// (`resourceExhausted`), or a library of another ABI.
    public convenience init(
        config: AgentConfig, tools: [Tool] = [], hooks: [Hook] = [], agents: [AgentTool] = [],
        model: HostModel? = nil
    ) throws {
        let json: Data
        do {
            json = try JSONCoding.encode(config)
        } catch {
            throw FerruleError(code: .invalidArg, message: "the configuration does not encode: \(error)")
        }
        try self.init(
            configJSON: String(decoding: json, as: UTF8.self), tools: tools, hooks: hooks, agents: agents,
            model: model)
    }

    /// Builds an agent from the configuration JSON of the C ABI (docs/json.md,
    /// "Agent config"), for fields `AgentConfig` does not have yet.
    public init(
        configJSON: String, tools: [Tool] = [], hooks: [Hook] = [], agents: [AgentTool] = [],
        model: HostModel? = nil
    ) throws {
        try Library.checkABI()
        var builder: OpaquePointer?
        try withUTF8Arg(configJSON) { try FerruleError.check(ferrule_agent_builder_new($0, $1, &builder)) }
        guard let builder else { throw FerruleError(code: .nullArg, message: "no builder") }
        do {
            for tool in tools { try ToolBox(tool).register(with: builder) }
            for hook in hooks { try HookBox(hook).register(with: builder) }
            for agent in agents { try agent.register(with: builder) }
            if let model {
                var name = ""
                if case .object(let config) = try? JSONValue(json: configJSON),
                    case .object(let modelConfig)? = config["model"], case .string(let given)? = modelConfig["name"]
                {
                    name = given
                }
                try ModelBox(model).register(with: builder, name: name)
            }
        } catch {
            ferrule_agent_builder_free(builder)
            throw error
        }
        var agent: OpaquePointer?
        try FerruleError.check(ferrule_agent_build(builder, &agent))
        guard let agent else { throw FerruleError(code: .nullArg, message: "no agent") }
        handle = agent
    }

    deinit { ferrule_agent_free(handle) }

    /// Starts a run; its events and result come through the returned `Run`.
    /// Throws when ferrule refuses the input (`invalidJSON`, `invalidArg` naming
    /// the field, call id, version or tool).
    public func start(_ input: RunInput) throws -> Run {
        try Run(agent: handle, input: try input.inBursts().json())
    }

    /// Runs to the end and returns the result, for every status. Cancelling the
    /// calling task cancels the run (the result then has status `cancelled`).
    public func run(_ input: RunInput) async throws -> RunResult {
        try await Run(agent: handle, input: try input.endOnly().json()).result
    }

    /// The exchanges of the cassette the agent's model replays (`model.record`
    /// with mode `replay` or `replay_or_record`) that none of its requests has
    /// used so far, in cassette order: read once the runs are over, it says
    /// what a replay left out. Throws `invalidArg` when the model replays no
    /// cassette. Any thread.
    public func unusedRecordings() throws -> [UnusedExchange] {
        var text: UnsafeMutablePointer<CChar>?
        var length = 0
        defer { ferrule_string_free(text) }
        try FerruleError.check(ferrule_agent_unused_recordings(handle, &text, &length))
        do {
            let json = UnsafeRawBufferPointer(start: text, count: length)
            return try JSONReader.decode(UnusedRecordings.self, from: json).unused
        } catch {
            throw FerruleError(code: .invalidJSON, message: "the unused recordings did not decode: \(error)")
        }
    }
}

/// What `ferrule_agent_unused_recordings` writes.
private struct UnusedRecordings: Decodable {
    let unused: [UnusedExchange]
}
