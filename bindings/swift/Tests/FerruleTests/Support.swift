import Foundation
import XCTest

@testable import Ferrule

/// A scripted model's turn asking for calls: `[(id, name, arguments)]`.
func callTurn(_ calls: [(String, String, JSONValue)], text: String? = nil) -> JSONValue {
    var turn: [String: JSONValue] = [
        "tool_calls": .array(calls.map { ["id": .string($0.0), "name": .string($0.1), "arguments": $0.2] })
    ]
    if let text { turn["text"] = .string(text) }
    return .object(turn)
}

/// A scripted model's answering turn.
func answerTurn(_ text: String) -> JSONValue { ["text": .string(text)] }

/// A configuration on the scripted model, without built-in tools.
func scripted(_ turns: [JSONValue]) -> AgentConfig {
    AgentConfig(model: .scripted(turns), builtinTools: BuiltinTools.none)
}

/// An object whose release a test watches through a weak reference.
final class Witness: Sendable {}

/// A flag a tool or hook raises for the test to see, from any task.
final class Flag: Sendable {
    private let raised = Locked(false)

    func raise() { raised.withLock { $0 = true } }
    var isRaised: Bool { raised.withLock { $0 } }

    /// Waits until raised (at most 10 s).
    func wait() async {
        for _ in 0..<10_000 where !isRaised { try? await Task.sleep(nanoseconds: 1_000_000) }
    }
}

/// The echo tool of these tests: returns its `text` argument.
let echoSchema: JSONValue = ["type": "object", "properties": ["text": ["type": "string"]], "required": ["text"]]

func echoTool(options: ToolOptions = ToolOptions()) -> Tool {
    Tool(name: "echo", description: "Echoes its text.", schema: echoSchema, options: options) { call in
        ToolResult(text: call.arguments["text"]?.stringValue ?? "")
    }
}

/// A tool that waits until its task is cancelled, raising `started` first.
func waitingTool(started: Flag, cancelled: Flag) -> Tool {
    Tool(name: "wait", description: "Waits.") { _ in
        started.raise()
        await waitForCancellation()
        cancelled.raise()
        return "stopped"
    }
}
