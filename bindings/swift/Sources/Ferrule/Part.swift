import Foundation

extension Part {
    /// An inline image.
    public static func image(mediaType: String, data: Data) -> Part {
        .image(mediaType: mediaType, base64: data.base64EncodedString(), url: nil)
    }

    /// A document.
    public static func file(mediaType: String, data: Data, name: String? = nil) -> Part {
        .file(mediaType: mediaType, base64: data.base64EncodedString(), name: name)
    }

    /// Text as content: one text part, none for no text.
    static func parts(_ text: String) -> [Part] { text.isEmpty ? [] : [.text(text)] }

    /// The bytes of an image or file part: its base64 read with or without
    /// padding, in the standard or the URL alphabet; nil for other parts and for
    /// text that is not base64.
    public var data: Data? {
        switch self {
        case .image(_, let base64?, _), .file(_, let base64, _): Data(lenientBase64: base64)
        default: nil
        }
    }
}

extension Array where Element == Part {
    /// The text parts, joined.
    var text: String {
        reduce(into: "") { joined, part in
            if case .text(let text, _) = part { joined += text }
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
