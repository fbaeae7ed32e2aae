/// An agent's configuration: the configuration JSON of ferrule's C ABI, field
/// for field (docs/json.md, "Agent config"). A nil field is left out and takes
/// ferrule's default.
public struct AgentConfig: Sendable, Hashable, Codable {
    public var model: ModelConfig
    public var system: String?
    /// "parallel" (the default) or "sequential".
    public var toolExecution: String?
    public var toolChoice: ToolChoice?
    public var maxRounds: Int?
    public var maxConcurrentTools: Int?
    public var toolTimeoutMs: Int?
    /// Bounds a whole run: at the deadline it ends failed with code `timeout`.
    public var runTimeoutMs: Int?
    /// A JSON Schema the final answer must satisfy (`RunResult.output(as:)`).
    public var outputSchema: JSONValue?
    /// How many times a wrong answer goes back to the model (default 2) before
    /// the run fails with `invalidOutput`.
    public var outputRetries: Int?
    /// The history budget: requests leave out the oldest messages to stay within it.
    public var history: History?
    /// Bounds one hook's decision (default 60 000; 0 waits for ever).
    public var hookTimeoutMs: Int?
    public var maxToolResultBytes: Int?
    public var builtinTools: BuiltinTools?

    public init(
        model: ModelConfig, system: String? = nil, toolExecution: String? = nil,
        toolChoice: ToolChoice? = nil, maxRounds: Int? = nil, maxConcurrentTools: Int? = nil,
        toolTimeoutMs: Int? = nil, runTimeoutMs: Int? = nil, outputSchema: JSONValue? = nil,
        outputRetries: Int? = nil, history: History? = nil, hookTimeoutMs: Int? = nil,
        maxToolResultBytes: Int? = nil, builtinTools: BuiltinTools? = nil
    ) {
        self.model = model
        self.system = system
        self.toolExecution = toolExecution
        self.toolChoice = toolChoice
        self.maxRounds = maxRounds
        self.maxConcurrentTools = maxConcurrentTools
        self.toolTimeoutMs = toolTimeoutMs
        self.runTimeoutMs = runTimeoutMs
        self.outputSchema = outputSchema
        self.outputRetries = outputRetries
        self.history = history
        self.hookTimeoutMs = hookTimeoutMs
        self.maxToolResultBytes = maxToolResultBytes
        self.builtinTools = builtinTools
    }

    enum CodingKeys: String, CodingKey {
        case model, system, history
        case toolExecution = "tool_execution", toolChoice = "tool_choice", maxRounds = "max_rounds"
        case maxConcurrentTools = "max_concurrent_tools", toolTimeoutMs = "tool_timeout_ms"
        case runTimeoutMs = "run_timeout_ms", outputSchema = "output_schema", outputRetries = "output_retries"
        case hookTimeoutMs = "hook_timeout_ms", maxToolResultBytes = "max_tool_result_bytes"
        case builtinTools = "builtin_tools"
    }
}

/// The `model` object: which provider serves the agent and how to reach it.
public struct ModelConfig: Sendable, Hashable, Codable {
    /// "openai", "openai-responses", "anthropic", "openai-compatible" or "scripted".
    public var provider: String
    public var name: String?
    public var baseURL: String?
    /// The environment variable holding the API key (the key itself never
    /// passes through the configuration).
    public var apiKeyEnv: String?
    public var headers: [String: String]?
    /// The scripted model's turns.
    public var script: [JSONValue]?
    public var stream: Bool?
    public var maxTokens: Int?
    public var maxRetries: Int?
    public var retryBackoffMs: Int?
    public var timeouts: Timeouts?
    public var imageInput: Bool?
    public var strictTools: Bool?
    /// openai-responses options.
    public var encryptedReasoning: Bool?
    public var serverHistory: Bool?

    public init(
        provider: String, name: String? = nil, baseURL: String? = nil, apiKeyEnv: String? = nil,
        headers: [String: String]? = nil, script: [JSONValue]? = nil, stream: Bool? = nil,
        maxTokens: Int? = nil, maxRetries: Int? = nil, retryBackoffMs: Int? = nil,
        timeouts: Timeouts? = nil, imageInput: Bool? = nil, strictTools: Bool? = nil,
        encryptedReasoning: Bool? = nil, serverHistory: Bool? = nil
    ) {
        self.provider = provider
        self.name = name
        self.baseURL = baseURL
        self.apiKeyEnv = apiKeyEnv
        self.headers = headers
        self.script = script
        self.stream = stream
        self.maxTokens = maxTokens
        self.maxRetries = maxRetries
        self.retryBackoffMs = retryBackoffMs
        self.timeouts = timeouts
        self.imageInput = imageInput
        self.strictTools = strictTools
        self.encryptedReasoning = encryptedReasoning
        self.serverHistory = serverHistory
    }

