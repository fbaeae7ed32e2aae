import Foundation
import XCTest

@testable import Ferrule

final class ApprovalTests: XCTestCase {
    func testInterruptResumeInANewAgentAndAlways() async throws {
        let ran = Locked<[String]>([])
        let makeAgent = {
            try Agent(
                config: scripted([
                    callTurn([("c1", "delete", ["text": "a"]), ("c2", "echo", ["text": "b"])]),
                    callTurn([("c3", "delete", ["text": "c"])]),
                    answerTurn("Done."),
                ]),
                tools: [
                    Tool(
                        name: "delete", description: "Deletes.", schema: echoSchema,
                        options: ToolOptions(needsApproval: true)
                    ) { call in
                        ran.withLock { $0.append(call.id) }
                        return "deleted"
                    },
                    echoTool(),
                ])
        }
        let first = try await makeAgent().run(.prompt("Delete a."))
        XCTAssertEqual(first.status, .interrupted)
        XCTAssertEqual(first.interruptions.map(\.callID), ["c1"])
        XCTAssertEqual(first.interruptions.first?.arguments, ["text": "a"])
        XCTAssertTrue(ran.withLock { $0 }.isEmpty, "nothing of the batch ran")
        let state = try XCTUnwrap(first.stateJSON)
        // The state is plain JSON: it goes to a file and back, and on to another agent.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("ferrule-state-\(UUID()).json")
        try state.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let missing = try makeAgent()
        XCTAssertThrowsError(try missing.start(.resume(stateJSON: try Data(contentsOf: file), decisions: [:]))) {
            error in
            XCTAssertEqual((error as? FerruleError)?.code, .invalidArg)
            XCTAssertTrue((error as? FerruleError)?.message.contains("c1") ?? false, "\(error)")
        }
        let resumed = try await makeAgent().run(
            .resume(
                stateJSON: try Data(contentsOf: file),
                decisions: ["c1": .approved(always: true)]))
        XCTAssertEqual(resumed.status, .completed, "\(String(describing: resumed.error))")
        XCTAssertNil(resumed.state)
        XCTAssertEqual(ran.withLock { $0 }, ["c1", "c3"], "always approved the later call too")
        XCTAssertEqual(resumed.rounds, 3)
    }

    func testARejectedCallTellsTheModelWhy() async throws {
        let agent = try Agent(
            config: scripted([callTurn([("c1", "echo", ["text": "x"])]), answerTurn("OK.")]),
            tools: [echoTool(options: ToolOptions(needsApproval: true))])
        let first = try await agent.run(.prompt("Echo."))
        let second = try await agent.run(
            .resume(
                state: try XCTUnwrap(first.state),
                decisions: ["c1": .rejected("Not today.")]))
        let toolMessage = try XCTUnwrap(second.messages.first { $0.role == .tool })
        XCTAssertTrue(toolMessage.isError)
        XCTAssertEqual(toolMessage.text, "Not today.")
    }
}
