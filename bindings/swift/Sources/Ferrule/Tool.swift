import CFerrule
import Foundation

/// A Swift function the model can call. Its body runs in a task of its own for
/// each call; what it returns is the result, and an error it throws becomes an
/// error result the model sees. The task is cancelled when the call times out
/// or its run is cancelled (the result is then discarded).
public struct Tool: Sendable {
    public let name: String
    public let description: String
    let schema: JSONValue?
    let options: ToolOptions
    let body: @Sendable (ToolCall) async throws -> ToolResult
    /// The body of an inline tool, run inside ferrule's callback.
    let inlineBody: (@Sendable (ToolCall) throws -> ToolResult)?

    /// A tool whose body gets the arguments through `call` (`call.arguments`,
    /// `call.decodeArguments(_:)`). `schema` is a JSON Schema (Draft 2020-12) the
    /// arguments must satisfy before the body runs; nil allows any object.
    public init(
        name: String, description: String, schema: JSONValue? = nil, options: ToolOptions = ToolOptions(),
        _ body: @escaping @Sendable (ToolCall) async throws -> ToolResult
    ) {
        self.name = name
        self.description = description
        self.schema = schema
        self.options = options
        self.body = body
        inlineBody = nil
    }

    /// A tool whose synchronous body runs inside ferrule's callback, on its
    /// runtime thread, instead of in a task: a call then costs no thread
    /// hand-off, which for a body that returns within microseconds (a lookup
    /// in memory, a computation) is most of what it costs. The body must never
    /// block (no I/O, no waiting on locks or semaphores): while it runs, its
    /// run and every run sharing that thread wait. `call.update` does not wait
    /// there: with the run's event queue full it throws `wouldDeadlock`. (A function of its own name, so
    /// that no closure written for `init` becomes inline by overload.)
    public static func inline(
        name: String, description: String, schema: JSONValue? = nil, options: ToolOptions = ToolOptions(),
        _ body: @escaping @Sendable (ToolCall) throws -> ToolResult
    ) -> Tool {
        Tool(name: name, description: description, schema: schema, options: options, inlineBody: body)
    }

    private init(
        name: String, description: String, schema: JSONValue?, options: ToolOptions,
        inlineBody: @escaping @Sendable (ToolCall) throws -> ToolResult
    ) {
        self.name = name
        self.description = description
        self.schema = schema
        self.options = options
        body = { try inlineBody($0) }
        self.inlineBody = inlineBody
    }

    /// A tool whose body gets the arguments decoded into `Args`. The schema
    /// must describe `Args` (ferrule validates the arguments against it first).
    public init<Args: Decodable>(
        name: String, description: String, schema: JSONValue, arguments: Args.Type,
        options: ToolOptions = ToolOptions(),
        _ body: @escaping @Sendable (ToolCall, Args) async throws -> ToolResult
    ) {
        self.init(name: name, description: description, schema: schema, options: options) { call in
            try await body(call, try call.decodeArguments(Args.self))
        }
    }
}

extension ToolOptions {
    /// The options JSON: every Swift tool is `nonblocking` (its callback hands
    /// the call to a task and returns at once), so `ToolOptions` (generated
    /// from the schema) has no such field.
    var json: String {
        var fields = JSONValue(encoding: self)
        if case .object(var members) = fields {
            members["nonblocking"] = true
            fields = .object(members)
        }
        return fields.json
    }
}

/// One call of a tool, handed to its body.
public final class ToolCall: Sendable {
    /// The call id the model gave.
    public let id: String
    public let name: String
    /// The arguments as the model wrote them: a JSON object that satisfied the schema.
    public let argumentsJSON: String
    /// The W3C `traceparent` of the call's `execute_tool` span, for the tool's
    /// own spans to go under it; empty when the run records no spans.
    public let traceparent: String
    nonisolated(unsafe) private let handle: OpaquePointer

    init(handle: OpaquePointer) {
        self.handle = handle
        id = String(borrowed: ferrule_tool_call_id(handle))
        name = String(borrowed: ferrule_tool_call_name(handle))
        argumentsJSON = String(borrowed: ferrule_tool_call_arguments(handle))
        // Copied now: borrowed, it would go with an answer given meanwhile.
        traceparent = String(borrowed: ferrule_tool_call_traceparent(handle))
    }

    /// The arguments, parsed.
    public var arguments: JSONValue { (try? JSONValue(json: argumentsJSON)) ?? .object([:]) }