    /// The offline scripted model, answering with `turns` in order.
    public static func scripted(_ turns: [JSONValue]) -> ModelConfig {
        ModelConfig(provider: "scripted", script: turns)
    }

    enum CodingKeys: String, CodingKey {
        case provider, name, headers, script, stream, timeouts
        case baseURL = "base_url", apiKeyEnv = "api_key_env", maxTokens = "max_tokens", maxRetries = "max_retries"
        case retryBackoffMs = "retry_backoff_ms", imageInput = "image_input", strictTools = "strict_tools"
        case encryptedReasoning = "encrypted_reasoning", serverHistory = "server_history"
    }
}

/// Time limits of one model request, in milliseconds.
public struct Timeouts: Sendable, Hashable, Codable {
    public var connectMs: Int?
    public var firstByteMs: Int?
    public var idleMs: Int?
    public var totalMs: Int?

    public init(connectMs: Int? = nil, firstByteMs: Int? = nil, idleMs: Int? = nil, totalMs: Int? = nil) {
        self.connectMs = connectMs
        self.firstByteMs = firstByteMs
        self.idleMs = idleMs
        self.totalMs = totalMs
    }

    enum CodingKeys: String, CodingKey {
        case connectMs = "connect_ms", firstByteMs = "first_byte_ms", idleMs = "idle_ms", totalMs = "total_ms"
    }
}

/// Which tools the model must or may call.
public enum ToolChoice: Sendable, Hashable, Codable {
    case auto, none, required
    /// The model must call this tool.
    case tool(String)

    private struct Named: Codable { var name: String }

    public init(from decoder: Decoder) throws {
        if let named = try? Named(from: decoder) {
            self = .tool(named.name)
            return
        }
        let mode = try String(from: decoder)
        switch mode {
        case "auto": self = .auto
        case "none": self = .none
        case "required": self = .required
        default:
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "unknown tool_choice \(mode)"))
        }
    }

    public func encode(to encoder: Encoder) throws {
        switch self {
        case .auto: try "auto".encode(to: encoder)
        case .none: try "none".encode(to: encoder)
        case .required: try "required".encode(to: encoder)
        case .tool(let name): try Named(name: name).encode(to: encoder)
        }
    }
}

/// The history budget.
public struct History: Sendable, Hashable, Codable {
    public var maxInputTokens: Int

    public init(maxInputTokens: Int) { self.maxInputTokens = maxInputTokens }

    enum CodingKeys: String, CodingKey { case maxInputTokens = "max_input_tokens" }
}

/// Selects and configures ferrule's built-in tools (read, write, edit, bash,
/// apply_patch, list_files).
public struct BuiltinTools: Sendable, Hashable, Codable {
    public var workingDirectory: String?
    /// The tools offered, built-in and host alike: nil offers the default
    /// selection, an empty list none.
    public var allowed: [String]?
    public var excluded: [String]?
    public var disable: Bool?
    public var confine: Bool?
    public var bashTimeoutS: Int?
    /// Key variables bash commands may see after all.
    public var bashPassEnv: [String]?
    /// Built-ins whose calls wait for the host's decision.
    public var needsApproval: [String]?

    public init(
        workingDirectory: String? = nil, allowed: [String]? = nil, excluded: [String]? = nil,
        disable: Bool? = nil, confine: Bool? = nil, bashTimeoutS: Int? = nil, bashPassEnv: [String]? = nil,
        needsApproval: [String]? = nil
    ) {
        self.workingDirectory = workingDirectory
        self.allowed = allowed
        self.excluded = excluded
        self.disable = disable
        self.confine = confine
        self.bashTimeoutS = bashTimeoutS
        self.bashPassEnv = bashPassEnv
        self.needsApproval = needsApproval
    }

    /// No built-in tools.
    public static let none = BuiltinTools(disable: true)

    enum CodingKeys: String, CodingKey {
        case allowed, excluded, disable, confine
        case workingDirectory = "working_directory", bashTimeoutS = "bash_timeout_s"
        case bashPassEnv = "bash_pass_env", needsApproval = "needs_approval"
    }
}
