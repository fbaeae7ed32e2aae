import Foundation
import XCTest

@testable import Ferrule

/// Inline tools (run inside ferrule's callback), hooks without the history,
/// and plain runs that ask for `run_end` alone.
final class InlineTests: XCTestCase {
    func testAnInlineToolRunsInTheCallbackAndCompletesItsCall() async throws {
        let inTask = Locked<[Bool]>([])
        let quick = Tool.inline(name: "quick", description: "Answers at once.") { call in
            inTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
            if call.id == "c2" { throw FerruleError(code: .invalidArg, message: "two is refused") }
            return ToolResult(text: "ok \(call.id)")
        }
        let agent = try Agent(
            config: scripted([
                callTurn([("c1", "quick", [:])]), callTurn([("c2", "quick", [:])]), answerTurn("Done."),
            ]), tools: [quick])
        let result = try await agent.run(.prompt("go"))
        XCTAssertEqual(result.status, .completed)
        let tools = result.messages.filter { $0.role == .tool }
        XCTAssertEqual(tools.map(\.text), ["ok c1", "two is refused"])
        XCTAssertEqual(tools.map(\.isError), [false, true])
        XCTAssertEqual(inTask.withLock { $0 }, [false, false], "the body ran in ferrule's callback, in no task")
    }

    // A plain text result is written without JSONEncoder: as JSONEncoder
    // writes it, and it reaches the transcript whole.
    func testAPlainTextResultIsWrittenAsJSONEncoderWritesIt() async throws {
        let texts = [
            "", "ok", "a \"quoted\" \\ back/slash", "lines\nand\ttabs\r", "\u{0}\u{1}\u{8}\u{c}\u{1f}\u{7f}",
            "é, 漢字, 🦀, \u{2028}", "\\u0041 is not an escape",
        ]
        for text in texts {
            let encoded = try JSONCoding.text(text)
            XCTAssertEqual(JSONCoding.quoted(text), encoded, text.debugDescription)
            XCTAssertEqual(try ToolResult(text: text).resultJSON(), encoded)
        }
        let failed = try ToolResult(text: "x", isError: true).resultJSON()
        XCTAssertNotEqual(failed, "\"x\"", "not plain text: encoded whole")
        let echo = Tool.inline(name: "echo", description: "Echoes.") { call in ToolResult(text: texts[Int(call.id)!]) }
        let calls = texts.indices.map { ("\($0)", "echo", JSONValue.object([:])) }
        let agent = try Agent(config: scripted([callTurn(calls), answerTurn("Done.")]), tools: [echo])
        let result = try await agent.run(.prompt("go"))
        XCTAssertEqual(result.messages.filter { $0.role == .tool }.map(\.text), texts)
    }

    // An inline hook decides inside ferrule's callback, in no task; its
    // decisions count and its error aborts the run, as a hook's in a task.
    func testAnInlineHookDecidesInTheCallback() async throws {
        let inTask = Locked<[Bool]>([])
        let deny = Hook.onToolCallInline(
            { payload in
                inTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
                return payload.call.arguments["text"] == "no" ? .deny("not that") : .proceed
            })
        try await assertDeniesTheSecondCall(deny)
        XCTAssertEqual(inTask.withLock { $0 }, [false, false], "the body ran in ferrule's callback, in no task")
        let refuse = Hook.onTurnStartInline({ _ in throw FerruleError(code: .invalidArg, message: "no turns") })
        let refused = try await Agent(config: scripted([answerTurn("Done.")]), hooks: [refuse]).run(.prompt("go"))
        XCTAssertEqual(refused.status, .failed)
        XCTAssertEqual(refused.error?.code, .hookAborted)
        XCTAssertEqual(refused.error?.message.contains("no turns"), true, "\(String(describing: refused.error))")
    }

    // A raw inline hook decides in the callback from the payload's JSON, which
    // it keeps past its response.
    func testARawInlineHookDecidesInTheCallbackAndKeepsItsPayload() async throws {
        let seen = Locked<[(inTask: Bool, payload: String)]>([])
        let deny = Hook.rawInline(stage: "tool_call") { payload in
            seen.withLock { $0.append((withUnsafeCurrentTask { $0 != nil }, payload)) }
            return payload.contains("\"c2\"") ? #"{"deny": "not that"}"# : "{}"
        }
        try await assertDeniesTheSecondCall(deny)
        let calls = seen.withLock { $0 }
        XCTAssertEqual(calls.map(\.inTask), [false, false], "the body ran in ferrule's callback, in no task")
        let ids = try calls.map { try JSONDecoder().decode(ToolCallPayload.self, from: Data($0.payload.utf8)).call.id }
        XCTAssertEqual(ids, ["c1", "c2"])
    }

    /// Runs two echo calls, "yes" (c1) and "no" (c2), under `deny`, which must
    /// deny the second with "not that".
    private func assertDeniesTheSecondCall(_ deny: Hook) async throws {
        let agent = try Agent(
            config: scripted([
                callTurn([("c1", "echo", ["text": "yes"]), ("c2", "echo", ["text": "no"])]), answerTurn("Done."),
            ]), tools: [echoTool()], hooks: [deny])
        let result = try await agent.run(.prompt("go"))
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(result.messages.filter { $0.role == .tool }.map(\.text), ["yes", "not that"])
    }

