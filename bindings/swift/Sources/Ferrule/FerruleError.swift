import CFerrule

/// Every error ferrule reports: thrown by a call of this package, or inside a
/// failed run's `RunResult.error`. Match on `code`.
public struct FerruleError: Error, Sendable, Hashable, CustomStringConvertible, Codable {
    /// A stable error code (`FERRULE_ERROR_*` in ferrule.h); its numbers never
    /// change. The codes themselves are generated (ErrorCodes_gen.swift).
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

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
        return FerruleError(
            code: Code(rawValue: ferrule_error_code(error)),
            message: String(borrowed: ferrule_error_message(error)))
    }

    /// Throws the error a C function returned, if any.
    static func check(_ error: OpaquePointer?) throws {
        if let failure = take(error) { throw failure }
    }
}
