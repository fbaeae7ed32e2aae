/// A run start hook's decision.
public enum RunStartDecision: Sendable {
    case proceed
    /// Replaces the run's input.
    case replaceMessages([Message])
}

/// A turn start hook's decision.
public enum TurnStartDecision: Sendable {
    case proceed
    /// This turn's tool set (a subset of the agent's; empty offers none).
    case tools([String])
    /// User or system messages appended before the request, marked as injections.
    case inject([Message])
    /// A history that replaces the run's from now on (it must pair every call
    /// with its result).
    case replaceMessages([Message])
}

/// A tool call hook's decision.
public enum ToolCallDecision: Sendable {
    case proceed
    /// The tool does not run; the model sees an error result with this text.
    case deny(String)
    /// Replaced arguments (a JSON object), validated again.
    case replaceArguments(JSONValue)
    /// Approves a call that needs approval.
    case approve
    /// Makes the call need approval: the run ends `interrupted`.
    case interrupt
}

/// A tool result hook's decision.
public enum ToolResultDecision: Sendable {
    case proceed
    /// Replaces the result: checked as a tool's (one of the wrong shape becomes
    /// an error result; `.json` text that is not JSON fails the run, `invalidJSON`).
    case replace(ToolResult)
}

/// A final answer hook's decision.
public enum FinalAnswerDecision: Sendable {
    case accept
    /// Sends the answer back: the feedback goes to the model as a user message
    /// and the loop goes on (a round more).
    case retry(String)
}

/// A decision as the decision JSON of the C ABI. Throws for what JSON cannot
/// write (a NaN in replaced arguments); the hook then aborts the run, saying so.
protocol HookDecisionJSON: Sendable {
    func decisionJSON() throws -> String
}

/// `{"key": value}`, or `{}` without a key.
private func decision(_ key: String? = nil, _ value: JSONValue = .null) throws -> String {
    guard let key else { return "{}" }
    return try JSONValue.object([key: value]).jsonText()
}

extension RunStartDecision: HookDecisionJSON {
    func decisionJSON() throws -> String {
        switch self {
        case .proceed: try decision()
        case .replaceMessages(let messages): try decision("messages", JSONValue(encoding: messages))
        }
    }
}

extension TurnStartDecision: HookDecisionJSON {
    func decisionJSON() throws -> String {
        switch self {
        case .proceed: try decision()
        case .tools(let tools): try decision("tools", JSONValue(encoding: tools))
        case .inject(let messages): try decision("inject", JSONValue(encoding: messages))
        case .replaceMessages(let messages): try decision("messages", JSONValue(encoding: messages))
        }
    }
}

extension ToolCallDecision: HookDecisionJSON {
    func decisionJSON() throws -> String {
        switch self {
        case .proceed: try decision()
        case .deny(let text): try decision("deny", .string(text))
        case .replaceArguments(let arguments): try decision("arguments", arguments)
        case .approve: try decision("approve", true)
        case .interrupt: try decision("interrupt", true)
        }
    }
}

extension ToolResultDecision: HookDecisionJSON {
    func decisionJSON() throws -> String {
        switch self {
        case .proceed: try decision()
        // The result JSON goes in as it is, for ferrule to check (as a tool's).
        case .replace(let result): #"{"result": "# + (try result.resultJSON()) + "}"
        }
    }
}

extension FinalAnswerDecision: HookDecisionJSON {
    func decisionJSON() throws -> String {
        switch self {
        case .accept: try decision()
        case .retry(let feedback): try decision("retry", .string(feedback))
        }
    }
}
