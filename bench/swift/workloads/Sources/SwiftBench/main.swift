// Runs W1 (one no-op call per round, 2,000 rounds) and W2 (64 parallel
// schema-validated calls per round, 200 rounds) with a Swift tool that answers
// "ok" at once (in a task, and inline), plain (`agent.run`) and with every event
// read, then W1 with the model in Swift too (a host model answering each request
// at once), then W1 with an inline no-op hook on every stage (without the
// history, then typed hooks with it), and prints the cost per round and per call of one whole run (the
// best and the median of the runs; for hooks, the rounds' share of that, from
// the first turn_start to the last, and the median round near round 10 and near
// round 2,000).
import Ferrule
import Foundation

let workloadsPath = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("../../../../workloads.json").standardized
let workloads = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: workloadsPath))
let runsPerFigure = Int(ProcessInfo.processInfo.environment["FERRULE_BENCH_RUNS"] ?? "") ?? 7

func integer(_ value: JSONValue?) -> Int {
    if case .integer(let number) = value { return Int(number) }
    return 0
}

/// W1's model in Swift: the call each round, then "done" in the last.
struct W1Model: HostModel {
    func generate(_ request: ModelRequest) -> AsyncThrowingStream<ModelDelta, Error> {
        AsyncThrowingStream { continuation in
            continuation.yield(
                request.turn < 2000 ? .toolCall(index: 0, id: "c1", name: "noop", arguments: "{}") : .text("done"))
            continuation.finish()
        }
    }
}

func measure(
    _ name: String, schema: String, readEvents: Bool, inline: Bool = false, model: HostModel? = nil
) async throws {
    guard let workload = workloads[name] else { throw FerruleError(code: .invalidArg, message: "no workload \(name)") }
    var config = try JSONDecoder().decode(AgentConfig.self, from: JSONEncoder().encode(workload["config"]))
    if model != nil {
        config.model = ModelConfig(provider: "host", name: name)
    }
    let noop =
        inline
        ? Tool.inline(name: "noop", description: "Does nothing.", schema: workloads[schema]) { _ in "ok" }
        : Tool(name: "noop", description: "Does nothing.", schema: workloads[schema]) { _ in "ok" }
    let agent = try Agent(config: config, tools: [noop], model: model)
    var seconds: [Double] = []
    for _ in 0..<runsPerFigure {
        let start = DispatchTime.now()
        let result: RunResult
        if readEvents {
            let run = try agent.start(.prompt("go"))
            for await _ in run.events {}
            result = try await run.result
        } else {
            result = try await agent.run(.prompt("go"))
        }
        guard result.status == .completed else { throw FerruleError(code: .invalidArg, message: "\(result.status)") }
        seconds.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
    }
    seconds.sort()
    let rounds = Double(integer(workload["rounds"])), calls = Double(integer(workload["calls"]))
    let figure = { (value: Double) in
        String(format: "%.1f µs/round, %.2f µs/call", value / rounds * 1e6, value / calls * 1e6)
    }
    let label =
        "\(name.uppercased())\(model != nil ? " on a Swift host model" : "")\(inline ? ", inline tool" : "")"
        + (readEvents ? " with events" : "")
    print("\(label): best \(figure(seconds[0])); median \(figure(seconds[seconds.count / 2]))")
}

print("ferrule \(Library.version), Swift tool, \(runsPerFigure) runs per figure")
for readEvents in [false, true] {
    for inline in [false, true] {
        try await measure("w1", schema: "open_schema", readEvents: readEvents, inline: inline)
        try await measure("w2", schema: "schema", readEvents: readEvents, inline: inline)
    }
}
try await measure("w1", schema: "open_schema", readEvents: false, model: W1Model())

/// When each turn started, recorded from ferrule's callback threads.
final class TurnTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [UInt64] = []

    func record() { lock.withLock { recorded.append(DispatchTime.now().uptimeNanoseconds) } }
    func clear() { lock.withLock { recorded = [] } }
    var times: [UInt64] { lock.withLock { recorded } }
}

/// W1 with an inline tool and an inline no-op hook, without the history, on every stage:
/// typed hooks, whose payloads are decoded, then raw ones, which answer `{}` to the payload's JSON;
/// last the typed ones with the history (given the new messages, the rest kept for the run).
func measureHooks() async throws {
    let turns = TurnTimes()
    let options = HookOptions(withoutHistory: true)
    let raw = ["run_start", "turn_start", "tool_call", "tool_result", "final_answer"].map { stage in
        Hook.rawInline(stage: stage, options: options) { _ in
            if stage == "turn_start" { turns.record() }
            return "{}"
        }
    }
    try await measureHooks("inline hooks without history", typedHooks(options, turns), turns)
    try await measureHooks("inline raw hooks without history", raw, turns)
    try await measureHooks("inline hooks with the history", typedHooks(HookOptions(), turns), turns)
}

/// A typed inline no-op hook on every stage, with `options`; the `turn_start` one notes each turn's start.
func typedHooks(_ options: HookOptions, _ turns: TurnTimes) -> [Hook] {
    [
        .onRunStartInline(options: options) { _ in .proceed },
        .onTurnStartInline(options: options) { _ in
            turns.record()
            return .proceed
        },
        .onToolCallInline(options: options) { _ in .proceed },
        .onToolResultInline(options: options) { _ in .proceed },
        .onFinalAnswerInline(options: options) { _ in .accept },
    ]
}

/// W1 with `hooks`, which note each turn's start in `turns`.
func measureHooks(_ label: String, _ hooks: [Hook], _ turns: TurnTimes) async throws {
    guard let workload = workloads["w1"] else { throw FerruleError(code: .invalidArg, message: "no workload w1") }
    let config = try JSONDecoder().decode(AgentConfig.self, from: JSONEncoder().encode(workload["config"]))
    let noop = Tool.inline(name: "noop", description: "Does nothing.", schema: workloads["open_schema"]) { _ in "ok" }
    let agent = try Agent(config: config, tools: [noop], hooks: hooks)
    var whole: [Double] = [], mean: [Double] = [], early: [UInt64] = [], late: [UInt64] = []
    for _ in 0..<runsPerFigure {
        turns.clear()
        let start = DispatchTime.now()
        let result = try await agent.run(.prompt("go"))
        guard result.status == .completed else { throw FerruleError(code: .invalidArg, message: "\(result.status)") }
        whole.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 2000 / 1e3)
        let times = turns.times
        mean.append(Double(times[times.count - 1] - times[0]) / Double(times.count - 1) / 1e3)
        for i in 5..<15 { early.append(times[i] - times[i - 1]) }
        for i in times.count - 10..<times.count { late.append(times[i] - times[i - 1]) }
    }
    func median<T: Comparable>(_ values: [T]) -> T { values.sorted()[values.count / 2] }
    let rounds = String(
        format: "round 10: %.1f µs, round 2000: %.1f µs", Double(median(early)) / 1e3, Double(median(late)) / 1e3)
    let figure = String(
        format: "median %.1f µs/round, of which the rounds %.1f; ", median(whole), median(mean))
    print("W1 with \(label): " + figure + rounds)
}

try await measureHooks()
