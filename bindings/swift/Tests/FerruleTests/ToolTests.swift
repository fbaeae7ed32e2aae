import Foundation
import XCTest

@testable import Ferrule

final class ToolTests: XCTestCase {
    struct Lookup: Decodable {
        let customerID: String; enum CodingKeys: String, CodingKey { case customerID = "customer_id" }
    }

    func testATypedToolGetsItsArgumentsAndEveryKindOfResultArrives() async throws {
        let schema: JSONValue = [
            "type": "object", "properties": ["customer_id": ["type": "string"]],
            "required": ["customer_id"], "additionalProperties": false,
        ]
        let png = Data([0x89, 0x50, 0x4e, 0x47])
        let lookup = Tool(
            name: "lookup", description: "Looks a customer up.", schema: schema,
            arguments: Lookup.self
        ) { _, args in
            ToolResult(
                content: [.text("\(args.customerID) is gold"), .image(mediaType: "image/png", data: png)],
                details: ["plan": "gold", "since": 2019], title: "Lookup")
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "lookup", ["customer_id": "C-1"])]), answerTurn("Gold.")]),
            tools: [lookup])
        let run = try agent.start(.prompt("Plan of C-1?"))
        var ends: [(ToolResult, Bool)] = []
        for await event in run.events {
            if case .toolExecutionEnd(let id, let name, let result, let isError) = event {
                XCTAssertEqual([id, name], ["c1", "lookup"])
                ends.append((result, isError))
            }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(result.final?.text, "Gold.")
        XCTAssertEqual(ends.count, 1)
        XCTAssertEqual(ends.first?.0.details, ["plan": "gold", "since": 2019])
        XCTAssertEqual(ends.first?.0.title, "Lookup")
        XCTAssertEqual(ends.first?.1, false)
        let toolMessage = try XCTUnwrap(result.messages.first { $0.role == .tool })
        XCTAssertEqual(toolMessage.content, [.text("C-1 is gold"), .image(mediaType: "image/png", data: png)])
    }

    struct Refusal: LocalizedError { var errorDescription: String? { "the ledger is closed" } }

    func testAThrownErrorAndArgumentsThatDoNotFitBecomeErrorResults() async throws {
        let throwing = Tool(name: "ledger", description: "Fails.") { _ in throw Refusal() }
        let strictType = Tool(
            name: "lookup", description: "Typed.", schema: ["type": "object"],
            arguments: Lookup.self
        ) { _, _ in "unreachable" }
        let agent = try Agent(
            config: scripted([
                callTurn([("c1", "ledger", [:]), ("c2", "lookup", ["id": 7])]), answerTurn("Sorry."),
            ]), tools: [throwing, strictType])
        let result = try await agent.run(.prompt("Go."))
        let results = result.messages.filter { $0.role == .tool }
        XCTAssertEqual(results.map(\.isError), [true, true])
        XCTAssertEqual(results.first?.text, "the ledger is closed")
        XCTAssertTrue(results.last?.text.contains("the arguments do not fit") ?? false, results.last?.text ?? "")
    }

    func testProgressUpdatesArriveInOrderAndEndWithTheCall() async throws {
        let calls = Locked<ToolCall?>(nil)
        let progress = Tool(name: "work", description: "Reports progress.") { call in
            for step in 1...3 { try call.update(ToolResult(text: "step \(step)")) }
            calls.withLock { $0 = call }
            return "done"
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "work", [:])]), answerTurn("OK.")]), tools: [progress])
        let run = try agent.start(.prompt("Work."))
        var updates: [String] = []
        for await event in run.events {
            if case .toolExecutionUpdate(_, _, let partial) = event { updates.append(partial.text) }
        }
        XCTAssertEqual(updates, ["step 1", "step 2", "step 3"])
        let status = try await run.result.status
        XCTAssertEqual(status, .completed)
        let call = try XCTUnwrap(calls.withLock { $0 })
        XCTAssertThrowsError(try call.update("late")) { error in
            XCTAssertEqual((error as? FerruleError)?.code, .alreadyCompleted)
        }
        XCTAssertTrue(call.isCancelled, "a completed call reads as cancelled")
    }

    func testATimeoutCancelsTheToolsTask() async throws {
        let sawCancellation = Flag()
        let slow = Tool(name: "slow", description: "Sleeps.", options: ToolOptions(timeoutMs: 50)) { _ in
            do {
                try await Task.sleep(nanoseconds: 30_000_000_000)
            } catch is CancellationError {
                sawCancellation.raise()
                throw CancellationError()
            }
            return "woke up"
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "slow", [:])]), answerTurn("Too slow.")]), tools: [slow])
        let result = try await agent.run(.prompt("Sleep."))
        XCTAssertEqual(result.status, .completed)
        let toolMessage = try XCTUnwrap(result.messages.first { $0.role == .tool })
        XCTAssertTrue(toolMessage.isError)
        XCTAssertTrue(toolMessage.text.contains("timed out"), toolMessage.text)
        await sawCancellation.wait()
        XCTAssertTrue(sawCancellation.isRaised)
    }

    func testToolsAreReleasedOnceTheAgentAndItsRunsAreGone() async throws {
        weak var kept: Witness?
        weak var refused: Witness?
        try await {
            let witness = Witness()
            kept = witness
            let tool = Tool(name: "echo", description: "Keeps a witness.", schema: echoSchema) { call in
                _ = witness
                return ToolResult(text: call.arguments["text"]?.stringValue ?? "")
            }
            let second = Witness()
            refused = second
            let duplicate = Tool(name: "echo", description: "Refused.") { _ in
                _ = second
                return ""
            }
            XCTAssertThrowsError(try Agent(config: scripted([]), tools: [echoTool(), duplicate])) { error in
                XCTAssertEqual((error as? FerruleError)?.code, .duplicateTool)
            }
            let agent = try Agent(
                config: scripted([callTurn([("c1", "echo", ["text": "hi"])]), answerTurn("Done.")]),
                tools: [tool])
            let result = try await agent.run(.prompt("Echo."))
            XCTAssertEqual(result.status, .completed)
        }()
        XCTAssertNil(refused, "the refused tool was released")
        // The result came once the run let go of the tools; the agent went after.
        XCTAssertNil(kept, "the tool was released with the agent")
    }

    func testAResultJSONCannotWriteIsRefusedAndFailsTheCall() async throws {
        let refusal = Locked<Error?>(nil)
        let tool = Tool(name: "ratio", description: "Reports NaN.") { call in
            do {
                try call.update(ToolResult(content: [.text("50%")], details: ["ratio": .number(.nan)]))
            } catch {
                refusal.withLock { $0 = error }
            }
            return ToolResult(content: [.text("done")], details: ["ratio": .number(.infinity)])
        }
        let agent = try Agent(config: scripted([callTurn([("c1", "ratio", [:])]), answerTurn("OK.")]), tools: [tool])
        let result = try await agent.run(.prompt("Go."))
        XCTAssertNotNil(refusal.withLock { $0 }, "the update was refused before reaching ferrule")
        let toolMessage = try XCTUnwrap(result.messages.first { $0.role == .tool })
        XCTAssertTrue(toolMessage.isError)
    }
}
