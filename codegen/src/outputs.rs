//! Every file the generator writes: where it goes, the template that makes it
//! (one per language and concept), and the schema definition it is made of.

/// What a generated file is made of.
#[derive(Debug, Clone, Copy)]
pub enum Concept {
    /// The error codes (`$defs/ErrorCode`).
    ErrorCodes,
    /// A string enum of the schema, as the binding names it.
    StringEnum { definition: &'static str, type_name: &'static str },
    /// The events (`$defs/Event`): a union by `type`, with `run_id` in each.
    Events,
    /// Object types of the schema (these definitions), each named as the
    /// language's table in `codegen/src/<language>.rs` names it.
    Records(&'static [&'static str]),
    /// Object types the host writes (these definitions): every field the
    /// schema does not require may be left out, for ferrule's default.
    Inputs(&'static [&'static str]),
    /// The hook stages' decisions (`<Stage>Decision` for each value of
    /// `$defs/HookStage`, in order), each a choice of `{}` and objects of one
    /// key.
    Decisions,
    /// Unions the binding holds as one type with every variant's fields (see
    /// `model::read_flat`): each definition with its tag's JSON name, and the
    /// language's table of fields it holds under a key of its own, or
    /// together with another variant's of the same JSON name (definition,
    /// tag, JSON name, host key).
    Flat { unions: &'static [(&'static str, &'static str)], renames: &'static [Rename] },
    /// A union by `type` the binding holds as an enum, a case per variant
    /// and one for a type it does not know (see `model::read_tagged`).
    Cases(&'static str),
    /// The hook stages (`$defs/HookStage`): a typed hook for each, taking
    /// the stage's payload (`<Stage>Payload`) and giving its decision
    /// (`<Stage>Decision`).
    HookStages,
}

/// A variant's field a binding holds under a key of its own (or, with its
/// JSON name as the key, knowingly together with another variant's field of
/// that name): the definition, the variant's tag, the field's JSON name and
/// the key.
pub type Rename = (&'static str, &'static str, &'static str, &'static str);

/// The messages (by role) and their parts (by type).
const TRANSCRIPT: &[(&str, &str)] = &[("Message", "role"), ("Part", "type")];

/// One generated file.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Its path in the checkout.
    pub path: &'static str,
    /// Its template's name (a file under `codegen/templates`).
    pub template: &'static str,
    pub concept: Concept,
}

/// The object types every binding generates as plain records.
const RECORDS: Concept = Concept::Records(&[
    "RunResult",
    "Interruption",
    "Decision",
    "Usage",
    "ToolCall",
    "ToolResult",
    "HookToolCall",
    "RunStartPayload",
    "TurnStartPayload",
    "ToolCallPayload",
    "ToolResultPayload",
    "FinalAnswerPayload",
    "LeftOutTool",
    "UnusedExchange",
    "LogRecord",
]);

/// The documents the host writes that every binding generates: the agent
/// configuration.
const INPUTS: Concept = Concept::Inputs(&[
    "AgentConfig",
    "ModelConfig",
    "Thinking",
    "Timeouts",
    "RecordConfig",
    "TraceConfig",
    "OtlpConfig",
    "HistoryConfig",
    "BuiltinToolsConfig",
    "SandboxConfig",
    "McpServerConfig",
]);

/// The agent configuration and the options of tools and of agents added as
/// tools: Swift and Kotlin take them as documents (Go as functional options).
const INPUTS_AND_TOOL_OPTIONS: Concept = Concept::Inputs(&[
    "AgentConfig",
    "ModelConfig",
    "Thinking",
    "Timeouts",
    "RecordConfig",
    "TraceConfig",
    "OtlpConfig",
    "HistoryConfig",
    "BuiltinToolsConfig",
    "SandboxConfig",
    "McpServerConfig",
    "ToolOptions",
    "AgentToolOptions",
]);

/// Fields no binding offers, by definition: every tool and hook of a binding
/// is registered `nonblocking` (its callback hands the call to the language's
/// own threads), so the binding sets it.
pub const LEFT_OUT: &[(&str, &str)] = &[("ToolOptions", "nonblocking")];

const STATUS: Concept = Concept::StringEnum { definition: "RunStatus", type_name: "Status" };
const LOG_LEVEL: Concept = Concept::StringEnum { definition: "LogLevel", type_name: "LogLevel" };

