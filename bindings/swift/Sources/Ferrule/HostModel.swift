import CFerrule
import Foundation

/// A model the host runs: Apple's on-device Foundation Models, a local engine,
/// a gateway with a protocol of its own. Give it to `Agent` with
/// `"model": {"provider": "host", "name": ...}`; everything after the model
/// (call validation, approvals, hooks, events, retries) is as for a built-in
/// provider. A session that yields snapshots (Foundation Models) is wrapped by
/// yielding what each snapshot adds to the one before.
public protocol HostModel: Sendable {
    /// The answer to `request` as it streams. It is read in a task of its own,
    /// cancelled when the run no longer waits; its end completes the answer,
    /// and an error fails it (a `ModelError` says its code and whether it may
    /// be asked again; any other is `providerServer`, not retried).
    func generate(_ request: ModelRequest) -> AsyncThrowingStream<ModelDelta, Error>
}

/// A piece of a host model's answer.
public enum ModelDelta: Sendable, Hashable {
    /// Answer text.
    case text(String)
    /// Reasoning text.
    case thinking(String)
    /// A piece of the call at `index` (its position in the answer, from 0): its
    /// id and name when this piece carries them, and more argument text. A call
    /// that never gets an id gets one made up.
    case toolCall(index: Int, id: String? = nil, name: String? = nil, arguments: String = "")
    /// The answer's token counts (the last one wins).
    case usage(Usage)
    /// The stop reason the answer completes with: `end_turn`, `tool_use`,
    /// `length` or `content_filter`.
    case stop(String)
}

/// Fails a host model's request with `code` (a `provider…` code, `timeout` or
/// `resourceExhausted`); a `retryable` failure is asked again, as the model's
/// `max_retries` allows, when nothing had streamed yet.
public struct ModelError: Error, Sendable {
    public let code: FerruleError.Code
    public let message: String
    public let retryable: Bool

    public init(code: FerruleError.Code, message: String, retryable: Bool = false) {
        self.code = code
        self.message = message
        self.retryable = retryable
    }
}

/// A tool as a host model is told of it.
public struct ModelTool: Sendable, Hashable, Decodable {
    public let name: String
    public let description: String
    public let inputSchema: JSONValue
    public let strict: Bool

    enum CodingKeys: String, CodingKey {
        case name, description, strict
        case inputSchema = "input_schema"
    }
}

/// One request to a host model (see docs/host-model.md).
public struct ModelRequest: Sendable, Decodable {
    /// The configuration's model name.
    public let model: String
    /// The id of the run making the request, as in its events: an engine that
    /// keeps a cache per conversation keys it by this.
    public let runID: String
    /// The run's round, from 1.
    public let turn: Int
    /// The agent's system prompt, if any.
    public let system: String?
    /// How many messages the transcript holds.
    public let messageCount: Int
    /// The index of the first message the run's previous request did not hold.
    public let firstNewMessage: Int
    /// The tools the model may call this round.
    public let tools: [ModelTool]
    /// `"auto"`, `"none"`, `"required"` or `{"name": ...}`.
    public let toolChoice: JSONValue
    /// The schema the final answer must meet, if any.
    public let outputSchema: JSONValue?
    /// The configuration's output limit, if any.
    public let maxTokens: Int?
    var newMessagesJSON = "[]"

    /// The messages from `firstNewMessage` on: what an engine keeping its own
    /// cache has not read yet.
    public func newMessages() throws -> [Message] {
        try JSONCoding.decode([Message].self, from: Data(newMessagesJSON.utf8))
    }

    enum CodingKeys: String, CodingKey {
        case model, turn, system, tools
        case runID = "run_id"
        case messageCount = "message_count"
        case firstNewMessage = "first_new_message"
        case toolChoice = "tool_choice"
        case outputSchema = "output_schema"
        case maxTokens = "max_tokens"
    }
}

