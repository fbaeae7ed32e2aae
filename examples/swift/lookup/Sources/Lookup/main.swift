// The lookup_customer example: one typed Swift tool, the run's tool events
// printed as they happen. The scripted model drives it unless OPENAI_API_KEY or
// ANTHROPIC_API_KEY is set (FERRULE_MODEL then names the model).
import Ferrule
import Foundation

struct LookupArguments: Decodable {
    let customerID: String

    enum CodingKeys: String, CodingKey { case customerID = "customer_id" }
}

struct NoSuchCustomer: LocalizedError {
    let id: String
    var errorDescription: String? { "no customer \(id)" }
}

let plans = ["C-100": "Gold", "C-200": "Silver"]

let lookupCustomer = Tool(
    name: "lookup_customer", description: "Return the current plan for one customer ID.",
    schema: [
        "type": "object", "additionalProperties": false, "required": ["customer_id"],
        "properties": ["customer_id": ["type": "string", "description": "Customer ID such as C-100"]],
    ],
    arguments: LookupArguments.self
) { _, arguments in
    guard let plan = plans[arguments.customerID] else { throw NoSuchCustomer(id: arguments.customerID) }
    return ToolResult(text: "Customer \(arguments.customerID) is on the \(plan) plan.")
}

/// A real model when a key is set, else the scripted one.
func model() -> ModelConfig {
    let environment = ProcessInfo.processInfo.environment
    let name = environment["FERRULE_MODEL"]
    if environment["OPENAI_API_KEY"] != nil { return ModelConfig(provider: "openai", name: name ?? "gpt-4.1-mini") }
    if environment["ANTHROPIC_API_KEY"] != nil {
        return ModelConfig(provider: "anthropic", name: name ?? "claude-sonnet-4-5")
    }
    return .scripted([
        [
            "text": "Let me look that up.",
            "tool_calls": [["id": "call_1", "name": "lookup_customer", "arguments": ["customer_id": "C-100"]]],
        ],
        ["text": "C-100 is on the Gold plan."],
    ])
}

do {
    let config = AgentConfig(
        model: model(), builtinTools: BuiltinTools.none,
        system: "You are a helpful account assistant. Use the tools to answer.")
    print("ferrule \(Library.version), model: \(config.model.provider) \(config.model.name ?? "")")
    let agent = try Agent(config: config, tools: [lookupCustomer])
    let run = try agent.start(.prompt("Which plan does C-100 use?"))
    for await event in run.events {
        switch event {
        case .toolExecutionStart(let call):
            print("tool \(call.name)(\(call.arguments))")
        case .toolExecutionEnd(_, _, let result, let isError):
            print("  -> \(result.text) (error: \(isError))")
        case .runEnd(let status, _, _):
            print("run ended: \(status.rawValue)")
        default:
            break
        }
    }
    let result = try await run.result
    if let error = result.error {
        FileHandle.standardError.write(Data("the run failed: \(error)\n".utf8))
        exit(1)
    }
    print("answer: \(result.final?.text ?? "")")
    print("(\(result.rounds) rounds, \(result.usage.inputTokens) input and \(result.usage.outputTokens) output tokens)")
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
