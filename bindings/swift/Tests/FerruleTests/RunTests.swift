import Foundation
import XCTest

@testable import Ferrule

final class RunTests: XCTestCase {
    func testEventsComeInOrderAndTheStreamEndsAfterRunEnd() async throws {
        let agent = try Agent(
            config: scripted([
                callTurn([("c1", "echo", ["text": "hi"])], text: "Echoing."),
                answerTurn("Done."),
            ]), tools: [echoTool()])
        let run = try agent.start(.prompt("Echo hi."))
        XCTAssertTrue(run.id.hasPrefix("run-"), run.id)
        var types: [String] = []
        for await event in run.events { types.append(event.type) }
        XCTAssertEqual(
            types,
            [
                "run_start", "turn_start", "message_delta", "tool_call_delta", "message_end",
                "tool_execution_start", "tool_execution_end", "turn_end", "turn_start",
                "message_delta", "message_end", "turn_end", "run_end",
            ].filter { types.contains($0) })
        XCTAssertEqual(types.first, "run_start")
        XCTAssertEqual(types.last, "run_end")
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(result.rounds, 2)
        XCTAssertEqual(result.messages.map(\.role), [.user, .assistant, .tool, .assistant])
        // The result may be awaited again, from anywhere.
        let again = try await run.result
        XCTAssertEqual(again.messages, result.messages)
        XCTAssertThrowsError(try run.inject(.user("late"))) { error in
            XCTAssertEqual((error as? FerruleError)?.code, .alreadyCompleted)
        }
    }

    func testCancellingTheAwaitingTaskCancelsTheRunAndReachesTheTool() async throws {
        let started = Flag(), cancelled = Flag()
        let agent = try Agent(
            config: scripted([callTurn([("c1", "wait", [:])]), answerTurn("Never.")]),
            tools: [waitingTool(started: started, cancelled: cancelled)])
        let task = Task { try await agent.run(.prompt("Wait.")) }
        await started.wait()
        task.cancel()
        let result = try await task.value
        XCTAssertEqual(result.status, .cancelled)
        await cancelled.wait()
        XCTAssertTrue(cancelled.isRaised)
    }

    func testRunCancelAndCancellingTheEventReaderBothCancel() async throws {
        for viaReader in [false, true] {
            let started = Flag(), cancelled = Flag()
            let agent = try Agent(
                config: scripted([callTurn([("c1", "wait", [:])]), answerTurn("Never.")]),
                tools: [waitingTool(started: started, cancelled: cancelled)])
            let run = try agent.start(.prompt("Wait."))
            let reader = Task { for await _ in run.events {} }
            await started.wait()
            if viaReader { reader.cancel() } else { run.cancel() }
            let status = try await run.result.status
            XCTAssertEqual(status, .cancelled, "via the reader: \(viaReader)")
            await cancelled.wait()
            XCTAssertTrue(cancelled.isRaised)
            // A cancelled reader ended the stream for good: a later one sees
            // nothing, not even the run_end that came after.
            await reader.value
            var later: [Event] = []
            for await event in run.events { later.append(event) }
            XCTAssertTrue(later.isEmpty, "via the reader: \(viaReader): \(later)")
        }
    }

