import CFerrule

/// Every error ferrule reports: thrown by a call of this package, or inside a
/// failed run's `RunResult.error`. Match on `code`.
public struct FerruleError: Error, Sendable, Hashable, CustomStringConvertible, Codable {
    /// A stable error code (`FERRULE_ERROR_*` in ferrule.h); its numbers never change.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let nullArg = Code(rawValue: 1)
        public static let invalidUTF8 = Code(rawValue: 2)
        public static let invalidJSON = Code(rawValue: 3)
        public static let invalidArg = Code(rawValue: 4)
        public static let invalidSchema = Code(rawValue: 5)
        public static let duplicateTool = Code(rawValue: 6)
        public static let panic = Code(rawValue: 7)
        public static let cancelled = Code(rawValue: 8)
        public static let timeout = Code(rawValue: 9)
        public static let wouldDeadlock = Code(rawValue: 10)
        public static let alreadyCompleted = Code(rawValue: 11)
        public static let alreadyInitialized = Code(rawValue: 12)
        public static let forked = Code(rawValue: 13)
        public static let shutdown = Code(rawValue: 14)
        public static let toolFailed = Code(rawValue: 15)
        public static let scriptExhausted = Code(rawValue: 16)
        public static let resourceExhausted = Code(rawValue: 17)
        public static let invalidOutput = Code(rawValue: 18)
        public static let hookAborted = Code(rawValue: 19)
        public static let providerAuth = Code(rawValue: 32)
        public static let providerInvalidRequest = Code(rawValue: 33)
        public static let providerNotFound = Code(rawValue: 34)
        public static let providerRateLimited = Code(rawValue: 35)
        public static let providerOverloaded = Code(rawValue: 36)
        public static let providerServer = Code(rawValue: 37)
        public static let providerNetwork = Code(rawValue: 38)
        public static let providerMalformedStream = Code(rawValue: 39)

        private static let names: [UInt32: String] = [
            1: "NULL_ARG", 2: "INVALID_UTF8", 3: "INVALID_JSON", 4: "INVALID_ARG", 5: "INVALID_SCHEMA",
            6: "DUPLICATE_TOOL", 7: "PANIC", 8: "CANCELLED", 9: "TIMEOUT", 10: "WOULD_DEADLOCK",
            11: "ALREADY_COMPLETED", 12: "ALREADY_INITIALIZED", 13: "FORKED", 14: "SHUTDOWN",
            15: "TOOL_FAILED", 16: "SCRIPT_EXHAUSTED", 17: "RESOURCE_EXHAUSTED", 18: "INVALID_OUTPUT",
            19: "HOOK_ABORTED", 32: "PROVIDER_AUTH", 33: "PROVIDER_INVALID_REQUEST", 34: "PROVIDER_NOT_FOUND",
            35: "PROVIDER_RATE_LIMITED", 36: "PROVIDER_OVERLOADED", 37: "PROVIDER_SERVER",
            38: "PROVIDER_NETWORK", 39: "PROVIDER_MALFORMED_STREAM",
        ]

        /// The code's name, such as "INVALID_ARG", as run results spell it.
        public var name: String { Code.names[rawValue] ?? "CODE_\(rawValue)" }
        public var description: String { name }

        /// The code a run result names; nil for a name this package does not know.
        public init?(name: String) {
            guard let code = Code.names.first(where: { $0.value == name })?.key else { return nil }
            self.init(rawValue: code)
        }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// "CODE: message".
    public var description: String { "\(code.name): \(message)" }

    private enum Keys: String, CodingKey { case code, message }

    /// Reads `{"code": "NAME", "message"}`; a code this package does not know
    /// yet is code 0 and keeps its name at the front of the message.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let name = try container.decode(String.self, forKey: .code)
        let message = try container.decodeIfPresent(String.self, forKey: .message) ?? ""
        if let code = Code(name: name) {
            self.init(code: code, message: message)
        } else {
            self.init(code: Code(rawValue: 0), message: "\(name): \(message)")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(code.name, forKey: .code)
        try container.encode(message, forKey: .message)
    }

    /// Takes ownership of an error a C function returned: nil for NULL, else
    /// the error, the C one freed.
    static func take(_ error: OpaquePointer?) -> FerruleError? {
        guard let error else { return nil }
        defer { ferrule_error_free(error) }
        return FerruleError(code: Code(rawValue: ferrule_error_code(error)),
                            message: String(borrowed: ferrule_error_message(error)))
    }

    /// Throws the error a C function returned, if any.
    static func check(_ error: OpaquePointer?) throws {
        if let failure = take(error) { throw failure }
    }
}
