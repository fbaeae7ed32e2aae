// The lookup_customer example on a model the host runs ("provider": "host"):
// PocketEngine, a stand-in for an on-device or local engine written in Swift,
// reads each request's new messages and streams its answer. Its first answer
// calls the Swift tool lookup_customer; its second says what the tool found.
// Everything after the model (the call's validation, the tool, the events) is
// ferrule's, as with any provider. Run it with
// `bash scripts/swift.sh swift run --package-path /ferrule/examples/swift/lookup HostModelExample`
// (make lib first); `make test-swift` runs it.
import Ferrule
import Foundation

struct LookupArguments: Decodable {
    let customerID: String

    enum CodingKeys: String, CodingKey { case customerID = "customer_id" }
}

/// What lookup_customer finds, sent to the model as JSON text.
struct Account: Codable {
    let customerID: String
    let plan: String

    enum CodingKeys: String, CodingKey {
        case plan
        case customerID = "customer_id"
    }
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
    guard let plan = plans[arguments.customerID] else {
        return ToolResult(text: "no customer \(arguments.customerID)", isError: true)
    }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let found = try encoder.encode(Account(customerID: arguments.customerID, plan: plan))
    return ToolResult(text: String(decoding: found, as: UTF8.self))
}

/// The model. ferrule reads its stream in a task of its own for each request;
/// it reads only the messages the engine has not seen (an engine that keeps its
/// own cache of the conversation reads no more).
struct PocketEngine: HostModel {
    func generate(_ request: ModelRequest) -> AsyncThrowingStream<ModelDelta, Error> {
        AsyncThrowingStream { stream in
            do {
                if let result = try request.newMessages().first(where: { $0.role == .tool }) {
                    let found = try JSONDecoder().decode(Account.self, from: Data(result.text.utf8))
                    stream.yield(.text("\(found.customerID) is on the "))
                    stream.yield(.text(found.plan))
                    stream.yield(.text(" plan."))
                } else {
                    stream.yield(.text("Let me look that up. "))
                    // A call in pieces, without an id: ferrule makes one up.
                    stream.yield(.toolCall(index: 0, name: "lookup_customer", arguments: #"{"customer_id":"#))
                    stream.yield(.toolCall(index: 0, arguments: #""C-100"}"#))
                }
                stream.yield(.usage(Usage(inputTokens: 12, outputTokens: 8)))
                stream.finish()
            } catch {
                stream.finish(throwing: error)
            }
        }
    }
}

do {
    let config = AgentConfig(
        model: ModelConfig(provider: "host", name: "pocket-engine"), builtinTools: BuiltinTools.none,
        system: "You are a helpful account assistant. Use the tools to answer.")
    print("ferrule \(Library.version), model: \(config.model.provider) \(config.model.name ?? "")")
    let agent = try Agent(config: config, tools: [lookupCustomer], model: PocketEngine())
    let run = try agent.start(.prompt("Which plan does C-100 use?"))
    for await event in run.events {
        switch event {
        case .messageDelta(_, let text?, _):
            print("text \"\(text)\"")
        case .toolCallDelta(_, let index, let argumentsDelta, _, let name):
            print("call \(index) \"\(name ?? "")\" \(argumentsDelta)")
        case .toolExecutionStart(let call):
            print("tool \(call.name)(\(call.arguments)), id \(call.id)")
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
