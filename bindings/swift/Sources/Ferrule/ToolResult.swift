/// A tool's result: its fields are generated (Records_gen.swift); a string
/// literal is a text result, and `json(_:)` passes result JSON on as it is.
extension ToolResult: ExpressibleByStringLiteral {
    /// A text result.
    public init(text: String, isError: Bool = false) { self.init(content: [.text(text)], isError: isError) }

    public init(stringLiteral text: String) { self.init(text: text) }

    /// A result given as ferrule's result JSON (a JSON string, or an object
    /// `{"content", "is_error", "terminate", "details", ...}`), passed on byte
    /// for byte; ferrule checks it.
    public static func json(_ text: String) -> ToolResult {
        var result = ToolResult()
        result.rawJSON = text
        return result
    }

    /// The result's text parts, joined.
    public var text: String { content.text }

    /// The result JSON ferrule takes. Throws for a NaN or an infinity in `details`.
    func resultJSON() throws -> String {
        if let rawJSON { return rawJSON }
        if let text = plainText { return JSONCoding.quoted(text) }
        return try JSONCoding.text(self)
    }

    /// The text of a result that is one plain text part and nothing else, which
    /// ferrule takes as a JSON string (written without `JSONEncoder`, whose
    /// cost was most of an inline tool's call).
    private var plainText: String? {
        guard content.count == 1, case .text(let text, signature: nil) = content[0], self == ToolResult(text: text)
        else { return nil }
        return text
    }
}
