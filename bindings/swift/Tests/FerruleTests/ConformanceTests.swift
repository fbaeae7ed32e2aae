import Foundation
import XCTest

@testable import Ferrule

/// The Swift runner of the shared scenarios of tests/conformance: every tool
/// and hook is written in Swift from the scenario's declared behaviour, each run
/// is observed through this package's types, and the one judge
/// (ferrule-conformance, tests/conformance/README.md) decides.
final class ConformanceTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../..").standardized
    static let directory = root.appendingPathComponent("tests/conformance")
    #if FERRULE_TSAN
        static let observations = "build/conformance/swift-tsan"
    #else
        static let observations = "build/conformance/swift"
    #endif

    func testEveryScenario() async throws {
        try await runEveryScenario(hostModel: false)
    }

    /// Every scenario with each scripted model replaced by a Swift host model
    /// replaying its script (`ScriptReplay`), judged by the same expectations.
    func testEveryScenarioOnAHostModel() async throws {
        try await runEveryScenario(hostModel: true)
    }

    private func runEveryScenario(hostModel: Bool) async throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".json") }.sorted()
        XCTAssertGreaterThan(names.count, 30, "scenarios at \(Self.directory.path)")
        let observations = Self.root.appendingPathComponent(Self.observations + (hostModel ? "-host-model" : ""))
        try? FileManager.default.removeItem(at: observations)
        try FileManager.default.createDirectory(at: observations, withIntermediateDirectories: true)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in names {
                group.addTask {
                    let data = try Data(contentsOf: Self.directory.appendingPathComponent(name))
                    let scenario = Scenario(
                        name: String(name.dropLast(5)),
                        json: try JSONCoding.decode(JSONValue.self, from: data), hostModel: hostModel)
                    let observation = await scenario.observe()
                    try JSONCoding.encode(observation).write(to: observations.appendingPathComponent(name))
                }
            }
            try await group.waitForAll()
        }
        let judge = Process()
        judge.executableURL = Self.root.appendingPathComponent("target/release/ferrule-conformance")
        judge.arguments = [observations.path]
        let verdict = Pipe()
        judge.standardOutput = verdict
        judge.standardError = verdict
        try judge.run()
        let text = String(decoding: verdict.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        judge.waitUntilExit()
        XCTAssertEqual(judge.terminationStatus, 0, "the judge (make judge builds it):\n\(text)")
    }
}

/// One scenario, and what its tools and hooks share with the runner.
private final class Scenario: Sendable {
    let name: String
    let spec: JSONValue
    /// Whether scripted models are replaced by a host model replaying the script.
    let hostModel: Bool
    private let shared = Locked(Shared())

    private struct Shared {
        var cancelHandlers = 0
        var hookCalls: [JSONValue] = []
        var current: Run?
        /// What each call of the current run was given, by call id.
        var traceparents: [String: JSONValue] = [:]
        /// Every span the tracer received, when the scenario is traced.
        var spans: [JSONValue] = []
    }

    /// A problem of the runner itself (the binding refused a tool), which fails the step.
    private struct RunnerError: Error { let why: String }

    init(name: String, json: JSONValue, hostModel: Bool) {
        self.name = name
        spec = json
        self.hostModel = hostModel
    }

    /// The observation: one step per run, the first and then each resume.
    func observe() async -> JSONValue {
        var steps: [JSONValue]
        do {
            steps = try await runSteps()
        } catch let error as RunnerError {
            steps = [["runner_error": .string(error.why)]]
        } catch {
            steps = [["runner_error": .string("\(error)")]]
        }
        return ["runner": hostModel ? "swift-host-model" : "swift", "scenario": .string(name), "steps": .array(steps)]
    }

