// The configuration's types (AgentConfig, ModelConfig, Timeouts, History,
// BuiltinTools) are generated from the schema (Inputs_gen.swift): a nil field
// is left out and takes ferrule's default.

extension ModelConfig {
    /// The offline scripted model, answering with `turns` in order.
    public static func scripted(_ turns: [JSONValue]) -> ModelConfig {
        ModelConfig(provider: "scripted", script: turns)
    }
}

extension BuiltinTools {
    /// No built-in tools.
    public static let none = BuiltinTools(disable: true)
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
