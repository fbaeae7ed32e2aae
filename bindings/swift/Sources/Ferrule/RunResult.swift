import Foundation

/// A run's outcome, for every status. `messages` is the whole transcript,
/// replayable: `.messages(result.messages + [.user("...")])` continues the
/// conversation. Encodes as ferrule writes it (the `state` as its JSON).
public struct RunResult: Sendable, Codable {
    public let status: Status
    /// The last assistant message.
    public let final: Message?
    public let messages: [Message]
    public let usage: Usage
    public let rounds: Int
    /// Why a failed run failed.
    public let error: FerruleError?
    /// The final answer as JSON when the agent has an `outputSchema` and the
    /// answer satisfied it; see `output(as:)`.
    public let output: JSONValue?
    /// The calls an interrupted run waits on a decision for.
    public let interruptions: [Interruption]
    /// What an interrupted run needs to go on: store it as it is (plain JSON,
    /// portable to another process) and give it to `RunInput.resume`. Nil unless
    /// the run was interrupted.
    public let state: Data?

    private enum Keys: String, CodingKey {
        case status, final, messages, usage, rounds, error, output, interruptions, state
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        status = try container.decode(Status.self, forKey: .status)
        final = try container.decodeIfPresent(Message.self, forKey: .final)
        messages = try container.decodeIfPresent([Message].self, forKey: .messages) ?? []
        usage = try container.decodeIfPresent(Usage.self, forKey: .usage) ?? Usage()
        rounds = try container.decodeIfPresent(Int.self, forKey: .rounds) ?? 0
        error = try container.decodeIfPresent(FerruleError.self, forKey: .error)
        let output = try container.decodeIfPresent(JSONValue.self, forKey: .output)
        self.output = output == .null ? nil : output
        interruptions = try container.decodeIfPresent([Interruption].self, forKey: .interruptions) ?? []
        let state = try container.decodeIfPresent(JSONValue.self, forKey: .state)
        self.state = state.flatMap { $0 == .null ? nil : try? JSONCoding.encode($0) }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(final, forKey: .final)
        try container.encode(messages, forKey: .messages)
        try container.encode(usage, forKey: .usage)
        try container.encode(rounds, forKey: .rounds)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encodeIfPresent(output, forKey: .output)
        try container.encode(interruptions, forKey: .interruptions)
        try container.encodeIfPresent(try state.map { try JSONCoding.decode(JSONValue.self, from: $0) }, forKey: .state)
    }

    /// The structured output decoded into `T`. Throws `invalidOutput` when the
    /// run has none (it failed, or the agent has no schema) or it does not fit `T`.
    public func output<T: Decodable>(as type: T.Type) throws -> T {
        guard let output else {
            throw FerruleError(code: .invalidOutput, message: "the run has no structured output")
        }
        do {
            return try JSONCoding.decode(type, from: JSONCoding.encode(output))
        } catch {
            throw FerruleError(code: .invalidOutput, message: "the output does not fit \(type): \(error)")
        }
    }
}

/// A call that needs the host's decision before it can run.
public struct Interruption: Sendable, Hashable, Codable {
    public let callID: String
    public let name: String
    public let arguments: JSONValue

    enum CodingKeys: String, CodingKey {
        case name, arguments
        case callID = "call_id"
    }
}

/// The host's answer for one interrupted call. A rejected call gets an error
/// result whose text is `message` (by default, that the user rejected it).
/// `always` makes the decision stand for every later call of the same tool in
/// the run.
public struct Decision: Sendable, Hashable, Codable {
    public var approve: Bool
    public var message: String?
    public var always: Bool

    public init(approve: Bool, message: String? = nil, always: Bool = false) {
        self.approve = approve
        self.message = message
        self.always = always
    }

    private enum Keys: String, CodingKey { case approve, message, always }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        self.init(
            approve: try container.decode(Bool.self, forKey: .approve),
            message: try container.decodeIfPresent(String.self, forKey: .message),
            always: try container.decodeIfPresent(Bool.self, forKey: .always) ?? false)
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(approve, forKey: .approve)
        try container.encodeIfPresent(message, forKey: .message)
        if always { try container.encode(always, forKey: .always) }
    }

    /// Approves the call (and, with `always`, every later call of its tool).
    public static func approved(always: Bool = false) -> Decision { Decision(approve: true, always: always) }

    /// Rejects the call; the model sees `message`.
    public static func rejected(_ message: String? = nil, always: Bool = false) -> Decision {
        Decision(approve: false, message: message, always: always)
    }
}