/// A registered host model: what ferrule's callback finds in its `user_data`.
final class ModelBox: Sendable {
    let model: HostModel

    init(_ model: HostModel) { self.model = model }

    /// ferrule's callback, on its runtime (the model is `nonblocking`): hands
    /// the request to a task and returns.
    static let generate: ferrule_model_fn = { userData, handle in
        guard let box = unbox(userData, as: ModelBox.self), let handle else { return }
        let answer = ModelAnswer(handle: handle)
        let model = box.model
        let task = Task.detached { await answer.run(model) }
        // An error means the request was answered already: nothing is left to cancel.
        _ = handOver(TaskCanceller(task)) {
            ferrule_model_request_on_cancel(handle, TaskCanceller.onCancel, $0, releaseBox)
        }
    }

    /// Sets the model on a builder as its model `name`; the builder owns the box from then on.
    func register(with builder: OpaquePointer, name: String) throws {
        let error = withUTF8Arg(name) { name, nameLength in
            var spec = ferrule_model_spec(
                struct_size: UInt32(MemoryLayout<ferrule_model_spec>.size), name: name, name_len: nameLength,
                generate: ModelBox.generate, user_data: nil, free_user_data: releaseBox, nonblocking: true)
            return handOver(self) { box in
                spec.user_data = box
                return ferrule_agent_builder_set_model(builder, &spec)
            }
        }
        if let error { throw error }
    }
}

/// The answer of one request, through its handle: exactly one end.
final class ModelAnswer: Sendable {
    nonisolated(unsafe) let handle: OpaquePointer

    init(handle: OpaquePointer) { self.handle = handle }

    /// Reads the model's stream and ends the request with what it gave.
    func run(_ model: HostModel) async {
        do {
            var request = try JSONCoding.decode(
                ModelRequest.self, from: Data(String(borrowed: ferrule_model_request_options_json(handle)).utf8))
            request.newMessagesJSON = String(borrowed: ferrule_model_request_new_messages_json(handle))
            var stop = ""
            for try await delta in model.generate(request) {
                if case .stop(let reason) = delta { stop = reason } else { try send(delta) }
            }
            HandOff.publish()
            _ = withUTF8Arg(stop) { FerruleError.take(ferrule_model_request_complete(handle, $0, $1)) }
        } catch {
            let failure = error as? ModelError
            let code = failure?.code ?? .providerServer
            let message = failure?.message ?? errorText(error)
            HandOff.publish()
            _ = withUTF8Arg(message) {
                FerruleError.take(
                    ferrule_model_request_fail(handle, code.rawValue, $0, $1, failure?.retryable ?? false))
            }
        }
    }

    private func send(_ delta: ModelDelta) throws {
        HandOff.publish()
        switch delta {
        case .text(let text):
            try withUTF8Arg(text) { try FerruleError.check(ferrule_model_request_text_delta(handle, $0, $1)) }
        case .thinking(let text):
            try withUTF8Arg(text) { try FerruleError.check(ferrule_model_request_thinking_delta(handle, $0, $1)) }
        case .toolCall(let index, let id, let name, let arguments):
            guard let index = UInt32(exactly: index) else {
                throw FerruleError(code: .invalidArg, message: "tool call index \(index) is out of range")
            }
            try withUTF8Arg(id ?? "") { id, idLength in
                try withUTF8Arg(name ?? "") { name, nameLength in
                    try withUTF8Arg(arguments) { arguments, argumentsLength in
                        try FerruleError.check(
                            ferrule_model_request_tool_call_delta(
                                handle, index, id, idLength, name, nameLength, arguments, argumentsLength))
                    }
                }
            }
        case .usage(let usage):
            try FerruleError.check(
                ferrule_model_request_usage(
                    handle, UInt64(clamping: usage.inputTokens), UInt64(clamping: usage.outputTokens),
                    UInt64(clamping: usage.cachedTokens)))
        case .stop:
            break
        }
    }
}
