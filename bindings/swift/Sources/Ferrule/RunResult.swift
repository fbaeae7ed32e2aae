import Foundation

extension RunResult {
    /// The state as JSON to store (plain JSON, portable to another process) and
    /// give to `RunInput.resume`; nil unless the run was interrupted. It is
    /// `state` written again: the same document, not the same bytes (key order
    /// and number spelling may differ).
    public var stateJSON: Data? {
        state.flatMap { $0 == .null ? nil : try? JSONCoding.encode($0) }
    }

    /// The structured output decoded into `T`. Throws `invalidOutput` when the
    /// run has none (it failed, or the agent has no schema) or it does not fit `T`.
    public func output<T: Decodable>(as type: T.Type) throws -> T {
        guard output != .null else {
            throw FerruleError(code: .invalidOutput, message: "the run has no structured output")
        }
        do {
            return try JSONCoding.decode(type, from: JSONCoding.encode(output))
        } catch {
            throw FerruleError(code: .invalidOutput, message: "the output does not fit \(type): \(error)")
        }
    }
}

extension Decision {
    /// Approves the call (and, with `always`, every later call of its tool).
    public static func approved(always: Bool = false) -> Decision { Decision(approve: true, always: always) }

    /// Rejects the call; the model sees `message`.
    public static func rejected(_ message: String? = nil, always: Bool = false) -> Decision {
        Decision(approve: false, always: always, message: message)
    }
}
