import Foundation
import XCTest

@testable import Ferrule

/// A host model answering with a closure's stream.
struct StreamModel: HostModel {
    let answer: @Sendable (ModelRequest) -> AsyncThrowingStream<ModelDelta, Error>

    func generate(_ request: ModelRequest) -> AsyncThrowingStream<ModelDelta, Error> { answer(request) }
}

final class HostModelTests: XCTestCase {
    let config = #"{"model": {"provider": "host", "name": "pocket"}, "builtin_tools": {"disable": true}}"#

    func testAHostModelStreamsACallThenAnswersWithWhatTheToolSaid() async throws {
        let seen = Locked<[ModelRequest]>([])
        let model = StreamModel { request in
            seen.withLock { $0.append(request) }
            return AsyncThrowingStream { stream in
                let last = (try? request.newMessages())?.last
                if last?.role != .tool {
                    stream.yield(.thinking("need a lookup"))
                    stream.yield(.text("Calling."))
                    stream.yield(.toolCall(index: 0, name: "lookup", arguments: #"{"customer_id":"#))
                    stream.yield(.toolCall(index: 0, arguments: #""C-1"}"#))
                    stream.yield(.usage(Usage(inputTokens: 10, outputTokens: 3)))
                } else {
                    stream.yield(.text("It said: \(last?.text ?? "")"))
                    stream.yield(.stop("end_turn"))
                }
                stream.finish()
            }
        }
        let lookup = Tool(name: "lookup", description: "Looks up.") { _ in ToolResult(text: "gold") }
        let agent = try Agent(configJSON: config, tools: [lookup], model: model)
        let result = try await agent.run(.prompt("plan of C-1?"))
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(result.final?.text, "It said: gold")
        let call = try XCTUnwrap(result.messages[1].toolCalls.first)
        XCTAssertTrue(call.id.hasPrefix("call_"), call.id)
        XCTAssertEqual(call.arguments, #"{"customer_id":"C-1"}"#)
        XCTAssertEqual(result.usage.inputTokens, 10)
        let requests = seen.withLock { $0 }
        XCTAssertEqual(requests.map(\.turn), [1, 2])
        XCTAssertTrue(requests.allSatisfy { $0.runID.hasPrefix("run-") && $0.runID == requests.first?.runID })
        XCTAssertEqual(requests.map(\.firstNewMessage), [0, 1])
        XCTAssertEqual(requests.last?.messageCount, 3)
        XCTAssertEqual(try requests.last?.newMessages().map(\.role), [.assistant, .tool])
        XCTAssertEqual(requests.first?.tools.map(\.name), ["lookup"])
    }

    func testFailuresRetriesAndCancellationReachTheModel() async throws {
        let attempts = Locked(0)
        let flaky = StreamModel { _ in
            AsyncThrowingStream { stream in
                if attempts.withLock({
                    $0 += 1; return $0
                }) == 1 {
                    stream.finish(
                        throwing: ModelError(code: .providerRateLimited, message: "slow down", retryable: true))
                } else {
                    stream.yield(.text("fine"))
                    stream.finish()
                }
            }
        }
        let retrying = #"{"model": {"provider": "host", "name": "pocket", "max_retries": 2, "retry_backoff_ms": 1}}"#
        let result = try await Agent(configJSON: retrying, model: flaky).run(.prompt("go"))
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(result.final?.text, "fine")
        XCTAssertEqual(attempts.withLock { $0 }, 2)

        struct Broke: Error {}
        let broken = StreamModel { _ in AsyncThrowingStream { $0.finish(throwing: Broke()) } }
        let failed = try await Agent(configJSON: config, model: broken).run(.prompt("go"))
        XCTAssertEqual(failed.status, .failed)
        XCTAssertEqual(failed.error?.code, .providerServer)

        // Cancelled once the model was asked (a cancel before that never asks it).
        let asked = expectation(description: "the model was asked")
        let cancelled = expectation(description: "the model's task was cancelled")
        let waiting = StreamModel { _ in
            AsyncThrowingStream { stream in
                stream.onTermination = { _ in cancelled.fulfill() }
                asked.fulfill()
            }
        }
        let run = try Agent(configJSON: config, model: waiting).start(.prompt("go"))
        await fulfillment(of: [asked], timeout: 10)
        run.cancel()
        await fulfillment(of: [cancelled], timeout: 10)
        let ended = try await run.result
        XCTAssertEqual(ended.status, .cancelled)

        XCTAssertThrowsError(try Agent(configJSON: #"{"model": {"provider": "host", "name": "pocket"}}"#)) {
            XCTAssertTrue(($0 as? FerruleError)?.message.contains("no model was set") == true, "\($0)")
        }
    }
}