    // A hook body without `await` given to `.onToolCall` still runs in a task
    // (the inline form is a function of its own name).
    func testAHookWithASynchronousClosureStillRunsInATask() async throws {
        let inTask = Locked<[Bool]>([])
        let hook = Hook.onToolCall { _ in
            inTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
            return .proceed
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "echo", ["text": "a"])]), answerTurn("Done.")]),
            tools: [echoTool()], hooks: [hook])
        let status = try await agent.run(.prompt("go")).status
        XCTAssertEqual(status, .completed)
        XCTAssertEqual(inTask.withLock { $0 }, [true])
    }

    // A body without `await` given to `Tool(...)` still runs in a task (the
    // inline form is a function of its own name).
    func testAToolWithASynchronousClosureStillRunsInATask() async throws {
        let inTask = Locked<[Bool]>([])
        let plain = Tool(name: "plain", description: "Answers at once.") { _ in
            inTask.withLock { $0.append(withUnsafeCurrentTask { $0 != nil }) }
            return ToolResult(text: "ok")
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "plain", [:])]), answerTurn("Done.")]), tools: [plain])
        let result = try await agent.run(.prompt("go"))
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(inTask.withLock { $0 }, [true])
    }

    func testHooksWithoutHistorySeeTheCount() async throws {
        let seen = Locked<[[Int]]>([])
        let options = HookOptions(withoutHistory: true)
        let hooks: [Hook] = [
            .onRunStart(options: options) { payload in
                seen.withLock { $0.append([payload.messageCount, payload.messages.count]) }
                return .proceed
            },
            .onTurnStart(options: options) { payload in
                seen.withLock { $0.append([payload.messageCount, payload.messages.count]) }
                return .proceed
            },
        ]
        let agent = try Agent(
            config: scripted([callTurn([("c1", "echo", ["text": "a"])]), answerTurn("Done.")]),
            tools: [echoTool()], hooks: hooks)
        let result = try await agent.run(.prompt("go"))
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(seen.withLock { $0 }, [[1, 0], [1, 0], [3, 0]])
    }

    // Inline completions and inline hooks race the run's cancellation: every
    // run ends once, cancelled or completed.
    func testInlineCompletionsRaceCancel() async throws {
        let calls = Locked(0), consultations = Locked(0)
        let quick = Tool.inline(name: "quick", description: "Answers at once.") { _ in
            calls.withLock { $0 += 1 }
            return ToolResult(text: "ok")
        }
        let consult: @Sendable () -> Void = { consultations.withLock { $0 += 1 } }
        let hooks: [Hook] = [
            .onToolCallInline({ _ in
                consult()
                return .proceed
            }),
            .onToolResultInline({ _ in
                consult()
                return .proceed
            }),
        ]
        let agent = try quickPairAgent(rounds: 40, quick, hooks: hooks)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let run = try agent.start(.prompt("go"))
                    // Every fourth run goes to its end, so calls are made whatever the timing.
                    if i % 4 != 0 {
                        try await Task.sleep(nanoseconds: UInt64(i % 3) * 100_000)
                        run.cancel()
                    }
                    let status = try await run.result.status
                    XCTAssertTrue(status == .cancelled || status == .completed, "\(status)")
                    if i % 4 == 0 { XCTAssertEqual(status, .completed) }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertGreaterThan(calls.withLock { $0 }, 0)
        let consulted = consultations.withLock { $0 }
        XCTAssertGreaterThanOrEqual(consulted, calls.withLock { $0 }, "each call ran after its hook")
    }

    // Bursts of events race the run's end and its cancellation: whatever the
    // timing, a reader sees the events in order, `runEnd` last, with the
    // result `result` gives.
    func testEventBurstsRaceTheRunsEnd() async throws {
        let quick = Tool.inline(name: "quick", description: "Answers at once.") { _ in ToolResult(text: "ok") }
        let agent = try quickPairAgent(rounds: 20, quick)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let run = try agent.start(.prompt("go"))
                    if i % 3 == 1 { run.cancel() }
                    if i % 3 == 2 { try await Task.sleep(nanoseconds: UInt64(i % 5) * 50_000) }
                    var types: [String] = []
                    var ended: RunResult?
                    for await event in run.events {
                        XCTAssertNil(ended, "nothing after runEnd")
                        types.append(event.type)
                        if case .runEnd(_, let result, _) = event { ended = result }
                        if i % 7 == 0, types.count == 5 { run.cancel() }
                    }
                    let result = try await run.result
                    XCTAssertEqual(types.first, "run_start")
                    XCTAssertEqual(types.last, "run_end")
                    XCTAssertEqual(ended, result)
                    XCTAssertTrue(result.status == .cancelled || result.status == .completed, "\(result.status)")
                }
            }
            try await group.waitForAll()
        }
    }

    /// An agent whose model asks for two calls of `quick` a round for `rounds` rounds, then answers.
    private func quickPairAgent(rounds: Int, _ quick: Tool, hooks: [Hook] = []) throws -> Agent {
        var turn: JSONValue = callTurn([("a", "quick", [:]), ("b", "quick", [:])])
        if case .object(var members) = turn {
            members["repeat"] = .integer(Int64(rounds))
            turn = .object(members)
        }
        return try Agent(config: scripted([turn, answerTurn("Done.")]), tools: [quick], hooks: hooks)
    }
}
