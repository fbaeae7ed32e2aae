import Foundation

/// Any JSON value: tool arguments, result details, hook payload pieces,
/// structured output. A whole number that fits in Int64 reads as `.integer`
/// (`1.0` too), so 64-bit ids survive a round trip; any other number reads as
/// `.number`, a Double. A whole `.number` beyond Int64 writes as a whole
/// number (at most UInt64.max), so that a saturated count in a run's state
/// stays a count. Objects do not keep their keys' order.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value) where value >= 0x1p63 && value <= 0x1p64 && value.rounded() == value:
            try container.encode(value >= 0x1p64 ? UInt64.max : UInt64(value))
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses JSON text.
    public init(json: String) throws {
        self = try JSONCoding.decode(JSONValue.self, from: Data(json.utf8))
    }

    /// The value as compact JSON text. Throws for a NaN or an infinity, which
    /// JSON cannot write.
    public func jsonText() throws -> String { try JSONCoding.text(self) }

    /// The value as compact JSON text; "null" for a value holding a NaN or an
    /// infinity (see `jsonText()`).
    public var json: String { (try? jsonText()) ?? "null" }

    /// The member `key` of an object; nil for anything else.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The items of an array; nil for anything else.
    public var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The text of a string; nil for anything else.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}

/// The package's one JSON configuration: keys as written (every Codable type
/// here names its snake_case keys), data as base64, no escaped slashes.
enum JSONCoding {
    static func encode<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try JSONDecoder().decode(type, from: data)
    }

    /// `value` as JSON text. Throws for a NaN or an infinity in it.
    static func text<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encode(value), as: UTF8.self)
    }

    /// `text` as a JSON string, escaped as `JSONEncoder` escapes it (quotes,
    /// backslashes and control characters; slashes are not).
    static func quoted(_ text: String) -> String {
        let plain = !text.utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
        if plain { return "\"" + text + "\"" }
        var quoted = "\""
        quoted.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            case "\u{08}": quoted += "\\b"
            case "\u{0C}": quoted += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                quoted += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