    private func runSteps() async throws -> [JSONValue] {
        let config = try JSONCoding.decode(AgentConfig.self, from: try JSONCoding.encode(spec["config"]))
        // AgentConfig mirrors the configuration JSON: nothing is lost on the way.
        if JSONValue(encoding: config) != spec["config"] {
            throw RunnerError(why: "AgentConfig loses fields: \(JSONValue(encoding: config).json)")
        }
        let agent = try build(config, tools: spec["tools"], agents: spec["agents"], hooks: hooks())
        // A traced scenario holds the process's tracer while it runs.
        if spec["trace"] == true {
            try Library.setTracer { span in
                let parsed = (try? JSONCoding.decode(JSONValue.self, from: span)) ?? .null
                self.shared.withLock { $0.spans.append(parsed) }
            }
        }
        defer { if spec["trace"] == true { Library.removeTracer() } }
        var (step, result) = try await self.step(agent, input: try input(spec["input"] ?? [:]), expect: spec["expect"])
        var steps = [step]
        // Each resume step goes on from the last state a run gave.
        for resume in spec["resumes"]?.arrayValue ?? [] {
            guard case .object(var state) = result?.state else { break }
            if case .object(let patch) = resume["state_patch"] {
                state.merge(patch) { _, new in new }
            }
            let decisions = try JSONCoding.decode(
                [String: Decision].self,
                from: JSONCoding.encode(resume["decisions"] ?? [:]))
            let on =
                resume["new_agent"] == true
                ? try build(config, tools: resume["tools"] ?? spec["tools"], agents: spec["agents"], hooks: hooks())
                : agent
            var input = RunInput.resume(state: .object(state), decisions: decisions)
            if let returned = resume["run_returned"] {
                // Each returned call as an invoke run, the attempt given; their outcomes resume the run.
                var attempt = 1
                if case .integer(let given) = returned["attempt"] { attempt = Int(given) }
                var outcomes: [String: JSONValue] = [:]
                for call in result?.calls ?? [] {
                    outcomes[call.id] = try await on.run(.invoke(call, attempt: attempt)).outcome ?? .null
                }
                input = RunInput.resume(state: .object(state), results: outcomes).returningCalls()
            }
            let (next, nextResult) = try await self.step(on, input: input, expect: resume["expect"])
            steps.append(next)
            if let nextResult { result = nextResult }
        }
        return steps
    }

    /// An agent of `config`, `tools`, `hooks` and the `agents` it is offered
    /// (each built first, from its own config, tools and agents).
    private func build(_ config: AgentConfig, tools: JSONValue?, agents: JSONValue?, hooks: [Hook]) throws -> Agent {
        let agents = try (agents?.arrayValue ?? []).map { spec in
            let config = try JSONCoding.decode(AgentConfig.self, from: try JSONCoding.encode(spec["config"]))
            let agent = try build(config, tools: spec["tools"], agents: spec["agents"], hooks: [])
            let options = try JSONCoding.decode(
                AgentToolOptions.self, from: JSONCoding.encode(spec["options"] ?? [:]))
            let name = spec["name"]?.stringValue ?? ""
            let description = spec["description"]?.stringValue ?? ""
            return spec["mode"] == "handoff"
                ? AgentTool.handoff(name, description: description, agent: agent, options: options)
                : AgentTool.tool(name, description: description, agent: agent, options: options)
        }
        let tools = try (tools?.arrayValue ?? []).map { spec in
            let options = try JSONCoding.decode(ToolOptions.self, from: JSONCoding.encode(spec["options"] ?? [:]))
            var known = JSONValue(encoding: options)
            if case .object(var members) = known, let nonblocking = spec["options"]?["nonblocking"] {
                members["nonblocking"] = nonblocking
                known = .object(members)
            }
            if known != spec["options"] ?? [:] {
                throw RunnerError(why: "ToolOptions loses fields of \(spec["options"]!.json)")
            }
            return Tool(
                name: spec["name"]?.stringValue ?? "", description: spec["description"]?.stringValue ?? "",
                schema: spec["input_schema"], options: options, behaviour(spec["behaviour"] ?? [:]))
        }
        let located = located(config)
        let (modelConfig, replay) = hostModel ? try ScriptReplay.replacing(located) : (located, nil)
        return try Agent(config: modelConfig, tools: tools, hooks: hooks, agents: agents, model: replay)
    }

