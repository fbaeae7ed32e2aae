import Foundation
import XCTest

@testable import Ferrule

/// The shared scenarios of tests/conformance, with every tool and hook written
/// in Swift from the scenario's declarative behaviour (see
/// tests/conformance/README.md).
final class ConformanceTests: XCTestCase {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../../../tests/conformance").standardized

    func testEveryScenario() async throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertGreaterThan(names.count, 30, "scenarios at \(Self.directory.path)")
        let failures = try await withThrowingTaskGroup(of: [String].self) { group in
            for name in names {
                group.addTask {
                    let data = try Data(contentsOf: Self.directory.appendingPathComponent(name))
                    let scenario = try Scenario(json: try JSONCoding.decode(JSONValue.self, from: data))
                    return await scenario.run().map { "\(name): \($0)" }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        for failure in failures.sorted() { XCTFail(failure) }
    }
}

/// One scenario, and what its tools and hooks share with the runner.
private final class Scenario: Sendable {
    let spec: JSONValue
    let config: AgentConfig
    private let shared = Locked(Shared())

    private struct Shared {
        var failures: [String] = []
        var cancelHandlers = 0
        var hookCalls: [JSONValue] = []
        var current: Run?
    }

    init(json: JSONValue) throws {
        spec = json
        let configJSON = try JSONCoding.encode(json["config"])
        config = try JSONCoding.decode(AgentConfig.self, from: configJSON)
        // AgentConfig mirrors the configuration JSON: nothing is lost on the way.
        if JSONValue(encoding: config) != json["config"] {
            shared.withLock { $0.failures.append("AgentConfig loses fields: \(JSONValue(encoding: config).json)") }
        }
    }

    private func fail(_ text: String) { shared.withLock { $0.failures.append(text) } }

    func run() async -> [String] {
        do {
            try await runSteps()
        } catch {
            fail("\(error)")
        }
        return shared.withLock { $0.failures }
    }

    private func runSteps() async throws {
        let agent = try build(tools: spec["tools"])
        var result = try await step(agent, input: try input(spec["input"] ?? [:]), expect: spec["expect"] ?? [:])
        // Each resume step goes on from the last state a run gave.
        for (index, resume) in (spec["resumes"]?.arrayValue ?? []).enumerated() {
            guard let stateData = result.state, case .object(var state) = try JSONCoding.decode(JSONValue.self, from: stateData) else {
                return fail("resume \(index): no state to resume from")
            }
            if case .object(let patch) = resume["state_patch"] {
                state.merge(patch) { _, new in new }
            }
            let decisions = try JSONCoding.decode([String: Decision].self,
                                                  from: JSONCoding.encode(resume["decisions"] ?? [:]))
            let on = resume["new_agent"] == true ? try build(tools: resume["tools"] ?? spec["tools"]) : agent
            let input = RunInput.resume(state: try JSONCoding.encode(JSONValue.object(state)), decisions: decisions)
            if let refusal = resume["start_error"] {
                do {
                    _ = try on.start(input)
                    fail("resume \(index): started, expected \(refusal.json)")
                } catch let error as FerruleError {
                    if error.code.name != refusal["code"]?.stringValue
                        || !error.message.contains(refusal["contains"]?.stringValue ?? "") {
                        fail("resume \(index): start gave \(error), expected \(refusal.json)")
                    }
                }
            } else {
                result = try await step(on, input: input, expect: resume["expect"] ?? [:])
            }
        }
    }

    /// An agent of the scenario's config, hooks and `tools`.
    private func build(tools: JSONValue?) throws -> Agent {
        let tools = try (tools?.arrayValue ?? []).map { spec in
            let options = try JSONCoding.decode(ToolOptions.self, from: JSONCoding.encode(spec["options"] ?? [:]))
            var known = JSONValue(encoding: options)
            if case .object(var members) = known, let nonblocking = spec["options"]?["nonblocking"] {
                members["nonblocking"] = nonblocking
                known = .object(members)
            }
            if known != spec["options"] ?? [:] { fail("ToolOptions loses fields of \(spec["options"]!.json)") }
            return Tool(name: spec["name"]?.stringValue ?? "", description: spec["description"]?.stringValue ?? "",
                        schema: spec["input_schema"], options: options, behaviour(spec["behaviour"] ?? [:]))
        }
        return try Agent(config: config, tools: tools, hooks: hooks())
    }

    /// The scenario's hooks: one raw hook per stage named, answering with the
    /// decisions in order (`{}` once they run out).
    private func hooks() -> [Hook] {
        (spec["hooks"]?.arrayValue ?? []).flatMap { hook -> [Hook] in
            let decisions = hook["decisions"]?.arrayValue ?? []
            let next = Locked(0)
            return (hook["stages"]?.arrayValue ?? []).compactMap(\.stringValue).map { stage in
                Hook.raw(stage: stage) { payload in
                    let payload = (try? JSONValue(json: payload)) ?? .null
                    self.shared.withLock { $0.hookCalls.append(["stage": .string(stage), "payload": payload]) }
                    if hook["never_respond"] == true {
                        await waitForCancellation()
                        self.shared.withLock { $0.cancelHandlers += 1 }
                        return "{}"
                    }
                    let index = next.withLock { index in
                        defer { index += 1 }
                        return index
                    }
                    return index < decisions.count ? decisions[index].json : "{}"
                }
            }
        }
    }

    /// A behaviour as a tool body.
    private func behaviour(_ behaviour: JSONValue) -> @Sendable (ToolCall) async throws -> ToolResult {
        { call in
            if let message = behaviour["inject"] {
                try await self.currentRun().inject(try JSONCoding.decode(Message.self, from: JSONCoding.encode(message)))
            }
            if behaviour["complete_on_cancel"] == true {
                await waitForCancellation()
                self.shared.withLock { $0.cancelHandlers += 1 }
                return "stopped after cancellation"
            }
            if behaviour["never_complete"] == true {
                while !call.isCancelled { try? await Task.sleep(nanoseconds: 1_000_000) }
                return "completed after cancellation"
            }
            if case .integer(let milliseconds) = behaviour["sleep_ms"] {
                try? await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
            }
            for update in behaviour["updates"]?.arrayValue ?? [] {
                try call.update(.json(update.json))
            }
            if let message = behaviour["fail"]?.stringValue {
                throw FerruleError(code: .toolFailed, message: message)
            }
            if let text = behaviour["result_json"]?.stringValue { return .json(text) }
            if behaviour["echo"] == true { return ToolResult(text: call.argumentsJSON) }
            return .json((behaviour["result"] ?? .null).json)
        }
    }

    /// The run being checked, once `start` returned it.
    private func currentRun() async throws -> Run {
        while true {
            if let run = shared.withLock({ $0.current }) { return run }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
    }

    /// The scenario's input as a `RunInput`.
    private func input(_ input: JSONValue) throws -> RunInput {
        let tools = input["tools"]?.arrayValue?.compactMap(\.stringValue)
        let messages = try JSONCoding.decode([Message].self, from: JSONCoding.encode(input["messages"] ?? []))
        if let prompt = input["prompt"]?.stringValue { return .prompt(prompt, tools: tools) }
        if case .object(var execute) = input["execute"] {
            execute["role"] = "assistant" // as ferrule fills it in
            return .execute(try JSONCoding.decode(Message.self, from: JSONCoding.encode(JSONValue.object(execute))),
                            context: messages, tools: tools)
        }
        return .messages(messages, tools: tools)
    }

    /// Runs `input` on `agent` and checks the run against `expect`.
    private func step(_ agent: Agent, input: RunInput, expect: JSONValue) async throws -> RunResult {
        shared.withLock {
            $0.cancelHandlers = 0
            $0.hookCalls = []
        }
        let run = try agent.start(input)
        shared.withLock { $0.current = run }
        defer { shared.withLock { $0.current = nil } }
        var events: [Event] = []
        for await event in run.events { events.append(event) }
        let result = try await run.result
        check(events)
        let types = events.map(\.type)
        if let status = expect["status"]?.stringValue, result.status.rawValue != status {
            fail("status \(result.status), expected \(status) (error \(String(describing: result.error)))")
        }
        if let code = expect["error_code"]?.stringValue, result.error?.code.name != code {
            fail("error \(String(describing: result.error)), expected code \(code)")
        }
        if let expected = expect["events"]?.arrayValue?.compactMap(\.stringValue), types != expected {
            fail("events \(types), expected \(expected)")
        }
        if case .object(let counts) = expect["event_counts"] {
            for (type, count) in counts where .integer(Int64(types.filter { $0 == type }.count)) != count {
                fail("\(types.filter { $0 == type }.count) \(type) events, expected \(count.json)")
            }
        }
        if let transcript = expect["transcript"] {
            let expected = try JSONCoding.decode([Message].self, from: JSONCoding.encode(transcript))
            if result.messages != expected { fail("transcript differs; got \(JSONValue(encoding: result.messages).json)") }
        }
        if let results = expect["results"]?.arrayValue {
            let got = result.messages.filter { $0.role == .tool }
            if got.count != results.count {
                fail("\(got.count) tool results, expected \(results.count)")
                return result
            }
            for (message, want) in zip(got, results)
            where message.toolCallID != want["tool_call_id"]?.stringValue
                || message.isError != (want["is_error"] == true)
                || !message.text.contains(want["text_contains"]?.stringValue ?? "") {
                fail("result \(JSONValue(encoding: message).json), expected \(want.json)")
            }
        }
        if let output = expect["output"], output != (result.output ?? .null) {
            fail("output \(result.output?.json ?? "null"), expected \(output.json)")
        }
        if let interruptions = expect["interruptions"], JSONValue(encoding: result.interruptions) != interruptions {
            fail("interruptions \(JSONValue(encoding: result.interruptions).json), expected \(interruptions.json)")
        }
        if case .integer(let rounds) = expect["rounds"], Int64(result.rounds) != rounds {
            fail("\(result.rounds) rounds, expected \(rounds)")
        }
        if let usage = expect["usage"], JSONValue(encoding: result.usage) != usage {
            fail("usage \(JSONValue(encoding: result.usage).json), expected \(usage.json)")
        }
        if let hookCalls = expect["hook_calls"] {
            let got = JSONValue.array(shared.withLock { $0.hookCalls })
            if !contains(hookCalls, got) { fail("hook calls differ; got \(got.json)") }
        }
        if case .integer(let expected) = expect["cancel_handlers"] {
            // Cancelled tasks end on their own; the run may end first.
            for _ in 0..<10_000 where Int64(shared.withLock({ $0.cancelHandlers })) < expected {
                try await Task.sleep(nanoseconds: 1_000_000)
            }
            let ran = Int64(shared.withLock { $0.cancelHandlers })
            if ran != expected { fail("\(ran) cancel handlers ran, expected \(expected)") }
        }
        return result
    }

    /// What holds for every run: run_start first, one run_end last, balanced
    /// tool executions and turns, every event known.
    private func check(_ events: [Event]) {
        let types = events.map(\.type)
        guard types.first == "run_start", types.last == "run_end" else {
            return fail("events do not open with run_start and close with run_end: \(types)")
        }
        let count = { (type: String) in types.filter { $0 == type }.count }
        if count("run_end") != 1 { fail("\(count("run_end")) run_end events") }
        if count("tool_execution_start") != count("tool_execution_end") { fail("unbalanced tool executions") }
        if count("turn_start") != count("turn_end") { fail("unbalanced turns") }
        for case .unknown(let type, let json) in events { fail("an event this package does not know: \(type) \(json.json)") }
    }
}

/// Whether `got` has everything `want` has: objects by key (more keys allowed),
/// arrays element by element, other values equal.
private func contains(_ want: JSONValue, _ got: JSONValue) -> Bool {
    switch (want, got) {
    case (.object(let want), .object(let got)):
        return want.allSatisfy { key, value in got[key].map { contains(value, $0) } ?? (value == .null) }
    case (.array(let want), .array(let got)):
        return want.count == got.count && zip(want, got).allSatisfy(contains)
    default:
        return want == got
    }
}

/// Returns once the current task is cancelled.
func waitForCancellation() async {
    while !Task.isCancelled { try? await Task.sleep(nanoseconds: 1_000_000) }
}
