import Foundation

/// A piece of message or tool result content.
public enum Part: Sendable, Hashable, Codable {
    case text(String)
    /// An image: inline bytes as base64 text (kept as ferrule gives it; `data`
    /// decodes it), or a URL the provider fetches.
    case image(mediaType: String?, base64: String?, url: String?)
    /// A document, such as a PDF, its bytes as base64 text.
    case file(mediaType: String, base64: String, name: String?)
    /// Reasoning, which goes back to the provider that made it.
    case thinking(String, signature: String?, id: String?)
    /// Reasoning the provider withheld: its opaque data.
    case redactedThinking(String)
    /// A part of a type this package does not know yet, as JSON.
    case other(JSONValue)

    /// An inline image.
    public static func image(mediaType: String, data: Data) -> Part {
        .image(mediaType: mediaType, base64: data.base64EncodedString(), url: nil)
    }

    /// A document.
    public static func file(mediaType: String, data: Data, name: String? = nil) -> Part {
        .file(mediaType: mediaType, base64: data.base64EncodedString(), name: name)
    }

    /// The bytes of an image or file part: its base64 read with or without
    /// padding, in the standard or the URL alphabet; nil for other parts and for
    /// text that is not base64.
    public var data: Data? {
        switch self {
        case .image(_, let base64?, _), .file(_, let base64, _): Data(lenientBase64: base64)
        default: nil
        }
    }

    private enum Keys: String, CodingKey {
        case type, text, data, url, name, thinking, signature, id
        case mediaType = "media_type"
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "text":
            self = .text(try container.decode(String.self, forKey: .text))
        case "image":
            self = .image(
                mediaType: try container.decodeIfPresent(String.self, forKey: .mediaType),
                base64: try container.decodeIfPresent(String.self, forKey: .data),
                url: try container.decodeIfPresent(String.self, forKey: .url))
        case "file":
            self = .file(
                mediaType: try container.decodeIfPresent(String.self, forKey: .mediaType) ?? "",
                base64: try container.decodeIfPresent(String.self, forKey: .data) ?? "",
                name: try container.decodeIfPresent(String.self, forKey: .name))
        case "thinking":
            self = .thinking(
                try container.decodeIfPresent(String.self, forKey: .thinking) ?? "",
                signature: try container.decodeIfPresent(String.self, forKey: .signature),
                id: try container.decodeIfPresent(String.self, forKey: .id))
        case "redacted_thinking":
            self = .redactedThinking(try container.decode(String.self, forKey: .data))
        default:
            self = .other(try JSONValue(from: decoder))
        }
    }

    public func encode(to encoder: Encoder) throws {
        if case .other(let value) = self {
            try value.encode(to: encoder)
            return
        }
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .text(let text):
            try container.encode("text", forKey: .type)
            try container.encode(text, forKey: .text)
        case .image(let mediaType, let base64, let url):
            try container.encode("image", forKey: .type)
            try container.encodeIfPresent(mediaType, forKey: .mediaType)
            try container.encodeIfPresent(base64, forKey: .data)
            try container.encodeIfPresent(url, forKey: .url)
        case .file(let mediaType, let base64, let name):
            try container.encode("file", forKey: .type)
            try container.encode(mediaType, forKey: .mediaType)
            try container.encode(base64, forKey: .data)
            try container.encodeIfPresent(name, forKey: .name)
        case .thinking(let thinking, let signature, let id):
            try container.encode("thinking", forKey: .type)
            try container.encode(thinking, forKey: .thinking)
            try container.encodeIfPresent(signature, forKey: .signature)
            try container.encodeIfPresent(id, forKey: .id)
        case .redactedThinking(let data):
            try container.encode("redacted_thinking", forKey: .type)
            try container.encode(data, forKey: .data)
        case .other:
            break
        }
    }
}

extension Array where Element == Part {
    /// The text parts, joined.
    var text: String {
        reduce(into: "") { joined, part in
            if case .text(let text) = part { joined += text }
        }
    }
}

extension Data {
    /// Reads base64 with or without padding, in the standard or the URL
    /// alphabet: ferrule passes data on as the tool or provider gave it.
    init?(lenientBase64 text: String) {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        self.init(base64Encoded: standard)
    }
}
