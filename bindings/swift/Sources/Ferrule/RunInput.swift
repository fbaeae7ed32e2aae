import Foundation

/// What a run starts from: a prompt, a transcript, an execute-only batch, an
/// interrupted run's state with decisions or results, or one call a run
/// returned.
public struct RunInput: Sendable {
    private var fields: [String: JSONValue]

    private init(_ fields: [String: JSONValue]) { self.fields = fields }

    /// One user message.
    public static func prompt(_ text: String, tools: [String]? = nil) -> RunInput {
        RunInput(["prompt": .string(text)]).limited(to: tools)
    }

    /// A transcript, such as an earlier run's messages followed by a new user message.
    public static func messages(_ messages: [Message], tools: [String]? = nil) -> RunInput {
        RunInput(["messages": JSONValue(encoding: messages)]).limited(to: tools)
    }

    /// An execute-only run: the calls of `message` (an assistant message from the
    /// host's own model) are validated and executed once, as one batch, after the
    /// `context` messages, with no model request (approval applies).
    public static func execute(_ message: Message, context: [Message] = [], tools: [String]? = nil) -> RunInput {
        var message = message
        message.role = .assistant
        return RunInput(["execute": JSONValue(encoding: message), "messages": JSONValue(encoding: context)])
            .limited(to: tools)
    }

    /// Goes on with an interrupted run from its `RunResult.state`, with a decision
    /// for every interrupted call, keyed by call id. The agent must have the
    /// tools the state names; `Agent.start` refuses a state that does not fit,
    /// naming the call id, version or tool (`invalidArg`). Rounds, usage and
    /// `maxRounds` count across resumes.
    public static func resume(state: JSONValue, decisions: [String: Decision]) -> RunInput {
        RunInput(["resume": state, "decisions": JSONValue(encoding: decisions)])
    }

    /// Goes on with an interrupted run from its state as stored
    /// (`RunResult.stateJSON`); bytes that are not JSON reach ferrule as a
    /// string, which it refuses.
    public static func resume(stateJSON: Data, decisions: [String: Decision]) -> RunInput {
        let state =
            (try? JSONCoding.decode(JSONValue.self, from: stateJSON))
            ?? .string(String(decoding: stateJSON, as: UTF8.self))
        return resume(state: state, decisions: decisions)
    }

    /// Goes on with a run that returned calls (`returningCalls()`), from its
    /// `RunResult.state`, with how each returned call ended, by call id: an
    /// `invoke` run's `RunResult.outcome`, or `{"result": <tool result>}` /
    /// `{"failed": "why"}` for a call run by code of the host's own. Every
    /// returned call needs one.
    public static func resume(state: JSONValue, results: [String: JSONValue]) -> RunInput {
        RunInput(["resume": state, "results": .object(results)])
    }

    /// Runs one call a run returned (`RunResult.calls`) by its tool alone: the
    /// arguments checked, no hook or approval asked, the function bounded by
    /// the tool's timeout, its updates as events, cancelled with the run.
    /// `attempt` is which time the host runs the call (the tool reads
    /// `ToolCall.attempt`); `handedTo` are the handoffs the returning run had
    /// made (its state's `handed_to`). The result's `outcome` is what
    /// `resume(state:results:)` takes for the call.
    public static func invoke(_ call: ToolCallRequest, attempt: Int = 1, handedTo: [String] = []) -> RunInput {
        RunInput([
            "invoke": JSONValue(encoding: call), "attempt": .integer(Int64(attempt)),
            "handed_to": .array(handedTo.map(JSONValue.string)),
        ])
    }

    /// The input of a run that returns the calls it would start instead of
    /// running them: it stops, status interrupted, where a batch's calls passed
    /// validation, hooks and approval, with them in `RunResult.calls` (at most
    /// as many as would run at once; one for a sequential batch). Run each
    /// with `invoke` (or code of your own) and go on with
    /// `resume(state:results:)`. Calls of agents and handoffs still run inside
    /// the run. Not for `execute` or `invoke`.
    public func returningCalls() -> RunInput {
        var input = self
        input.fields["calls"] = "return"
        return input
    }

    /// The input with `tools` limiting the run to these tools (host and built-in):
    /// only they are offered and callable. nil keeps the agent's.
    public func limited(to tools: [String]?) -> RunInput {
        var input = self
        input.fields["tools"] = tools.map { .array($0.map(JSONValue.string)) }
        return input
    }

    /// The input of a run whose result leaves the transcript out: `messages` is
    /// empty, and the transcript is neither written nor read, which is most of
    /// what a run of many calls costs at its end. `final`, `output`, `usage` and
    /// an interrupted run's `state` are as always. Refused (`invalidArg`) for an
    /// execute-only run and its resume, whose results are their `messages`.
    public func withoutMessages() -> RunInput {
        var input = self
        input.fields["result_messages"] = "none"
        return input
    }

    /// The input of a run whose spans go under the host's span, given by its W3C
    /// `traceparent` (and `tracestate`), when spans are recorded
    /// (`Library.setTracer`). A malformed `traceparent` makes `Agent.start`
    /// throw `invalidArg`.
    public func withTraceContext(traceparent: String, tracestate: String? = nil) -> RunInput {
        var input = self
        var context: [String: JSONValue] = ["traceparent": .string(traceparent)]
        context["tracestate"] = tracestate.map(JSONValue.string)
        input.fields["trace_context"] = .object(context)
        return input
    }

    /// The input of a run that delivers `run_end` alone (for a host that reads
    /// no events): the run then builds no other event.
    func endOnly() -> RunInput {
        var input = self
        input.fields["events"] = "run_end"
        return input
    }

    /// The input of a run that delivers its events in bursts (a JSON list of
    /// those queued so far per callback), which `EventSink` reads.
    func inBursts() -> RunInput {
        var input = self
        input.fields["event_bursts"] = true
        return input
    }

    /// The run input JSON.
    func json() throws -> String { try JSONValue.object(fields).jsonText() }
}

extension JSONValue {
    /// A value of the package's own types, which always encode.
    init<T: Encodable>(encoding value: T) {
        self = (try? JSONCoding.encode(value)).flatMap { try? JSONCoding.decode(JSONValue.self, from: $0) } ?? .null
    }
}
