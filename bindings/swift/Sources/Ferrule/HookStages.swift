/// A decision as the decision JSON of the C ABI. Throws for what JSON cannot
/// write (a NaN in replaced arguments); the hook then aborts the run, saying so.
protocol HookDecisionJSON: Sendable {
    func decisionJSON() throws -> String
}

/// The decision `{"key": value}` (each stage's decision enum is generated, in
/// Decisions_gen.swift). Throws for what JSON cannot write.
func decision<Value: Encodable>(_ key: String, _ value: Value) throws -> String {
    member(key, try JSONCoding.text(value))
}

/// The decision `{"key": result}`, the result JSON as the tool would give it,
/// for ferrule to check (as a tool's).
func decision(_ key: String, _ result: ToolResult) throws -> String {
    member(key, try result.resultJSON())
}

/// `{"key": json}`; a decision's key is a plain word of the schema.
private func member(_ key: String, _ json: String) -> String { #"{"\#(key)": "# + json + "}" }
