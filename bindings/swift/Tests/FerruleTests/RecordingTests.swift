import Foundation
import XCTest

@testable import Ferrule

final class RecordingTests: XCTestCase {
    /// The cassette of conformance scenario 048: two runs recorded, the first
    /// of them replayed here.
    static let cassette = ConformanceTests.directory
        .appendingPathComponent("cassettes/048_replay_from_a_cassette.jsonl").path

    func testAModelConfiguredWithARecordingReplaysItWithNoServerAndNoKey() async throws {
        let model = ModelConfig(
            provider: "openai", apiKeyEnv: "FERRULE_CONFORMANCE_UNSET_KEY", baseURL: "http://127.0.0.1:9/v1",
            name: "test-model", record: Recording(path: Self.cassette, mode: "replay"))
        let schema: JSONValue = [
            "type": "object", "properties": ["customer_id": ["type": "string"]], "required": ["customer_id"],
        ]
        let lookup = Tool(name: "lookup", description: "Looks up a customer's plan.", schema: schema) { _ in
            ToolResult(text: "Gold")
        }
        let agent = try Agent(config: AgentConfig(model: model), tools: [lookup])
        let result = try await agent.run(.prompt("Plan of C-100?"))
        XCTAssertEqual(result.status, .completed, "\(result)")
        XCTAssertEqual(result.final?.text, "C-100 is on Gold.")
        let unused = try agent.unusedRecordings()
        XCTAssertEqual(unused.map(\.index), [3, 4])
        XCTAssertEqual(Set(unused.map(\.path)), ["/v1/chat/completions"])
        // The same prompt again finds its exchanges used.
        let again = try await agent.run(.prompt("Plan of C-100?"))
        XCTAssertEqual(again.error?.code, .replayMismatch)
    }

    func testAModelWithoutACassetteHasNoUnusedRecordings() throws {
        let agent = try Agent(config: scripted([answerTurn("hi")]))
        XCTAssertThrowsError(try agent.unusedRecordings()) { error in
            XCTAssertEqual((error as? FerruleError)?.code, .invalidArg)
        }
    }
}
