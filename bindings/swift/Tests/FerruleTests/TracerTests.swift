import Foundation
import XCTest

@testable import Ferrule

final class TracerTests: XCTestCase {
    /// A run under the host's span reaches the tracer as spans under it, the
    /// tool is given its call's span and the hook the run's.
    func testSpansReachTheTracerUnderTheHostsSpan() async throws {
        let spans = Locked<[JSONValue]>([])
        try Library.setTracer { data in
            if let span = try? JSONValue(json: String(decoding: data, as: UTF8.self)) {
                spans.withLock { $0.append(span) }
            }
        }
        defer { Library.removeTracer() }
        let seen = Locked<String>("")
        let lookup = Tool(name: "lookup", description: "Looks up a plan.", schema: ["type": "object"]) { call in
            seen.withLock { $0 = call.traceparent }
            return ToolResult(text: "Gold")
        }
        let model = ModelConfig(
            provider: "scripted",
            script: [
                ["tool_calls": [["id": "c1", "name": "lookup", "arguments": [:]]]], ["text": "done"],
            ])
        let consulted = Locked<[String?]>([])
        let policy = Hook.onToolCall { _ in
            consulted.withLock { $0.append(Hook.traceparent) }
            return .proceed
        }
        let inline = Hook.onToolCallInline { _ in
            consulted.withLock { $0.append(Hook.traceparent) }
            return .proceed
        }
        let agent = try Agent(
            config: AgentConfig(model: model, name: "support"), tools: [lookup], hooks: [policy, inline])
        let input = RunInput.prompt("go").withTraceContext(
            traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        let result = try await agent.run(input)
        XCTAssertEqual(result.status, .completed, "\(result)")
        var named: [String: JSONValue] = [:]
        for _ in 0..<1000 {
            named = Dictionary(
                spans.withLock { $0 }.compactMap { span in span["name"]?.stringValue.map { ($0, span) } },
                uniquingKeysWith: { first, _ in first })
            if named["invoke_agent support"] != nil { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        let run = try XCTUnwrap(named["invoke_agent support"])
        let tool = try XCTUnwrap(named["execute_tool lookup"])
        XCTAssertEqual(run["parent_span_id"], "b7ad6b7169203331")
        XCTAssertEqual(run["trace_id"], "0af7651916cd43dd8448eb211c80319c")
        XCTAssertEqual(tool["parent_span_id"], run["span_id"])
        let toolSpan = tool["span_id"]?.stringValue ?? ""
        XCTAssertEqual(seen.withLock { $0 }, "00-0af7651916cd43dd8448eb211c80319c-\(toolSpan)-01")
        let runSpan = run["span_id"]?.stringValue ?? ""
        let underRun = "00-0af7651916cd43dd8448eb211c80319c-\(runSpan)-01"
        XCTAssertEqual(consulted.withLock { $0 }, [underRun, underRun])
        XCTAssertNil(Hook.traceparent, "outside a hook")
    }
}