/// Every generated file.
pub const OUTPUTS: &[Output] = &[
    Output { path: "bindings/go/error_codes_gen.go", template: "go/error_codes.go.j2", concept: Concept::ErrorCodes },
    Output { path: "bindings/go/status_gen.go", template: "go/string_enum.go.j2", concept: STATUS },
    Output { path: "bindings/go/log_level_gen.go", template: "go/string_enum.go.j2", concept: LOG_LEVEL },
    Output { path: "bindings/go/events_gen.go", template: "go/events.go.j2", concept: Concept::Events },
    Output { path: "bindings/go/records_gen.go", template: "go/records.go.j2", concept: RECORDS },
    Output { path: "bindings/go/inputs_gen.go", template: "go/inputs.go.j2", concept: INPUTS },
    Output { path: "bindings/go/decisions_gen.go", template: "go/decisions.go.j2", concept: Concept::Decisions },
    Output {
        path: "bindings/go/message_gen.go",
        template: "go/flat.go.j2",
        concept: Concept::Flat { unions: TRANSCRIPT, renames: crate::go::FLAT_RENAMES },
    },
    Output { path: "bindings/go/hook_stages_gen.go", template: "go/hook_stages.go.j2", concept: Concept::HookStages },
    Output {
        path: "bindings/swift/Sources/Ferrule/ErrorCodes_gen.swift",
        template: "swift/error_codes.swift.j2",
        concept: Concept::ErrorCodes,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Status_gen.swift",
        template: "swift/string_enum.swift.j2",
        concept: STATUS,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/LogLevel_gen.swift",
        template: "swift/string_enum.swift.j2",
        concept: LOG_LEVEL,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Event_gen.swift",
        template: "swift/events.swift.j2",
        concept: Concept::Events,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Records_gen.swift",
        template: "swift/records.swift.j2",
        concept: RECORDS,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Inputs_gen.swift",
        template: "swift/records.swift.j2",
        concept: INPUTS_AND_TOOL_OPTIONS,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Message_gen.swift",
        template: "swift/flat.swift.j2",
        concept: Concept::Flat { unions: &[("Message", "role")], renames: &[] },
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Part_gen.swift",
        template: "swift/cases.swift.j2",
        concept: Concept::Cases("Part"),
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/Decisions_gen.swift",
        template: "swift/decisions.swift.j2",
        concept: Concept::Decisions,
    },
    Output {
        path: "bindings/swift/Sources/Ferrule/HookStages_gen.swift",
        template: "swift/hook_stages.swift.j2",
        concept: Concept::HookStages,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/HookStages_gen.kt",
        template: "kotlin/hook_stages.kt.j2",
        concept: Concept::HookStages,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/Decisions_gen.kt",
        template: "kotlin/decisions.kt.j2",
        concept: Concept::Decisions,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/ErrorCode_gen.kt",
        template: "kotlin/error_codes.kt.j2",
        concept: Concept::ErrorCodes,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/Event_gen.kt",
        template: "kotlin/events.kt.j2",
        concept: Concept::Events,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/Records_gen.kt",
        template: "kotlin/records.kt.j2",
        concept: RECORDS,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/Inputs_gen.kt",
        template: "kotlin/records.kt.j2",
        concept: INPUTS_AND_TOOL_OPTIONS,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/Message_gen.kt",
        template: "kotlin/flat.kt.j2",
        concept: Concept::Flat { unions: TRANSCRIPT, renames: crate::kotlin::FLAT_RENAMES },
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/Status_gen.kt",
        template: "kotlin/string_enum.kt.j2",
        concept: STATUS,
    },
    Output {
        path: "bindings/kotlin/src/main/kotlin/dev/ferrule/LogLevel_gen.kt",
        template: "kotlin/string_enum.kt.j2",
        concept: LOG_LEVEL,
    },
];

/// The templates, by name, built into the generator.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("go/error_codes.go.j2", include_str!("../templates/go/error_codes.go.j2")),
    ("go/string_enum.go.j2", include_str!("../templates/go/string_enum.go.j2")),
    ("go/events.go.j2", include_str!("../templates/go/events.go.j2")),
    ("go/records.go.j2", include_str!("../templates/go/records.go.j2")),
    ("go/inputs.go.j2", include_str!("../templates/go/inputs.go.j2")),
    ("go/decisions.go.j2", include_str!("../templates/go/decisions.go.j2")),
    ("go/flat.go.j2", include_str!("../templates/go/flat.go.j2")),
    ("go/hook_stages.go.j2", include_str!("../templates/go/hook_stages.go.j2")),
    ("swift/error_codes.swift.j2", include_str!("../templates/swift/error_codes.swift.j2")),
    ("swift/string_enum.swift.j2", include_str!("../templates/swift/string_enum.swift.j2")),
    ("swift/events.swift.j2", include_str!("../templates/swift/events.swift.j2")),
    ("swift/records.swift.j2", include_str!("../templates/swift/records.swift.j2")),
    ("swift/decisions.swift.j2", include_str!("../templates/swift/decisions.swift.j2")),
    ("swift/flat.swift.j2", include_str!("../templates/swift/flat.swift.j2")),
    ("swift/cases.swift.j2", include_str!("../templates/swift/cases.swift.j2")),
    ("swift/coding.swift.j2", include_str!("../templates/swift/coding.swift.j2")),
    ("swift/hook_stages.swift.j2", include_str!("../templates/swift/hook_stages.swift.j2")),
    ("kotlin/error_codes.kt.j2", include_str!("../templates/kotlin/error_codes.kt.j2")),
    ("kotlin/string_enum.kt.j2", include_str!("../templates/kotlin/string_enum.kt.j2")),
    ("kotlin/events.kt.j2", include_str!("../templates/kotlin/events.kt.j2")),
    ("kotlin/records.kt.j2", include_str!("../templates/kotlin/records.kt.j2")),
    ("kotlin/decisions.kt.j2", include_str!("../templates/kotlin/decisions.kt.j2")),
    ("kotlin/flat.kt.j2", include_str!("../templates/kotlin/flat.kt.j2")),
    ("kotlin/hook_stages.kt.j2", include_str!("../templates/kotlin/hook_stages.kt.j2")),
];
