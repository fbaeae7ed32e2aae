import Foundation
import XCTest

@testable import Ferrule

/// The MCP test server the conformance scenarios start, found on PATH
/// (scripts/swift.sh puts the checkout's target/release there).
private let mcpTestServer = "ferrule-mcp-test-server"

final class MCPTests: XCTestCase {
    func testAnMCPServerFromTheConfigIsCalledAndReportedInTypedEvents() async throws {
        var config = scripted([callTurn([("c1", "t__echo", ["text": "from swift"])]), answerTurn("Done.")])
        config.mcpServers = ["t": MCPServer(command: mcpTestServer)]
        let agent = try Agent(config: config)
        let run = try agent.start(.prompt("Go."))
        var reports: [(server: String, status: String, tools: [String])] = []
        for await event in run.events {
            if case .mcpServer(let server, let status, let tools, _, _, _, _, _, _) = event {
                reports.append((server, status, tools))
            }
        }
        let result = try await run.result
        XCTAssertEqual(result.status, .completed, "\(String(describing: result.error))")
        XCTAssertEqual(result.messages[2].text, "from swift")
        XCTAssertEqual(reports.count, 1)
        XCTAssertEqual(reports.first?.server, "t")
        XCTAssertEqual(reports.first?.status, "ready")
        XCTAssertTrue(reports.first?.tools.contains("t__echo") ?? false)
    }

    func testARequiredMCPServerThatCannotStartFailsTheRun() async throws {
        var config = scripted([answerTurn("Never.")])
        config.mcpServers = ["gone": MCPServer(command: "/nonexistent/ferrule-mcp-server", required: true)]
        let result = try await Agent(config: config).run(.prompt("Go."))
        XCTAssertEqual(result.status, .failed)
        XCTAssertEqual(result.error?.code, .mcpUnavailable)
    }

    func testABadMCPServerConfigIsRefusedNamingTheField() throws {
        var config = scripted([])
        config.mcpServers = ["s": MCPServer(command: "x", url: "http://127.0.0.1:1/mcp")]
        XCTAssertThrowsError(try Agent(config: config)) { error in
            XCTAssertEqual((error as? FerruleError)?.code, .invalidArg)
            XCTAssertTrue("\(error)".contains("mcp_servers.s.url"), "\(error)")
        }
    }
}
