import Foundation

/// One message of a transcript, in ferrule's provider-neutral form.
public struct Message: Sendable, Hashable, Codable {
    /// Who speaks.
    public enum Role: String, Sendable, Codable {
        case system, user, assistant, tool
    }

    public var role: Role
    public var content: [Part]
    /// An assistant's calls.
    public var toolCalls: [ToolCallRequest]
    /// A tool result's call id and tool name.
    public var toolCallID: String?
    public var name: String?
    /// Whether a tool result is an error.
    public var isError: Bool
    /// Why an assistant message ended ("stop", "tool_use", "length"...).
    public var stopReason: String?
    /// An assistant message's token counts.
    public var usage: Usage?
    /// Where a user or system message came from when not from the run's input:
    /// "injection" (`Run.inject`, or a turn start hook).
    public var origin: String?

    public init(
        role: Role, content: [Part], toolCalls: [ToolCallRequest] = [], toolCallID: String? = nil,
        name: String? = nil, isError: Bool = false, stopReason: String? = nil, usage: Usage? = nil,
        origin: String? = nil
    ) {
        self.role = role
        self.content = content
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
        self.name = name
        self.isError = isError
        self.stopReason = stopReason
        self.usage = usage
        self.origin = origin
    }

    /// A user message of plain text.
    public static func user(_ text: String) -> Message { Message(role: .user, content: [.text(text)]) }

    /// A system message.
    public static func system(_ text: String) -> Message { Message(role: .system, content: [.text(text)]) }

    /// An assistant message, such as one of the host's own model for `RunInput.execute`.
    public static func assistant(_ text: String, toolCalls: [ToolCallRequest] = []) -> Message {
        Message(role: .assistant, content: text.isEmpty ? [] : [.text(text)], toolCalls: toolCalls)
    }

    /// The message's text parts, joined.
    public var text: String { content.text }

    private enum Keys: String, CodingKey {
        case role, content, name, usage, origin
        case toolCalls = "tool_calls", toolCallID = "tool_call_id", isError = "is_error", stopReason = "stop_reason"
    }

    /// Reads the message JSON; content given as a string becomes one text part.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        role = try container.decode(Role.self, forKey: .role)
        if let text = try? container.decode(String.self, forKey: .content) {
            content = [.text(text)]
        } else {
            content = try container.decodeIfPresent([Part].self, forKey: .content) ?? []
        }
        toolCalls = try container.decodeIfPresent([ToolCallRequest].self, forKey: .toolCalls) ?? []
        toolCallID = try container.decodeIfPresent(String.self, forKey: .toolCallID)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        isError = try container.decodeIfPresent(Bool.self, forKey: .isError) ?? false
        stopReason = try container.decodeIfPresent(String.self, forKey: .stopReason)
        usage = try container.decodeIfPresent(Usage.self, forKey: .usage)
        origin = try container.decodeIfPresent(String.self, forKey: .origin)
    }

    /// Writes the message JSON: a system message's content is its text; a tool
    /// result always has its call id, name and error flag.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(role, forKey: .role)
        if role == .system {
            try container.encode(text, forKey: .content)
        } else {
            try container.encode(content, forKey: .content)
        }
        if role == .tool {
            try container.encode(toolCallID ?? "", forKey: .toolCallID)
            try container.encode(name ?? "", forKey: .name)
            try container.encode(isError, forKey: .isError)
            return
        }
        if !toolCalls.isEmpty { try container.encode(toolCalls, forKey: .toolCalls) }
        try container.encodeIfPresent(stopReason, forKey: .stopReason)
        try container.encodeIfPresent(usage, forKey: .usage)
        try container.encodeIfPresent(origin, forKey: .origin)
    }
}
