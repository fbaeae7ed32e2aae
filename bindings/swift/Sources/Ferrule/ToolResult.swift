/// A tool's result: content for the model, and what never reaches it (details
/// and display fields for the host's UI). A string literal is a text result.
public struct ToolResult: Sendable, Hashable, Codable, ExpressibleByStringLiteral {
    public var content: [Part]
    /// The model sees the result as an error.
    public var isError: Bool
    /// Asks the run to end after this batch (only when every call of the batch asks).
    public var terminate: Bool
    /// Structured data for the host; never sent to the model.
    public var details: JSONValue?
    public var display: String?
    public var title: String?
    public var summary: String?
    /// Tokens a tool's own model spent.
    public var usage: Usage?
    /// Deferred tools this result discloses to the model.
    public var addedTools: [String]
    /// Result JSON sent as it is, in place of the fields above.
    private var rawJSON: String?

    public init(
        content: [Part], isError: Bool = false, terminate: Bool = false, details: JSONValue? = nil,
        display: String? = nil, title: String? = nil, summary: String? = nil, usage: Usage? = nil,
        addedTools: [String] = []
    ) {
        self.content = content
        self.isError = isError
        self.terminate = terminate
        self.details = details
        self.display = display
        self.title = title
        self.summary = summary
        self.usage = usage
        self.addedTools = addedTools
    }

    /// A text result.
    public init(text: String, isError: Bool = false) { self.init(content: [.text(text)], isError: isError) }

    public init(stringLiteral text: String) { self.init(text: text) }

    /// A result given as ferrule's result JSON (a JSON string, or an object
    /// `{"content", "is_error", "terminate", "details", ...}`), passed on byte
    /// for byte; ferrule checks it.
    public static func json(_ text: String) -> ToolResult {
        var result = ToolResult(content: [])
        result.rawJSON = text
        return result
    }

    /// The result's text parts, joined.
    public var text: String { content.text }

    /// The result JSON ferrule takes. Throws for a NaN or an infinity in `details`.
    func resultJSON() throws -> String {
        if let rawJSON { return rawJSON }
        return try JSONCoding.text(self)
    }

    private enum Keys: String, CodingKey {
        case content, terminate, details, display, title, summary, usage
        case isError = "is_error", addedTools = "added_tools"
    }

    public init(from decoder: Decoder) throws {
        if let text = try? String(from: decoder) {
            self.init(text: text)
            return
        }
        let c = try decoder.container(keyedBy: Keys.self)
        let content: [Part]
        if let text = try? c.decode(String.self, forKey: .content) {
            content = [.text(text)]
        } else {
            content = try c.decodeIfPresent([Part].self, forKey: .content) ?? []
        }
        self.init(
            content: content, isError: try c.decodeIfPresent(Bool.self, forKey: .isError) ?? false,
            terminate: try c.decodeIfPresent(Bool.self, forKey: .terminate) ?? false,
            details: try c.decodeIfPresent(JSONValue.self, forKey: .details),
            display: try c.decodeIfPresent(String.self, forKey: .display),
            title: try c.decodeIfPresent(String.self, forKey: .title),
            summary: try c.decodeIfPresent(String.self, forKey: .summary),
            usage: try c.decodeIfPresent(Usage.self, forKey: .usage),
            addedTools: try c.decodeIfPresent([String].self, forKey: .addedTools) ?? [])
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(content, forKey: .content)
        if isError { try c.encode(isError, forKey: .isError) }
        if terminate { try c.encode(terminate, forKey: .terminate) }
        try c.encodeIfPresent(details, forKey: .details)
        try c.encodeIfPresent(display, forKey: .display)
        try c.encodeIfPresent(title, forKey: .title)
        try c.encodeIfPresent(summary, forKey: .summary)
        try c.encodeIfPresent(usage, forKey: .usage)
        if !addedTools.isEmpty { try c.encode(addedTools, forKey: .addedTools) }
    }
}