    /// The arguments decoded into `T`.
    public func decodeArguments<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try JSONCoding.decode(type, from: Data(argumentsJSON.utf8))
        } catch {
            throw FerruleError(code: .invalidArg, message: "the arguments do not fit \(type): \(error)")
        }
    }

    /// Which time the call runs: 1, unless the host runs a call a run returned
    /// again and says so (run input `invoke` with `attempt`), as after a
    /// crash. A tool that must not do its work twice keys it by `id` and looks
    /// for an earlier attempt's. 0 once the call was answered.
    public var attempt: Int { Int(ferrule_tool_call_attempt(handle)) }

    /// Whether the call timed out or its run was cancelled (its task is cancelled too).
    public var isCancelled: Bool { ferrule_tool_call_is_cancelled(handle) }

    /// Sends a provisional result as a `toolExecutionUpdate` event; it never
    /// reaches the model. Waits for room when the run's event queue is full.
    /// Throws `alreadyCompleted` once the body has returned.
    /// Throws, sending nothing, for a result JSON cannot write (a NaN in `details`).
    public func update(_ partial: ToolResult) throws {
        let json = try partial.resultJSON()
        HandOff.publish()
        try withUTF8Arg(json) { try FerruleError.check(ferrule_tool_call_update(handle, $0, $1)) }
    }

    /// Runs the body and completes the call with what it returns or throws:
    /// exactly once.
    func run(_ body: @Sendable (ToolCall) async throws -> ToolResult) async {
        do {
            finish(.success(try await body(self).resultJSON()))
        } catch {
            finish(.failure(error))
        }
    }

    /// Runs an inline tool's body, in ferrule's callback, and completes the
    /// call with what it returns or throws.
    func runInline(_ body: @Sendable (ToolCall) throws -> ToolResult) {
        finish(Result { try body(self).resultJSON() })
    }

    /// Completes the call with the result JSON, or fails it with the error's text.
    private func finish(_ outcome: Result<String, Error>) {
        HandOff.publish()
        switch outcome {
        case .success(let json):
            _ = withUTF8Arg(json) { FerruleError.take(ferrule_tool_call_complete(handle, $0, $1)) }
        case .failure(let error):
            _ = withUTF8Arg(errorText(error)) { FerruleError.take(ferrule_tool_call_fail(handle, $0, $1)) }
        }
    }
}

/// What the model (or a hook's abort) is told of a Swift error.
func errorText(_ error: Error) -> String {
    if let error = error as? FerruleError { return error.message }
    if let error = error as? LocalizedError, let text = error.errorDescription { return text }
    return String(describing: error)
}

/// A registered tool: what ferrule's callback finds in its `user_data`.
final class ToolBox: Sendable {
    let tool: Tool

    init(_ tool: Tool) { self.tool = tool }

    /// ferrule's callback, on its runtime (the tool is `nonblocking`): runs an
    /// inline tool's body, or hands the call to a task and returns.
    static let execute: ferrule_tool_fn = { userData, handle in
        guard let box = unbox(userData, as: ToolBox.self), let handle else { return }
        let call = ToolCall(handle: handle)
        if let inline = box.tool.inlineBody {
            call.runInline(inline)
            return
        }
        let body = box.tool.body
        let task = Task.detached { await call.run(body) }
        // An error means the call was completed already: nothing is left to cancel.
        _ = handOver(TaskCanceller(task)) {
            ferrule_tool_call_on_cancel(handle, TaskCanceller.onCancel, $0, releaseBox)
        }
    }

    /// Adds the tool to a builder; the builder owns the box from then on.
    func register(with builder: OpaquePointer) throws {
        let schema = try tool.schema?.jsonText() ?? ""
        let error = withUTF8Arg(tool.name) { name, nameLength in
            withUTF8Arg(tool.description) { description, descriptionLength in
                withUTF8Arg(schema) { schema, schemaLength in
                    withUTF8Arg(tool.options.json) { options, optionsLength in
                        var spec = ferrule_tool_spec(
                            struct_size: UInt32(MemoryLayout<ferrule_tool_spec>.size),
                            name: name, name_len: nameLength, description: description,
                            description_len: descriptionLength, input_schema: schema, input_schema_len: schemaLength,
                            options: options, options_len: optionsLength, execute: ToolBox.execute, user_data: nil,
                            free_user_data: releaseBox)
                        return handOver(self) { box in
                            spec.user_data = box
                            return ferrule_agent_builder_add_tool(builder, &spec)
                        }
                    }
                }
            }
        }
        if let error { throw error }
    }
}
