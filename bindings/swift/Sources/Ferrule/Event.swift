import Foundation

/// One event of a run, in order (docs/json.md, "Events"). Types added to ferrule later
/// arrive as `.unknown`.
public enum Event: Sendable {
    case runStart
    case turnStart(turn: Int)
    /// A piece of streamed text or reasoning.
    case messageDelta(turn: Int, text: String, thinking: String)
    /// A piece of a streamed tool call.
    case toolCallDelta(turn: Int, index: Int, id: String?, name: String?, argumentsDelta: String)
    /// A complete assistant message.
    case messageEnd(turn: Int, message: Message)
    /// A call begins (invalid calls too).
    case toolExecutionStart(call: ToolCallRequest)
    /// A provisional result; it never reaches the model.
    case toolExecutionUpdate(callID: String, name: String, partial: ToolResult)
    /// A call's final result, as the transcript records it.
    case toolExecutionEnd(callID: String, name: String, result: ToolResult, isError: Bool)
    /// A failed model request is tried again after `delayMs`.
    case retry(attempt: Int, error: FerruleError, delayMs: Int)
    /// A message entered the transcript from outside the model (`Run.inject`,
    /// or a turn start hook).
    case messageInjected(message: Message)
    /// A request left out the oldest messages to stay within the history
    /// budget; the transcript keeps them.
    case historyCompacted(turn: Int, dropped: Int)
    case turnEnd(turn: Int)
    /// Always the last event of a run.
    case runEnd(status: Status, result: RunResult)
    /// An event of a type this package does not know yet, with its JSON.
    case unknown(type: String, json: JSONValue)

    /// The event's type name, as the event JSON spells it ("run_start").
    public var type: String {
        switch self {
        case .runStart: "run_start"
        case .turnStart: "turn_start"
        case .messageDelta: "message_delta"
        case .toolCallDelta: "tool_call_delta"
        case .messageEnd: "message_end"
        case .toolExecutionStart: "tool_execution_start"
        case .toolExecutionUpdate: "tool_execution_update"
        case .toolExecutionEnd: "tool_execution_end"
        case .retry: "retry"
        case .messageInjected: "message_injected"
        case .historyCompacted: "history_compacted"
        case .turnEnd: "turn_end"
        case .runEnd: "run_end"
        case .unknown(let type, _): type
        }
    }
}

extension Event {
    /// Reads one event's JSON; one that does not decode is `.unknown`.
    init(json data: Data) {
        do {
            self = try JSONCoding.decode(WireEvent.self, from: data).event
        } catch {
            let value = (try? JSONCoding.decode(JSONValue.self, from: data)) ?? .null
            self = .unknown(type: value["type"]?.stringValue ?? "", json: value)
        }
    }
}

extension Event: Encodable {
    /// Writes the event JSON as ferrule does (without the run's id, which the
    /// event does not keep); an unknown event writes the JSON it came with.
    public func encode(to encoder: Encoder) throws {
        if case .unknown(_, let json) = self { return try json.encode(to: encoder) }
        try WireEvent(event: self).encode(to: encoder)
    }
}

/// The event JSON, by its type.
private struct WireEvent: Codable {
    let event: Event

    private enum Keys: String, CodingKey {
        case type, turn, text, thinking, index, id, name, message, call, partial, result, attempt, error, status
        case dropped
        case argumentsDelta = "arguments_delta", callID = "call_id", isError = "is_error", delayMs = "delay_ms"
    }

