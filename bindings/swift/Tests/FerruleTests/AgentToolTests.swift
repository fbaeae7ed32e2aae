import Foundation
import XCTest

@testable import Ferrule

final class AgentToolTests: XCTestCase {
    /// A worker whose model calls `delete` (needing approval when `careful`),
    /// then answers; `deleted` counts the deletions.
    func worker(careful: Bool, deleted: Locked<Int>) throws -> Agent {
        try Agent(
            config: scripted([
                callTurn([("d1", "delete", ["text": "old"])]),
                answerTurn("worker done"),
            ]),
            tools: [
                Tool(
                    name: "delete", description: "Deletes.", schema: echoSchema,
                    options: ToolOptions(needsApproval: careful)
                ) { _ in
                    deleted.withLock { $0 += 1 }
                    return "deleted"
                }
            ])
    }

    /// A boss whose model calls the worker, then answers.
    func boss(_ worker: Agent) throws -> Agent {
        try Agent(
            config: scripted([callTurn([("c1", "worker", ["input": "clean up"])]), answerTurn("boss done")]),
            agents: [.tool("worker", description: "Cleans up.", agent: worker)])
    }

    func testACalledAgentsEventsArriveWrappedInsideItsCall() async throws {
        let deleted = Locked(0)
        let run = try boss(try worker(careful: false, deleted: deleted)).start(.prompt("Go."))
        var inside = false
        var nested: [Event] = []
        for await event in run.events {
            switch event {
            case .toolExecutionStart: inside = true
            case .toolExecutionEnd: inside = false
            case .agentEvent(let callID, let agent, let depth, let event):
                XCTAssertTrue(inside, "a nested event outside its call")
                XCTAssertEqual([callID, agent], ["c1", "worker"])
                XCTAssertEqual(depth, 1)
                nested.append(event)
            default: break
            }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(deleted.withLock { $0 }, 1)
        XCTAssertEqual(nested.first?.type, "run_start")
        guard case .runEnd(let status, _, _) = nested.last else { return XCTFail("\(nested)") }
        XCTAssertEqual(status, .completed)
    }

    func testAnApprovalInsideAnAgentResumesByItsKey() async throws {
        let deleted = Locked(0)
        let first = try await boss(try worker(careful: true, deleted: deleted)).run(.prompt("Go."))
        XCTAssertEqual(first.status, .interrupted)
        let waiting = try XCTUnwrap(first.interruptions.first)
        XCTAssertEqual(waiting.key, "c1/d1")
        XCTAssertEqual(waiting.path, ["c1"])
        XCTAssertEqual(waiting.agent, "worker")
        let resumed = try await boss(try worker(careful: true, deleted: deleted)).run(
            .resume(stateJSON: try XCTUnwrap(first.stateJSON), decisions: [waiting.key: .approved()]))
        XCTAssertEqual(resumed.status, .completed, "\(String(describing: resumed.error))")
        XCTAssertEqual(deleted.withLock { $0 }, 1)
    }

    func testAHandoffHandsTheRunOn() async throws {
        let billing = try Agent(config: scripted([answerTurn("unused"), answerTurn("billing here")]))
        let front = try Agent(
            config: scripted([callTurn([("h1", "transfer_to_billing", [:])])]),
            agents: [
                .handoff(
                    "billing", description: "Billing.", agent: billing,
                    options: AgentToolOptions(handoffMessages: "without_tool_calls"))
            ])
        let run = try front.start(.prompt("My bill."))
        var handoffs: [String] = []
        for await event in run.events {
            if case .handoff(_, let callID, let to, _, _) = event { handoffs.append("\(callID)>\(to)") }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(result.agent, "billing")
        XCTAssertEqual(handoffs, ["h1>billing"])
    }

    func testABadAgentSpecIsRefused() throws {
        let child = try Agent(config: scripted([answerTurn("x")]))
        XCTAssertThrowsError(
            try Agent(config: scripted([answerTurn("x")]), agents: [.tool("bad name", description: "", agent: child)])
        ) { XCTAssertEqual(($0 as? FerruleError)?.code, .invalidArg) }
        XCTAssertThrowsError(
            try Agent(
                config: scripted([answerTurn("x")]),
                agents: [.tool("a", description: "", agent: child, options: AgentToolOptions(handoffMessages: "all!"))])
        ) { XCTAssertEqual(($0 as? FerruleError)?.code, .invalidArg) }
    }

    func testNestedEventsOfEveryShapeDecode() throws {
        let head = #""type": "agent_event", "run_id": "run-1", "call_id": "c1", "agent": "worker", "depth": 1"#
        let turnStart = #"{"type": "turn_start", "run_id": "run-3", "turn": 2}"#
        let deep = Event(json: Data(#"{\#(head), "event": {\#(head), "event": \#(turnStart)}}"#.utf8))
        guard case .agentEvent(_, _, _, .agentEvent(_, _, let depth, .turnStart(let turn))) = deep else {
            return XCTFail("\(deep)")
        }
        XCTAssertEqual([depth, turn], [1, 2])
        let unknown = Event(json: Data(#"{\#(head), "event": {"type": "later_kind", "run_id": "run-2"}}"#.utf8))
        guard case .agentEvent(_, _, _, .unknown(let type, _)) = unknown else { return XCTFail("\(unknown)") }
        XCTAssertEqual(type, "later_kind")
        guard case .unknown = Event(json: Data(#"{\#(head)}"#.utf8)) else { return XCTFail("no nested event") }
    }
}
