import Foundation

@testable import Ferrule

/// A host model replaying a scripted model's script, for the conformance
/// scenarios' host-model mode: the request's turn picks the entry, each entry
/// standing for `repeat` requests, as the scripted model counts.
struct ScriptReplay: HostModel {
    /// The entries of the script, as the configuration gave them.
    let script: [JSONValue]

    /// The fields of an entry a replay can play.
    static let playable: Set<String> = [
        "text", "thinking", "tool_calls", "stop_reason", "usage", "delay_ms", "repeat", "error",
    ]

    /// A script entry with a field the replay cannot play.
    struct Unplayable: Error, CustomStringConvertible {
        let entry: JSONValue
        var description: String { "a host model cannot replay the script entry \(entry.json)" }
    }

    /// `config` with its scripted model replaced by the host model (`"provider":
    /// "host"`), and the replay of its script; nil when it names no scripted model.
    static func replacing(_ config: AgentConfig) throws -> (AgentConfig, ScriptReplay?) {
        guard config.model.provider == "scripted" else { return (config, nil) }
        let script = config.model.script ?? []
        for entry in script {
            guard case .object(let fields) = entry, Set(fields.keys).isSubset(of: playable) else {
                throw Unplayable(entry: entry)
            }
        }
        var config = config
        config.model.provider = "host"
        config.model.name = "script"
        config.model.script = nil
        return (config, ScriptReplay(script: script))
    }

    /// The entry answering the run's request `turn` (from 1), if any.
    func entry(_ turn: Int) -> JSONValue? {
        var turn = turn
        for entry in script {
            var times = 1
            if case .integer(let repeated) = entry["repeat"] { times = Int(repeated) }
            if turn <= times { return entry }
            turn -= times
        }
        return nil
    }

    func generate(_ request: ModelRequest) -> AsyncThrowingStream<ModelDelta, Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for delta in try await answer(request) { continuation.yield(delta) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The entry's answer, after its delay: thinking, text, each call in one
    /// piece (arguments given as a JSON string are the text itself; any other
    /// value, its compact JSON with sorted keys), usage and stop reason; or
    /// its error.
    private func answer(_ request: ModelRequest) async throws -> [ModelDelta] {
        guard let entry = entry(request.turn) else {
            throw ModelError(code: .providerInvalidRequest, message: "the script has no turn \(request.turn)")
        }
        if case .integer(let milliseconds) = entry["delay_ms"] {
            try await Task.sleep(nanoseconds: UInt64(milliseconds) * 1_000_000)
        }
        if let error = entry["error"] {
            var status: Int64 = 0
            if case .integer(let given) = error["status"] { status = given }
            throw ModelError(
                code: Self.code(status: status),
                message: "scripted provider error (HTTP \(status)): \(error["message"]?.stringValue ?? "")")
        }
        var deltas: [ModelDelta] = []
        if let thinking = entry["thinking"]?.stringValue { deltas.append(.thinking(thinking)) }
        if let text = entry["text"]?.stringValue, !text.isEmpty { deltas.append(.text(text)) }
        for (index, call) in (entry["tool_calls"]?.arrayValue ?? []).enumerated() {
            let arguments = try call["arguments"].map { try $0.stringValue ?? Self.sortedJSON($0) } ?? "{}"
            deltas.append(
                .toolCall(
                    index: index, id: call["id"]?.stringValue ?? "", name: call["name"]?.stringValue ?? "",
                    arguments: arguments))
        }
        let usage = try JSONCoding.decode(Usage.self, from: JSONCoding.encode(entry["usage"] ?? [:]))
        deltas.append(.usage(usage))
        if let stop = entry["stop_reason"]?.stringValue { deltas.append(.stop(stop)) }
        return deltas
    }

    /// `value` as compact JSON with its keys sorted, as the scripted model
    /// prints arguments (a Swift dictionary keeps no order).
    static func sortedJSON(_ value: JSONValue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// The provider error class a scripted HTTP status stands for.
    static func code(status: Int64) -> FerruleError.Code {
        switch status {
        case 401, 403: return .providerAuth
        case 404: return .providerNotFound
        case 429: return .providerRateLimited
        case 503, 529: return .providerOverloaded
        case 500...599: return .providerServer
        default: return .providerInvalidRequest
        }
    }
}
