import Foundation
import XCTest

@testable import Ferrule

final class HookTests: XCTestCase {
    func testTypedHooksAtEveryStage() async throws {
        let finals = Locked(0)
        let hooks: [Hook] = [
            .onRunStart { payload in
                XCTAssertEqual(payload.messages.map(\.text), ["Original."])
                return .replaceMessages([.user("Replaced.")])
            },
            .onTurnStart { payload in
                payload.turn == 1 ? .inject([.system("Be terse.")]) : .proceed
            },
            .onToolCall { payload in
                switch payload.call.id {
                case "c1": return .deny("Not this one.")
                case "c2": return .replaceArguments(["text": "changed"])
                default: return .proceed
                }
            },
            .onToolResult { payload in
                payload.callID == "c3" ? .replace(ToolResult(text: "redacted")) : .proceed
            },
            .onFinalAnswer { _ in
                finals.withLock { count in
                    defer { count += 1 }
                    return count == 0 ? .retry("Say it again.") : .accept
                }
            },
        ]
        let agent = try Agent(
            config: scripted([
                callTurn([
                    ("c1", "echo", ["text": "one"]), ("c2", "echo", ["text": "two"]), ("c3", "echo", ["text": "three"]),
                ]),
                answerTurn("First."), answerTurn("Second."),
            ]), tools: [echoTool()], hooks: hooks)
        let run = try agent.start(.prompt("Original."))
        var injected: [Message] = []
        for await event in run.events {
            if case .messageInjected(let message) = event { injected.append(message) }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(injected.map(\.text), ["Be terse."])
        XCTAssertEqual(injected.first?.origin, "injection")
        let texts = result.messages.map { "\($0.role.rawValue): \($0.text)" }
        XCTAssertEqual(
            texts,
            [
                "user: Replaced.", "system: Be terse.", "assistant: ", "tool: Not this one.",
                "tool: changed", "tool: redacted", "assistant: First.", "user: Say it again.",
                "assistant: Second.",
            ])
        XCTAssertEqual(result.final?.text, "Second.")
    }

    struct Veto: Error, CustomStringConvertible { var description: String { "vetoed by policy" } }

    /// A typed `turn_start` hook is registered for the new messages and sees the
    /// whole history at every turn, as a raw hook given the whole history does;
    /// after another hook replaced the history it sees the replacement. Inline
    /// and in tasks.
    func testTypedTurnStartHooksSeeTheWholeHistoryFromTheNewMessages() async throws {
        XCTAssertTrue(Hook.onTurnStart { _ in .proceed }.keepsHistory)
        XCTAssertFalse(Hook.onRunStart { _ in .proceed }.keepsHistory)
        for inline in [false, true] {
            let whole = Locked<[[Message]]>([])
            let typed = Locked<[[Message]]>([])
            let replaceAtTurnFour = Hook.rawInline(stage: "turn_start") { payload in
                payload.contains(#""turn":4"#) ? #"{"messages": [{"role": "user", "content": "again"}]}"# : "{}"
            }
            let noteWhole = Hook.rawInline(stage: "turn_start") { payload in
                struct Whole: Decodable { let messages: [Message] }
                let messages = try JSONReader.decode(Whole.self, from: Data(payload.utf8)).messages
                whole.withLock { $0.append(messages) }
                return "{}"
            }
            let keep: @Sendable (TurnStartPayload) -> TurnStartDecision = { payload in
                typed.withLock { $0.append(payload.messages) }
                return .proceed
            }
            let hook = inline ? Hook.onTurnStartInline(keep) : Hook.onTurnStart(keep)
            let turns = (1...12).map { callTurn([("c\($0)", "echo", ["text": "x"])]) }
            let agent = try Agent(
                config: scripted(turns + [answerTurn("Done.")]), tools: [echoTool()],
                hooks: [replaceAtTurnFour, noteWhole, hook])
            for _ in 0..<2 {
                whole.withLock { $0 = [] }
                typed.withLock { $0 = [] }
                let result = try await agent.run(.prompt("go"))
                XCTAssertEqual(result.status, .completed)
                let (wholes, typeds) = (whole.withLock { $0 }, typed.withLock { $0 })
                XCTAssertEqual(typeds.count, 13)
                XCTAssertEqual(typeds, wholes, "inline \(inline)")
                XCTAssertEqual(typeds.map(\.count), [1, 3, 5, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19])
            }
        }
    }

    func testAThrowingOrAbortingHookAbortsTheRun() async throws {
        let hooks: [Hook] = [.onToolCall { _ in throw Veto() }, .onToolCall { _ in .abort("vetoed by policy") }]
        for hook in hooks {
            let agent = try Agent(
                config: scripted([callTurn([("c1", "echo", ["text": "x"])]), answerTurn("Done.")]),
                tools: [echoTool()], hooks: [hook])
            let result = try await agent.run(.prompt("Go."))
            XCTAssertEqual(result.status, .failed)
            XCTAssertEqual(result.error?.code, .hookAborted)
            XCTAssertTrue(
                result.error?.message.contains("vetoed by policy") ?? false, "\(String(describing: result.error))")
        }
    }

    func testAHookThatTakesTooLongIsCancelled() async throws {
        let cancelled = Flag()
        var config = scripted([answerTurn("Done.")])
        config.hookTimeoutMs = 50
        let agent = try Agent(
            config: config,
            hooks: [
                .onRunStart { _ in
                    await waitForCancellation()
                    cancelled.raise()
                    return .proceed
                }
            ])
        let result = try await agent.run(.prompt("Go."))
        XCTAssertEqual(result.status, .failed)
        XCTAssertEqual(result.error?.code, .timeout)
        await cancelled.wait()
        XCTAssertTrue(cancelled.isRaised)
    }

    func testInjectAndPerRunTools() async throws {
        let runs = Locked<Run?>(nil)
        let injecting = Tool(name: "inject", description: "Injects a note.") { _ in
            while runs.withLock({ $0 }) == nil { try await Task.sleep(nanoseconds: 1_000_000) }
            try runs.withLock { $0 }?.inject(.user("A note from the host."))
            return "injected"
        }
        let offered = Locked<[String]>([])
        let agent = try Agent(
            config: scripted([callTurn([("c1", "inject", [:])]), answerTurn("Noted.")]),
            tools: [injecting, echoTool()],
            hooks: [
                .onTurnStart { payload in
                    offered.withLock { $0 = payload.tools }
                    return .proceed
                }
            ])
        let run = try agent.start(.prompt("Go.", tools: ["inject"]))
        runs.withLock { $0 = run }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        XCTAssertEqual(offered.withLock { $0 }, ["inject"])
        let note = try XCTUnwrap(result.messages.first { $0.text == "A note from the host." })
        XCTAssertEqual(note.origin, "injection")
        XCTAssertEqual(result.messages.map(\.role), [.user, .assistant, .tool, .user, .assistant])
    }
}
