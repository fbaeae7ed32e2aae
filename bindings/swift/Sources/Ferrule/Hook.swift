import CFerrule
import Foundation

/// A function ferrule consults at one stage of every run of an agent. Hooks of
/// one stage are consulted in the order given, each seeing the previous one's
/// effect. An error a hook throws aborts the run: it ends failed with code
/// `hookAborted` and the error's text. The hook's task is cancelled when the
/// run stops waiting for it (the run was cancelled, or `hookTimeoutMs` passed);
/// an inline hook (`onToolCallInline`...) has no task, and nothing interrupts it.
public struct Hook: Sendable {
    /// "run_start", "turn_start", "tool_call", "tool_result" or "final_answer".
    public let stage: String
    /// How the hook is consulted.
    public let options: HookOptions
    /// Decides from the payload JSON, giving the decision JSON.
    let body: Body
    /// The hook is given the new messages of each payload and keeps the rest
    /// for the run (KeptHistory.swift).
    let keepsHistory: Bool

    /// How a hook decides: in a task, or inside ferrule's callback (with the
    /// payload borrowed from ferrule for the call); either with the
    /// consultation, live until the response.
    enum Body: Sendable {
        case task(@Sendable (Data, Consulted) async throws -> String)
        case inline(@Sendable (UnsafeRawBufferPointer, Consulted) throws -> String)
    }

    private init(stage: String, options: HookOptions, body: Body, keepsHistory: Bool = false) {
        self.stage = stage
        self.options = options
        self.body = body
        self.keepsHistory = keepsHistory
    }

    /// Consulted at `stage` with the payload JSON, answering with decision JSON
    /// as the C ABI does (docs/hooks.md).
    public static func raw(
        stage: String, options: HookOptions = HookOptions(), _ body: @escaping @Sendable (String) async throws -> String
    ) -> Hook {
        Hook(
            stage: stage, options: options,
            body: .task { data, _ in try await body(String(decoding: data, as: UTF8.self)) })
    }

    /// The same with a synchronous body, run inside ferrule's callback, as the
    /// typed `on…Inline` hooks are: it must never block.
    public static func rawInline(
        stage: String, options: HookOptions = HookOptions(), _ body: @escaping @Sendable (String) throws -> String
    ) -> Hook {
        Hook(
            stage: stage, options: options,
            body: .inline { bytes, _ in try body(String(decoding: bytes, as: UTF8.self)) })
    }

    /// The hook of `stage` whose body takes its payload and gives its
    /// decision (each stage's is generated, in HookStages_gen.swift).
    static func typed<Payload: JSONReadable, Decision: HookDecisionJSON>(
        _ stage: String, _ options: HookOptions, _ body: @escaping @Sendable (Payload) async throws -> Decision
    ) -> Hook {
        Hook(
            stage: stage, options: options,
            body: .task { data, consulted in
                try await body(data.withUnsafeBytes { try payload(stage, $0, consulted) }).decisionJSON()
            }, keepsHistory: Payload.self == TurnStartPayload.self)
    }

    /// The same with a synchronous body, run inside ferrule's callback.
    static func typedInline<Payload: JSONReadable, Decision: HookDecisionJSON>(
        _ stage: String, _ options: HookOptions, _ body: @escaping @Sendable (Payload) throws -> Decision
    ) -> Hook {
        Hook(
            stage: stage, options: options,
            body: .inline { bytes, consulted in try body(payload(stage, bytes, consulted)).decisionJSON() },
            keepsHistory: Payload.self == TurnStartPayload.self)
    }

    /// The payload of `stage` decoded from its JSON, which it does not keep; a
    /// `turn_start` payload with the whole history, kept for the run.
    private static func payload<Payload: JSONReadable>(
        _ stage: String, _ bytes: UnsafeRawBufferPointer, _ consulted: Consulted
    ) throws -> Payload {
        let decoded: Payload
        do {
            decoded = try JSONReader.decode(Payload.self, from: bytes)
        } catch {
            throw FerruleError(code: .invalidJSON, message: "the \(stage) payload did not decode: \(error)")
        }
        guard var turn = decoded as? TurnStartPayload else { return decoded }
        try KeptHistory.complete(&turn, from: bytes, consulted)
        return turn as! Payload
    }
}