    func testBreakingOutOfTheEventsLetsTheRunGoOn() async throws {
        let agent = try Agent(
            config: scripted([callTurn([("c1", "echo", ["text": "hi"])]), answerTurn("Done.")]),
            tools: [echoTool()])
        let run = try agent.start(.prompt("Echo."))
        for await event in run.events {
            if case .toolExecutionStart = event { break }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        var rest: [String] = []
        for await event in run.events { rest.append(event.type) }
        XCTAssertEqual(rest.last, "run_end")
    }

    func testReleasingALiveRunCancelsIt() async throws {
        let started = Flag(), cancelled = Flag()
        let agent = try Agent(
            config: scripted([callTurn([("c1", "wait", [:])]), answerTurn("Never.")]),
            tools: [waitingTool(started: started, cancelled: cancelled)])
        do {
            let run = try agent.start(.prompt("Wait."))
            await started.wait()
            withExtendedLifetime(run) {}
        }
        await cancelled.wait()
        XCTAssertTrue(cancelled.isRaised, "releasing the Run cancelled the tool's task")
    }

    func testTwoHundredConcurrentRuns() async throws {
        let agent = try Agent(
            config: scripted([callTurn([("c1", "echo", ["text": "ping"])]), answerTurn("pong")]),
            tools: [echoTool()])
        let results = try await withThrowingTaskGroup(of: RunResult.self) { group in
            for _ in 0..<200 { group.addTask { try await agent.run(.prompt("Ping.")) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(results.count, 200)
        for result in results {
            XCTAssertEqual(result.status, .completed)
            XCTAssertEqual(result.messages.first { $0.role == .tool }?.text, "ping")
            XCTAssertEqual(result.final?.text, "pong")
        }
    }

    func testInvalidConfigurationsAndInputsAreErrorsWithTheirCodes() throws {
        func code(_ body: () throws -> Any) -> FerruleError.Code? {
            do {
                _ = try body()
                return nil
            } catch {
                return (error as? FerruleError)?.code
            }
        }
        XCTAssertEqual(
            code { try Agent(configJSON: #"{"model": {"provider": "scripted"}, "colour": 1}"#) }, .invalidArg)
        XCTAssertEqual(code { try Agent(configJSON: "{not json") }, .invalidJSON)
        XCTAssertEqual(code { try Agent(config: AgentConfig(model: ModelConfig(provider: "telepathy"))) }, .invalidArg)
        XCTAssertEqual(
            code { try Agent(config: scripted([]), tools: [Tool(name: "bad name!", description: "") { _ in "" }]) },
            .invalidArg)
        XCTAssertEqual(
            code {
                try Agent(
                    config: scripted([]), tools: [Tool(name: "t", description: "", schema: ["type": 7]) { _ in "" }])
            },
            .invalidSchema)
        XCTAssertEqual(
            code { try Agent(config: scripted([]), hooks: [.raw(stage: "lunch") { _ in "{}" }]) }, .invalidArg)
        let agent = try Agent(config: scripted([answerTurn("Hi.")]))
        XCTAssertEqual(code { try agent.start(.prompt("x", tools: ["missing"])) }, .invalidArg)
        XCTAssertEqual(code { try agent.start(.resume(stateJSON: Data("not json".utf8), decisions: [:])) }, .invalidArg)
        XCTAssertEqual(code { try agent.start(.messages([])) }, .invalidArg)
        do {
            _ = try Agent(configJSON: #"{"model": {"provider": "scripted"}, "colour": 1}"#)
        } catch let error as FerruleError {
            XCTAssertTrue(error.message.contains("colour"), error.message)
        }
    }

    func testTheConfigEncodesToTheConfigurationJSON() throws {
        let config = AgentConfig(
            model: ModelConfig(
                provider: "openai", apiKeyEnv: "HOME", baseURL: "http://127.0.0.1:1/v1", maxRetries: 0,
                name: "gpt-4.1-mini", stream: true, timeouts: Timeouts(connectMs: 100, totalMs: 2000)),
            builtinTools: BuiltinTools(allowed: ["echo", "bash"], needsApproval: ["bash"]),
            history: History(maxInputTokens: 1000), hookTimeoutMs: 0, maxRounds: 3, outputRetries: 1,
            runTimeoutMs: 5000, system: "Be brief.", toolChoice: .tool("echo"), toolExecution: "sequential")
        let expected = try JSONValue(
            json: """
                {"model": {"provider": "openai", "name": "gpt-4.1-mini", "base_url": "http://127.0.0.1:1/v1",
                  "api_key_env": "HOME", "stream": true, "max_retries": 0,
                  "timeouts": {"connect_ms": 100, "total_ms": 2000}},
                 "system": "Be brief.", "tool_execution": "sequential", "tool_choice": {"name": "echo"},
                 "max_rounds": 3, "run_timeout_ms": 5000, "output_retries": 1,
                 "history": {"max_input_tokens": 1000}, "hook_timeout_ms": 0,
                 "builtin_tools": {"allowed": ["echo", "bash"], "needs_approval": ["bash"]}}
                """)
        XCTAssertEqual(JSONValue(encoding: config), expected)
        XCTAssertEqual(try JSONCoding.decode(AgentConfig.self, from: JSONCoding.encode(expected)), config)
        // ferrule takes it.
        XCTAssertNoThrow(try Agent(config: config, tools: [echoTool()]))
    }

    /// The Swift configuration reaches bash's sandbox: read_only refuses a
    /// write in the working directory that workspace_write allows.
    func testTheBashSandboxIsConfiguredFromSwift() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ferrule-sandbox-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func bash(_ command: String, _ sandbox: Sandbox) async throws -> Message? {
            var config = scripted([callTurn([("b", "bash", ["command": .string(command)])]), answerTurn("done")])
            config.builtinTools = BuiltinTools(
                allowed: ["bash"], sandbox: sandbox, workingDirectory: dir.path)
            return try await Agent(config: config).run(.prompt("go")).messages.first { $0.role == .tool }
        }
        let refused = try await bash("echo x > inside.txt", Sandbox(mode: "read_only"))
        XCTAssertEqual(refused?.isError, true)
        XCTAssertTrue(refused?.text.contains("Read-only file system") ?? false, refused?.text ?? "no result")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("inside.txt").path))
        let written = try await bash("echo x > inside.txt && cat inside.txt", Sandbox(mode: "workspace_write"))
        XCTAssertEqual(written?.isError, false)
        XCTAssertTrue(written?.text.hasPrefix("x\n") ?? false, written?.text ?? "no result")
    }

    struct Plan: Decodable, Equatable { let customer: String; let plan: String }

    func testStructuredOutputDecodesIntoASwiftType() async throws {
        var config = scripted([answerTurn(#"{"customer": "C-1", "plan": "gold"}"#)])
        config.outputSchema = [
            "type": "object", "required": ["customer", "plan"],
            "properties": ["customer": ["type": "string"], "plan": ["type": "string"]],
        ]
        let result = try await Agent(config: config).run(.prompt("Plan?"))
        XCTAssertEqual(try result.output(as: Plan.self), Plan(customer: "C-1", plan: "gold"))
        let plain = try await Agent(config: scripted([answerTurn("gold")])).run(.prompt("Plan?"))
        XCTAssertThrowsError(try plain.output(as: Plan.self)) { error in
            XCTAssertEqual((error as? FerruleError)?.code, .invalidOutput)
        }
    }

    func testAnExecuteOnlyRunAndARunTimeout() async throws {
        let agent = try Agent(config: scripted([]), tools: [echoTool()])
        let call = ToolCallRequest(id: "h1", name: "echo", arguments: #"{"text": "mine"}"#)
        let executed = try await agent.run(.execute(.assistant("", toolCalls: [call]), context: [.user("Echo mine.")]))
        XCTAssertEqual(executed.status, .completed)
        XCTAssertEqual(executed.messages.map(\.role), [.user, .assistant, .tool])
        XCTAssertEqual(executed.messages.last?.text, "mine")

        let started = Flag(), cancelled = Flag()
        var config = scripted([callTurn([("c1", "wait", [:])]), answerTurn("Never.")])
        config.runTimeoutMs = 50
        let timed = try await Agent(config: config, tools: [waitingTool(started: started, cancelled: cancelled)])
            .run(.prompt("Wait."))
        XCTAssertEqual(timed.status, .failed)
        XCTAssertEqual(timed.error?.code, .timeout)
        await cancelled.wait()
        XCTAssertTrue(cancelled.isRaised)
    }

    func testAnUnknownErrorCodeKeepsItsName() throws {
        let error = try JSONCoding.decode(FerruleError.self, from: Data(#"{"code": "NEW_THING", "message": "m"}"#.utf8))
        XCTAssertEqual(error.code.rawValue, 0)
        XCTAssertEqual(error.message, "NEW_THING: m")
        XCTAssertEqual(FerruleError.Code(name: "HOOK_ABORTED"), .hookAborted)
    }

    func testUnpaddedAndURLSafeBase64ImagesDecode() throws {
        let part = try JSONCoding.decode(
            Part.self, from: Data(#"{"type": "image", "media_type": "image/png", "data": "-_8"}"#.utf8))
        XCTAssertEqual(part.data, Data([0xfb, 0xff]))
        // The text is kept as it came, so it goes back unchanged.
        XCTAssertEqual(JSONValue(encoding: part), ["type": "image", "media_type": "image/png", "data": "-_8"])
    }

    func testDataThatIsNotBase64LosesNothing() async throws {
        let shot = Tool(name: "shot", description: "An image with wrapped base64.") { _ in
            .json(#"{"content": [{"type": "image", "media_type": "image/png", "data": "iVBORw0K\nGgoAAAAN"}]}"#)
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "shot", [:])]), answerTurn("Seen.")]), tools: [shot],
            hooks: [.onToolResult { _ in .proceed }])
        let run = try agent.start(.prompt("Look."))
        var unknown: [String] = []
        for await event in run.events {
            if case .unknown(let type, _) = event { unknown.append(type) }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(unknown, [], "every event decoded")
        let image = try XCTUnwrap(result.messages.first { $0.role == .tool }?.content.first)
        XCTAssertEqual(image, .image(mediaType: "image/png", base64: "iVBORw0K\nGgoAAAAN", url: nil))
        XCTAssertNil(image.data)
        // Fed back, the transcript is taken as it is.
        let again = try await Agent(config: scripted([answerTurn("Again.")])).run(
            .messages(result.messages + [.user("More.")]))
        XCTAssertEqual(again.status, .completed)
        XCTAssertEqual(Array(again.messages.prefix(result.messages.count)), result.messages)
    }

    func testCountsBeyondIntMaxAndNumbers() throws {
        let usage = try JSONCoding.decode(
            Usage.self, from: Data(#"{"input_tokens": 18446744073709551615, "output_tokens": 3}"#.utf8))
        XCTAssertEqual(usage.inputTokens, Int.max)
        XCTAssertEqual(usage.outputTokens, 3)
        XCTAssertEqual(try JSONValue(json: "[1, 2.5, 9007199254740993]"), [1, 2.5, .integer(9_007_199_254_740_993)])
        XCTAssertThrowsError(try JSONValue.number(.nan).jsonText())
        // A state whose saturated count is beyond Int64 writes it back as a count, which resume takes.
        let state = try JSONValue(json: #"{"usage": {"input_tokens": 18446744073709551615}, "big": 1e300}"#)
        let text = try state.jsonText()
        XCTAssertEqual(try JSONValue(json: text), state, "the same document")
        XCTAssertTrue(text.contains("18446744073709551615") && text.contains("e+300"), text)
    }

    func testATemporaryRunsEventsRunToTheEnd() async throws {
        let agent = try Agent(config: scripted([answerTurn("Hi.")]))
        var ending: Status?
        for await event in try agent.start(.prompt("Hello.")).events {
            if case .runEnd(let status, _, _) = event { ending = status }
        }
        XCTAssertEqual(ending, .completed)
    }

    func testASecondReaderAtOnceGetsNothing() async throws {
        let agent = try Agent(config: scripted([answerTurn("Hi.")]))
        let run = try agent.start(.prompt("Hello."))
        var first = run.events.makeAsyncIterator()
        var second = run.events.makeAsyncIterator()
        let none = await second.next()
        XCTAssertNil(none)
        var types: [String] = []
        while let event = await first.next() { types.append(event.type) }
        XCTAssertEqual(types.last, "run_end")
    }
}

final class RaceTests: XCTestCase {
    /// Completion against timeout against cancel, a thousand times: each call
    /// sleeps about as long as its timeout, and half the runs are cancelled at
    /// about the same moment. Every run ends once, with a status that fits, and
    /// every call's task ends.
    func testCompletionTimeoutAndCancelRace() async throws {
        let started = Locked(0), finished = Locked(0)
        let racer = Tool(
            name: "race", description: "Sleeps about as long as its timeout.",
            options: ToolOptions(timeoutMs: 1)
        ) { call in
            started.withLock { $0 += 1 }
            defer { finished.withLock { $0 += 1 } }
            try? await Task.sleep(nanoseconds: UInt64.random(in: 0...2_000_000))
            try? call.update("almost")
            return "made it"
        }
        let agent = try Agent(
            config: scripted([callTurn([("c1", "race", [:]), ("c2", "race", [:])]), answerTurn("Done.")]),
            tools: [racer])
        let statuses = try await withThrowingTaskGroup(of: Status.self) { group in
            for index in 0..<1000 {
                group.addTask {
                    let run = try agent.start(.prompt("Race."))
                    if index % 2 == 1 {
                        try? await Task.sleep(nanoseconds: UInt64.random(in: 0...2_000_000))
                        run.cancel()
                    }
                    var ends = 0
                    for await event in run.events where event.type == "run_end" { ends += 1 }
                    XCTAssertEqual(ends, 1)
                    return try await run.result.status
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(statuses.count, 1000)
        XCTAssertTrue(statuses.allSatisfy { $0 == .completed || $0 == .cancelled }, "\(Set(statuses))")
        XCTAssertTrue(statuses.contains(.completed))
        // Every call that started finishes its task, cancelled or not.
        for _ in 0..<10_000 where finished.withLock({ $0 }) < started.withLock({ $0 }) {
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        XCTAssertEqual(finished.withLock { $0 }, started.withLock { $0 })
        XCTAssertGreaterThan(started.withLock { $0 }, 0)
    }
}
