import Foundation
import XCTest

@testable import Ferrule

final class LoggerTests: XCTestCase {
    /// A retried model request reaches the logger as a warning with the run's
    /// id and the attempt, on ferrule's logger thread; nothing below the level.
    func testARetriedRequestIsLoggedAtItsLevel() async throws {
        let kept = Locked<[(LogRecord, String)]>([])
        try Library.setLogger(level: .warn) { record in
            let thread = threadName()
            kept.withLock { $0.append((record, thread)) }
        }
        defer { Library.removeLogger() }
        // Nothing listens on port 1: the request fails, is tried once more, and fails.
        let model = ModelConfig(
            provider: "openai-compatible", baseURL: "http://127.0.0.1:1/v1", maxRetries: 1, name: "m",
            retryBackoffMs: 1)
        let agent = try Agent(config: AgentConfig(model: model))
        let run = try agent.start(.prompt("go"))
        let result = try await run.result
        XCTAssertEqual(result.error?.code, .providerNetwork, "\(result)")
        var ofRun: [(LogRecord, String)] = []
        for _ in 0..<1000 {
            ofRun = kept.withLock { $0 }.filter { $0.0.fields["run_id"] == .string(run.id) }
            if !ofRun.isEmpty { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        XCTAssertEqual(ofRun.count, 1)
        guard let (record, thread) = ofRun.first else { return }
        XCTAssertEqual(record.level, .warn)
        XCTAssertEqual(record.target, "ferrule::provider")
        XCTAssertEqual(record.fields["attempt"], 2)
        XCTAssertEqual(record.fields["code"], "PROVIDER_NETWORK")
        XCTAssertEqual(thread, "ferrule-log")
        XCTAssertTrue(kept.withLock { $0 }.allSatisfy { $0.0.level == .warn || $0.0.level == .error })
    }
}

/// The name of the current thread as the system has it.
private func threadName() -> String {
    let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
    return comm?.trimmingCharacters(in: .newlines) ?? ""
}
