import CFerrule
import XCTest

@testable import Ferrule

final class LibraryTests: XCTestCase {
    func testTheLibrarySpeaksThisPackagesABI() {
        XCTAssertTrue(Library.abiMatches)
        XCTAssertFalse(Library.version.isEmpty)
    }

    /// A scripted run through the C module: the toolchain, the module map and the
    /// library work together.
    func testAScriptedRunThroughTheCModule() throws {
        let config = #"{"model": {"provider": "scripted", "script": [{"text": "hello from swift"}]}}"#
        var builder: OpaquePointer?
        XCTAssertNil(config.withCString { ferrule_agent_builder_new($0, strlen($0), &builder) })
        var agent: OpaquePointer?
        XCTAssertNil(ferrule_agent_build(builder, &agent))
        defer { ferrule_agent_free(agent) }
        let input = #"{"prompt": "hi"}"#
        var run: OpaquePointer?
        XCTAssertNil(input.withCString { ferrule_agent_start(agent, $0, strlen($0), nil, nil, nil, &run) })
        defer { ferrule_run_free(run) }
        var text: UnsafeMutablePointer<CChar>?
        var length = 0
        XCTAssertNil(ferrule_run_wait(run, &text, &length))
        defer { ferrule_string_free(text) }
        let result = String(cString: text!)
        XCTAssertTrue(result.contains(#""status":"completed""#), result)
        XCTAssertTrue(result.contains("hello from swift"), result)
    }
}
