import CFerrule
import Foundation
import XCTest

@testable import Ferrule

/// Runs `input` through the C ABI directly and returns the result JSON.
func cRun(config: String, input: String) throws -> JSONValue {
    var builder: OpaquePointer?
    try withUTF8Arg(config) { try FerruleError.check(ferrule_agent_builder_new($0, $1, &builder)) }
    var agent: OpaquePointer?
    try FerruleError.check(ferrule_agent_build(builder, &agent))
    defer { ferrule_agent_free(agent) }
    var run: OpaquePointer?
    try withUTF8Arg(input) { try FerruleError.check(ferrule_agent_start(agent, $0, $1, nil, nil, nil, &run)) }
    defer { ferrule_run_free(run) }
    var text: UnsafeMutablePointer<CChar>?
    var length = 0
    try FerruleError.check(ferrule_run_wait(run, &text, &length))
    defer { ferrule_string_free(text) }
    return try JSONValue(json: String(cString: text!))
}

/// A count shared by tasks.
final class Counter: Sendable {
    private let value = Locked(0)
    func add(_ n: Int = 1) { value.withLock { $0 += n } }
    var count: Int { value.withLock { $0 } }
}

/// Hostile use of the Swift API: transcripts through Swift and back, runs
/// cancelled at random against every kind of tool body, cancel racing the
/// end, many awaiters.
final class HostileTests: XCTestCase {
    /// A transcript with every kind of part goes through Swift's types and back
    /// to ferrule unchanged.
    func testResultMessagesRoundTripThroughSwift() async throws {
        let config =
            #"{"model": {"provider": "scripted", "script": [{"text": "Again.", "usage": {"input_tokens": 5, "output_tokens": 2, "cached_tokens": 3}}, {"text": "Third."}]}, "builtin_tools": {"disable": true}}"#
        let messages = #"""
            [{"role": "system", "content": "Be brief."},
             {"role": "user", "content": [{"type": "text", "text": "Look:"},
                {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo"},
                {"type": "image", "url": "https://example.com/a.png"},
                {"type": "file", "media_type": "application/pdf", "data": "JVBERi0-_w", "name": "a.pdf"}]},
             {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig", "id": "rs_1"},
                {"type": "redacted_thinking", "data": "opaque=="}, {"type": "text", "text": "Calling."}],
              "tool_calls": [{"id": "c1", "name": "t", "arguments": "{\"a\": 1.50, \"b\": [1,2]}"}],
              "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 4, "cached_tokens": 7}},
             {"role": "tool", "tool_call_id": "c1", "name": "t", "content": [{"type": "text", "text": "ok"},
                {"type": "image", "media_type": "image/jpeg", "data": "/9j/4AAQ"}], "is_error": true},
             {"role": "user", "content": "", "origin": "injection"},
             {"role": "system", "content": "Note.", "origin": "injection"},
             {"role": "user", "content": "Go on."}]
            """#
        let first = try cRun(config: config, input: #"{"messages": \#(messages)}"#)
        let firstMessages = try XCTUnwrap(first["messages"]?.arrayValue)
        let decoded = try JSONCoding.decode(RunResult.self, from: JSONCoding.encode(first))
        XCTAssertEqual(decoded.messages.count, firstMessages.count)
        XCTAssertEqual(decoded.usage, Usage(cachedTokens: 3, inputTokens: 5, outputTokens: 2))
        // Fed back as Swift encodes them.
        let swiftJSON = try JSONCoding.text(decoded.messages + [.user("More.")])
        let second = try cRun(config: config, input: #"{"messages": \#(swiftJSON)}"#)
        let secondMessages = try XCTUnwrap(second["messages"]?.arrayValue)
        for (index, (a, b)) in zip(firstMessages, secondMessages).enumerated() where a != b {
            XCTFail("message \(index) differs:\n C: \(a.json)\n Swift: \(b.json)")
        }
        // The Swift API feeds it back too.
        let agent = try Agent(configJSON: config)
        let again = try await agent.run(.messages(decoded.messages + [.user("More.")]))
        XCTAssertEqual(again.status, .completed, "\(String(describing: again.error))")
    }

    /// A hook's `.replace(.json(...))` with invalid result JSON: the tool path

    func testManyRunsCancelledAtRandomWithEveryKindOfBody() async throws {
        let iterations = Int(ProcessInfo.processInfo.environment["FERRULE_STRESS_ITERATIONS"] ?? "") ?? 2000
        let started = Counter(), finished = Counter(), updatesAfter = Counter()
        weak var watched: Witness?
        try await {
            let witness = Witness()
            watched = witness
            let body: @Sendable (ToolCall) async throws -> ToolResult = { call in
                _ = witness
                started.add()
                defer { finished.add() }
                // Updates from a task of its own, racing the completion.
                let spammer = Task.detached {
                    while true {
                        do { try call.update("tick") } catch {
                            if (error as? FerruleError)?.code != .alreadyCompleted { updatesAfter.add() }
                            return
                        }
                        await Task.yield()
                    }
                }
                _ = spammer
                switch Int.random(in: 0..<5) {
                case 0: return "fast"
                case 1: throw CancellationError()
                case 2:
                    await waitForCancellation()
                    return "after cancel"
                case 3:
                    try await Task.sleep(nanoseconds: UInt64.random(in: 0...3_000_000))
                    return .json(#"{"content": "slept", "details": {"n": 1}}"#)
                default:
                    // Ignores cancellation for a while.
                    let until = Date().addingTimeInterval(Double.random(in: 0...0.003))
                    while Date() < until { await Task.yield() }
                    return "ignored"
                }
            }
            let tool = Tool(name: "t", description: "Anything.", options: ToolOptions(timeoutMs: 2), body)
            let hook = Hook.onToolCall { _ in
                if Bool.random() { try await Task.sleep(nanoseconds: UInt64.random(in: 0...1_000_000)) }
                return .proceed
            }
            let agent = try Agent(
                config: scripted([
                    callTurn([("c1", "t", [:]), ("c2", "t", [:]), ("c3", "t", [:])]),
                    answerTurn("Done."),
                ]), tools: [tool], hooks: [hook])
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<iterations {
                    if index >= 32 { try await group.next() }
                    group.addTask {
                        let run = try agent.start(.prompt("Go."))
                        let canceller = Task {
                            try? await Task.sleep(nanoseconds: UInt64.random(in: 0...4_000_000))
                            if index % 3 != 0 { run.cancel() }
                        }
                        var ends = 0, starts: [String: Int] = [:], endsByCall: [String: Int] = [:]
                        var afterEnd = false
                        for await event in run.events {
                            XCTAssertFalse(afterEnd, "an event after run_end")
                            switch event {
                            case .toolExecutionStart(let call): starts[call.id, default: 0] += 1
                            case .toolExecutionEnd(let id, _, _, _): endsByCall[id, default: 0] += 1
                            case .toolExecutionUpdate(let id, _, _):
                                XCTAssertNil(endsByCall[id], "an update after its call's end")
                            case .runEnd: ends += 1; afterEnd = true
                            default: break
                            }
                        }
                        XCTAssertEqual(ends, 1)
                        XCTAssertEqual(starts, endsByCall)
                        XCTAssertTrue(starts.values.allSatisfy { $0 == 1 })
                        let results = try await withThrowingTaskGroup(of: Status.self) { waiters in
                            for _ in 0..<3 { waiters.addTask { try await run.result.status } }
                            return try await waiters.reduce(into: []) { $0.append($1) }
                        }
                        XCTAssertEqual(Set(results).count, 1)
                        XCTAssertTrue([.completed, .cancelled].contains(results[0]), "\(results)")
                        await canceller.value
                    }
                }
                try await group.waitForAll()
            }
        }()
        for _ in 0..<10_000 where finished.count < started.count || watched != nil {
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        XCTAssertEqual(finished.count, started.count)
        XCTAssertGreaterThan(started.count, 0)
        XCTAssertEqual(updatesAfter.count, 0)
        XCTAssertNil(watched, "the tool's closure was released")
    }

    /// `run.cancel()` racing the end of a run that never waits.
    func testCancelRacingTheEnd() async throws {
        let agent = try Agent(config: scripted([answerTurn("Hi.")]))
        for _ in 0..<2000 {
            let run = try agent.start(.prompt("Hi."))
            if Bool.random() { await Task.yield() }
            run.cancel()
            let status = try await run.result.status
            XCTAssertTrue(status == .completed || status == .cancelled)
        }
    }

    /// Releasing the Run while another task reads its events, and the agent

    /// Many tasks await one result; some are cancelled (which cancels the run).
    func testManyAwaitersSomeCancelled() async throws {
        let started = Flag(), cancelled = Flag()
        let agent = try Agent(
            config: scripted([callTurn([("c1", "wait", [:])]), answerTurn("Never.")]),
            tools: [waitingTool(started: started, cancelled: cancelled)])
        let run = try agent.start(.prompt("Wait."))
        let waiters = (0..<100).map { _ in Task { try await run.result.status } }
        await started.wait()
        waiters[17].cancel()
        for waiter in waiters { let s = try await waiter.value; XCTAssertEqual(s, .cancelled) }
        // Awaiting from a task that is already cancelled, after the end.
        let late = Task { () async throws -> Status in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await run.result.status
        }
        let lateStatus = try await late.value
        XCTAssertEqual(lateStatus, .cancelled)
    }
}
