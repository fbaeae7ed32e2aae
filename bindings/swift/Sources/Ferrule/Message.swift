import Foundation

extension Message {
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
}