    init(event: Event) {
        self.event = event
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        let type = try c.decode(String.self, forKey: .type)
        let turn = { try c.decode(Int.self, forKey: .turn) }
        switch type {
        case "run_start":
            event = .runStart
        case "turn_start":
            event = .turnStart(turn: try turn())
        case "message_delta":
            event = .messageDelta(
                turn: try turn(), text: try c.decodeIfPresent(String.self, forKey: .text) ?? "",
                thinking: try c.decodeIfPresent(String.self, forKey: .thinking) ?? "")
        case "tool_call_delta":
            event = .toolCallDelta(
                turn: try turn(), index: try c.decode(Int.self, forKey: .index),
                id: try c.decodeIfPresent(String.self, forKey: .id),
                name: try c.decodeIfPresent(String.self, forKey: .name),
                argumentsDelta: try c.decodeIfPresent(String.self, forKey: .argumentsDelta) ?? "")
        case "message_end":
            event = .messageEnd(turn: try turn(), message: try c.decode(Message.self, forKey: .message))
        case "tool_execution_start":
            event = .toolExecutionStart(call: try c.decode(ToolCallRequest.self, forKey: .call))
        case "tool_execution_update":
            event = .toolExecutionUpdate(
                callID: try c.decode(String.self, forKey: .callID),
                name: try c.decode(String.self, forKey: .name),
                partial: try c.decode(ToolResult.self, forKey: .partial))
        case "tool_execution_end":
            event = .toolExecutionEnd(
                callID: try c.decode(String.self, forKey: .callID),
                name: try c.decode(String.self, forKey: .name),
                result: try c.decode(ToolResult.self, forKey: .result),
                isError: try c.decodeIfPresent(Bool.self, forKey: .isError) ?? false)
        case "retry":
            event = .retry(
                attempt: try c.decode(Int.self, forKey: .attempt),
                error: try c.decode(FerruleError.self, forKey: .error),
                delayMs: try c.decodeIfPresent(Int.self, forKey: .delayMs) ?? 0)
        case "message_injected":
            event = .messageInjected(message: try c.decode(Message.self, forKey: .message))
        case "history_compacted":
            event = .historyCompacted(turn: try turn(), dropped: try c.decode(Int.self, forKey: .dropped))
        case "turn_end":
            event = .turnEnd(turn: try turn())
        case "run_end":
            event = .runEnd(
                status: try c.decode(Status.self, forKey: .status),
                result: try c.decode(RunResult.self, forKey: .result))
        default:
            event = .unknown(type: type, json: try JSONValue(from: decoder))
        }
    }
}

extension WireEvent {
    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(event.type, forKey: .type)
        switch event {
        case .runStart, .unknown:
            break
        case .turnStart(let turn), .turnEnd(let turn):
            try c.encode(turn, forKey: .turn)
        case .messageDelta(let turn, let text, let thinking):
            try c.encode(turn, forKey: .turn)
            if !text.isEmpty { try c.encode(text, forKey: .text) }
            if !thinking.isEmpty { try c.encode(thinking, forKey: .thinking) }
        case .toolCallDelta(let turn, let index, let id, let name, let argumentsDelta):
            try c.encode(turn, forKey: .turn)
            try c.encode(index, forKey: .index)
            try c.encodeIfPresent(id, forKey: .id)
            try c.encodeIfPresent(name, forKey: .name)
            try c.encode(argumentsDelta, forKey: .argumentsDelta)
        case .messageEnd(let turn, let message):
            try c.encode(turn, forKey: .turn)
            try c.encode(message, forKey: .message)
        case .toolExecutionStart(let call):
            try c.encode(call, forKey: .call)
        case .toolExecutionUpdate(let callID, let name, let partial):
            try c.encode(callID, forKey: .callID)
            try c.encode(name, forKey: .name)
            try c.encode(partial, forKey: .partial)
        case .toolExecutionEnd(let callID, let name, let result, let isError):
            try c.encode(callID, forKey: .callID)
            try c.encode(name, forKey: .name)
            try c.encode(result, forKey: .result)
            try c.encode(isError, forKey: .isError)
        case .retry(let attempt, let error, let delayMs):
            try c.encode(attempt, forKey: .attempt)
            try c.encode(error, forKey: .error)
            try c.encode(delayMs, forKey: .delayMs)
        case .messageInjected(let message):
            try c.encode(message, forKey: .message)
        case .historyCompacted(let turn, let dropped):
            try c.encode(turn, forKey: .turn)
            try c.encode(dropped, forKey: .dropped)
        case .runEnd(let status, let result):
            try c.encode(status, forKey: .status)
            try c.encode(result, forKey: .result)
        }
    }
}