    /// `config` with a relative cassette path (`model.record.path`) made the
    /// scenario directory's.
    private func located(_ config: AgentConfig) -> AgentConfig {
        guard var record = config.model.record, !record.path.hasPrefix("/") else { return config }
        record.path = ConformanceTests.directory.appendingPathComponent(record.path).path
        var config = config
        config.model.record = record
        return config
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
            if behaviour["traceparent"] == true {
                let traceparent = call.traceparent
                self.shared.withLock { $0.traceparents[call.id] = .string(traceparent) }
            }
            if let message = behaviour["inject"] {
                try await self.currentRun().inject(
                    try JSONCoding.decode(Message.self, from: JSONCoding.encode(message)))
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
            if behaviour["attempt"] == true { return ToolResult(text: "attempt \(call.attempt)") }
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

    /// The scenario's input as a `RunInput` (its `"result_messages": "none"` as
    /// `withoutMessages()`).
    private func input(_ input: JSONValue) throws -> RunInput {
        var base = try sourceInput(input)
        if let traceparent = input["trace_context"]?["traceparent"]?.stringValue {
            base = base.withTraceContext(
                traceparent: traceparent, tracestate: input["trace_context"]?["tracestate"]?.stringValue)
        }
        switch input["calls"] {
        case nil: break
        case .string("return"): base = base.returningCalls()
        case let other?: throw FerruleError(code: .invalidArg, message: "calls \(other) has no RunInput form")
        }
        switch input["result_messages"] {
        case nil: return base
        case .string("none"): return base.withoutMessages()
        case let other?: throw FerruleError(code: .invalidArg, message: "result_messages \(other) has no RunInput form")
        }
    }

    /// The scenario's input as a `RunInput`, but for `result_messages`.
    private func sourceInput(_ input: JSONValue) throws -> RunInput {
        let tools = input["tools"]?.arrayValue?.compactMap(\.stringValue)
        let messages = try JSONCoding.decode([Message].self, from: JSONCoding.encode(input["messages"] ?? []))
        if let prompt = input["prompt"]?.stringValue { return .prompt(prompt, tools: tools) }
        if case .object(var execute) = input["execute"] {
            execute["role"] = "assistant"  // as ferrule fills it in
            return .execute(
                try JSONCoding.decode(Message.self, from: JSONCoding.encode(JSONValue.object(execute))),
                context: messages, tools: tools)
        }
        return .messages(messages, tools: tools)
    }

    /// Starts `input` on `agent` and observes the run (its events and result as
    /// this package writes them, the hook consultations, the cancel handlers
    /// once `expect` says how many to wait for), or the refusal of its start.
    private func step(_ agent: Agent, input: RunInput, expect: JSONValue?) async throws -> (JSONValue, RunResult?) {
        shared.withLock {
            $0.cancelHandlers = 0
            $0.hookCalls = []
            $0.traceparents = [:]
        }
        let run: Run
        do {
            run = try agent.start(input)
        } catch let error as FerruleError {
            return (["start_error": ["code": .string(error.code.name), "message": .string(error.message)]], nil)
        }
        shared.withLock { $0.current = run }
        defer { shared.withLock { $0.current = nil } }
        var events: [JSONValue] = []
        for await event in run.events { events.append(written(event)) }
        let result = try await run.result
        if case .integer(let expected) = expect?["cancel_handlers"] {
            // Cancelled tasks end on their own; the run may end first.
            for _ in 0..<10_000 where Int64(shared.withLock({ $0.cancelHandlers })) < expected {
                try await Task.sleep(nanoseconds: 1_000_000)
            }
        }
        let (hookCalls, handlers) = shared.withLock { ($0.hookCalls, $0.cancelHandlers) }
        var step: [String: JSONValue] = [
            "events": .array(events),
            "result": JSONValue(encoding: result),
            "hook_calls": .array(hookCalls),
            "cancel_handlers": .integer(Int64(handlers)),
        ]
        if expect?["unused_recordings"] != nil {
            step["unused_recordings"] = JSONValue(encoding: try agent.unusedRecordings())
        }
        if spec["trace"] == true {
            step["spans"] = .array(try await trace(of: run.id))
            step["traceparents"] = .object(shared.withLock { $0.traceparents })
        }
        return (.object(step), result)
    }

    /// The spans of the trace of the run `runID`, once its invoke_agent span
    /// came (the last of a trace to end; up to 10 s), in the order they ended.
    private func trace(of runID: String) async throws -> [JSONValue] {
        for _ in 0..<10_000 {
            let spans = shared.withLock { $0.spans }
            if let root = spans.first(where: { $0["attributes"]?["ferrule.run.id"]?.stringValue == runID }) {
                return spans.filter { $0["trace_id"] == root["trace_id"] }
            }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        return []
    }
}

/// Returns once the current task is cancelled.
/// An event as this package writes it; one it does not know (at any depth of
/// nesting) marked as such.
func written(_ event: Event) -> JSONValue {
    switch event {
    case .unknown(_, let json): return ["type": "unknown", "json": json]
    case .agentEvent(_, _, _, let nested):
        guard case .object(var fields) = JSONValue(encoding: event) else { return JSONValue(encoding: event) }
        fields["event"] = written(nested)
        return .object(fields)
    default: return JSONValue(encoding: event)
    }
}

func waitForCancellation() async {
    while !Task.isCancelled { try? await Task.sleep(nanoseconds: 1_000_000) }
}