extension Hook {
    /// Inside a hook's body: the W3C `traceparent` of the span the
    /// consultation is in (the run's `invoke_agent` span), for the hook's own
    /// spans to go under it; nil when the run records no spans, and outside a
    /// hook. A task-local value.
    @TaskLocal public static var traceparent: String?
}

/// How a hook is consulted.
public struct HookOptions: Sendable {
    /// Leaves the history out of the hook's `run_start` and `turn_start`
    /// payloads: `messages` is empty and `messageCount` says how many there are,
    /// so a consultation costs the same at any length of the run.
    public var withoutHistory: Bool

    public init(withoutHistory: Bool = false) { self.withoutHistory = withoutHistory }
}

/// A registered hook: what ferrule's callback finds in its `user_data`.
final class HookBox: Sendable {
    let hook: Hook

    init(_ hook: Hook) { self.hook = hook }

    /// ferrule's callback, on its runtime (the hook is `nonblocking`): runs an
    /// inline hook's body, or hands the consultation to a task and returns.
    static let consult: ferrule_hook_fn = { userData, handle in
        guard let box = unbox(userData, as: HookBox.self), let handle else { return }
        switch box.hook.body {
        case .inline(let decideHere):
            // Borrowed until the response.
            let payload = UnsafeRawBufferPointer(borrowed: ferrule_hook_payload(handle))
            Hook.$traceparent.withValue(traceparent(of: handle)) {
                respond(handle, with: Result { try decideHere(payload, Consulted(handle: handle)) })
            }
        case .task(let decideInTask):
            let consultation = Consultation(handle: handle)
            let task = Task.detached { await consultation.respond(using: decideInTask) }
            // An error means the hook was responded to already: nothing is left to cancel.
            _ = handOver(TaskCanceller(task)) { ferrule_hook_on_cancel(handle, TaskCanceller.onCancel, $0, releaseBox) }
        }
    }

    /// The consultation's `traceparent`, copied; nil when the run records no spans.
    static func traceparent(of handle: OpaquePointer) -> String? {
        let traceparent = ferrule_hook_traceparent(handle)
        return traceparent.len == 0 ? nil : String(borrowed: traceparent)
    }

    /// Adds the hook to a builder; the builder owns the box from then on.
    func register(with builder: OpaquePointer) throws {
        var options: [String: JSONValue] = ["stages": [.string(hook.stage)], "nonblocking": true]
        if hook.options.withoutHistory {
            options["history"] = "none"
        } else if hook.keepsHistory {
            options["history"] = "new"
        }
        let stages = JSONValue.object(options)
        if let error = withUTF8Arg(
            stages.json,
            { stages, length in
                handOver(self) {
                    ferrule_agent_builder_add_hook(builder, stages, length, HookBox.consult, $0, releaseBox)
                }
            })
        {
            throw error
        }
    }
}

/// One consultation: its handle and payload.
private final class Consultation: Sendable {
    nonisolated(unsafe) private let handle: OpaquePointer
    let payload: Data
    let traceparent: String?

    init(handle: OpaquePointer) {
        self.handle = handle
        payload = Data(UnsafeRawBufferPointer(borrowed: ferrule_hook_payload(handle)))
        traceparent = HookBox.traceparent(of: handle)
    }

    /// Decides and responds, exactly once whatever the hook does.
    func respond(using decide: @Sendable (Data, Consulted) async throws -> String) async {
        do {
            let decision = try await Hook.$traceparent.withValue(traceparent) {
                try await decide(payload, Consulted(handle: handle))
            }
            respond(with: .success(decision))
        } catch {
            respond(with: .failure(error))
        }
    }

    /// Responds with the decision, or with an abort saying why there is none.
    func respond(with outcome: Result<String, Error>) {
        HookBox.respond(handle, with: outcome)
    }
}

extension HookBox {
    /// Responds to the consultation `handle` with the decision, or with an abort
    /// saying why there is none.
    static func respond(_ handle: OpaquePointer, with outcome: Result<String, Error>) {
        let decision: String
        switch outcome {
        case .success(let json):
            decision = json
        case .failure(let error):
            let text = errorText(error).trimmingCharacters(in: .whitespacesAndNewlines)
            let reason = text.isEmpty ? "the hook threw \(type(of: error))" : text
            decision = JSONValue.object(["abort": .string(reason)]).json
        }
        HandOff.publish()
        _ = withUTF8Arg(decision) { FerruleError.take(ferrule_hook_respond(handle, $0, $1)) }
    }
}
