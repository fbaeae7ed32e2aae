import Foundation
import XCTest

@testable import Ferrule

/// The package's own reader of run results, events and payloads: what it
/// reads equals what `JSONDecoder` reads, and what `JSONDecoder` refuses it
/// refuses too; it also refuses a key given twice, which `JSONDecoder` reads
/// as its first value.
final class JSONReaderTests: XCTestCase {
    /// A result with every role, every kind of part, usage, an error,
    /// interruptions, output and state.
    let everything = """
        {"status": "interrupted", "final": {"role": "assistant", "content": [{"type": "text", "text": "hi"}],
         "stop_reason": "end_turn"},
         "messages": [
          {"role": "system", "content": "Be \\"brief\\".\\n\\u00e9\\ud83e\\udd80\\/"},
          {"role": "user", "content": [{"type": "text", "text": "look", "signature": "s"},
            {"type": "image", "media_type": "image/png", "data": "AAEC"}, {"type": "image", "url": "https://x/y.png"},
            {"type": "file", "media_type": "application/pdf", "data": "JVBE", "name": "a.pdf"},
            {"type": "audio", "data": "AAEC", "format": {"rate": 48000, "tags": [1, 2.5, null, true]}}],
           "origin": "injection"},
          {"role": "user", "content": ""},
          {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sig", "id": "rs_1"},
            {"type": "redacted_thinking", "data": "opaque"}, {"type": "text", "text": ""}],
           "tool_calls": [{"id": "c1", "name": "echo", "arguments": "{\\"text\\": \\"a\\"}", "signature": "g"},
            {"id": "c2", "name": "echo", "arguments": "not json"}],
           "stop_reason": "tool_use", "usage": {"input_tokens": 12, "output_tokens": 3, "cached_tokens": 10}},
          {"role": "tool", "tool_call_id": "c1", "name": "echo", "content": [{"type": "text", "text": "a"}],
           "is_error": true},
          {"role": "tool", "tool_call_id": "c2", "name": "echo", "content": null, "is_error": false, "stray": [{}]}
         ],
         "usage": {"input_tokens": 12, "output_tokens": 3}, "rounds": 2,
         "error": {"code": "HOOK_ABORTED", "message": "stop"}, "output": {"answer": [1, "two", {"three": 3.5}]},
         "interruptions": [{"call_id": "c3", "name": "delete", "arguments": {"path": "/"}, "path": [], "key": "c3"}],
         "state": {"version": 1, "anything": ["kept", 18446744073709551615]}, "agent": "helper", "unknown": {"x": []}}
        """

    func testEveryFieldReadsAsJSONDecoderReadsIt() throws {
        let data = Data(everything.utf8)
        let expected = try JSONDecoder().decode(RunResult.self, from: data)
        let read = try JSONReader.decode(RunResult.self, from: data)
        XCTAssertEqual(read, expected)
        XCTAssertEqual(read.messages.count, 6)
        XCTAssertEqual(read.messages[0].text, "Be \"brief\".\né🦀/")
        XCTAssertEqual(read.messages[2].content, [], "no text is no parts")
        XCTAssertEqual(read.messages[3].usage?.cachedTokens, 10)
        if case .other(let audio) = read.messages[1].content[4] {
            XCTAssertEqual(audio["format"]?["rate"], .integer(48000))
        } else {
            XCTFail("a part of an unknown type is kept as JSON")
        }
    }

    func testAnyValueReadsAsJSONDecoderReadsIt() throws {
        let values = [
            "1", "1.0", "1e3", "-0", "-0.0", "1.5", "-2.5e-3", "9223372036854775807", "-9223372036854775808",
            "9223372036854775808", "18446744073709551615", "1e20", #""a\u00e9\ud83e\udd80\"\\\/\b\f\n\r\t""#,
            "true", "false", "null", "[]", "{}", #"[1, [2, [3, {"a": [null, {}]}]], "x"]"#,
            #"{"nested": {"deep": [true, 1.25, -7]}, "empty": "", "unicode key é": 0}"#,
        ]
        for text in values {
            let data = Data(text.utf8)
            let expected = try JSONDecoder().decode(JSONValue.self, from: data)
            XCTAssertEqual(try JSONReader.decode(JSONValue.self, from: data), expected, text)
        }
        // A key given twice, which JSONDecoder reads as its first value, is refused.
        let twice = Data(#"{"a": 1, "b": {"a": 2}, "a": 1}"#.utf8)
        XCTAssertThrowsError(try JSONReader.decode(JSONValue.self, from: twice))
        let manyKeys = (0..<40).map { #""k\#($0)": \#($0)"# }.joined(separator: ", ")
        XCTAssertNoThrow(try JSONReader.decode(Usage.self, from: Data("{\(manyKeys)}".utf8)))
        XCTAssertThrowsError(try JSONReader.decode(Usage.self, from: Data(#"{\#(manyKeys), "k7": 0}"#.utf8)))
    }

    func testARealRunReadsAsJSONDecoderReadsIt() async throws {
        let agent = try Agent(
            config: scripted([
                callTurn([("c1", "echo", ["text": "a\u{1}\"é"]), ("c2", "echo", ["text": "b"])]), answerTurn("Done."),
            ]), tools: [echoTool()])
        let run = try agent.start(.prompt("go"))
        for await _ in run.events {}
        let result = try await run.result
        XCTAssertEqual(result.status, .completed)
        let data = try JSONEncoder().encode(result)
        XCTAssertEqual(try JSONReader.decode(RunResult.self, from: data), result)
    }

    func testABurstReadsEachEventAndKeepsWhatItCannotRead() throws {
        let burst =
            #"[{"type": "run_start", "run_id": "run-1"}, {"type": "turn_start", "turn": 1},"#
            + #" {"type": "turn_start", "turn": "one"}, {"type": "weather", "wind": [3]},"#
            + #" {"type": "turn_start", "turn": 2}]"#
        let events = Event.events(json: Data(burst.utf8))
        XCTAssertEqual(events.count, 5)
        XCTAssertEqual(events.map(\.type), ["run_start", "turn_start", "turn_start", "weather", "turn_start"])
        guard case .turnStart(turn: 1) = events[1], case .turnStart(turn: 2) = events[4] else {
            return XCTFail("\(events)")
        }
        guard case .unknown(_, let wrong) = events[2], case .unknown(_, let weather) = events[3] else {
            return XCTFail("an event that does not decode is kept as JSON: \(events)")
        }
        XCTAssertEqual(wrong["turn"], "one")
        XCTAssertEqual(weather["wind"], [3])
        // One event, not a list, reads as before; where a list stops being JSON,
        // the events before are kept and the rest is one unknown event.
        XCTAssertEqual(Event.events(json: Data(#"{"type": "turn_start", "turn": 3}"#.utf8)).map(\.type), ["turn_start"])
        for broken in [#"[{"type": "turn_start", "turn": 1}"#, #"[{"type": "turn_start", "turn": 1}] x"#] {
            let read = Event.events(json: Data(broken.utf8))
            guard read.count == 2, case .turnStart(turn: 1) = read[0], case .unknown = read[1] else {
                return XCTFail("\(broken): \(read)")
            }
        }
        let notEvents = Event.events(json: Data("[1,]".utf8))
        XCTAssertEqual(notEvents.count, 2, "\(notEvents)")
        XCTAssertTrue(notEvents.allSatisfy { if case .unknown = $0 { true } else { false } }, "\(notEvents)")
    }

    /// Keys are matched as the UTF-8 written in the text when they are plain,
    /// and unescaped otherwise; whole numbers written as digits are read in
    /// place, any other way of writing one as `JSONDecoder` reads it.
    func testEscapedKeysAndWholeNumbersReadAsJSONDecoderReadsThem() throws {
        let numbers = [
            "0", "7", "-3", "1.0", "1e0", "2E2", "12345678901234567", "123456789012345678", "1234567890123456789",
            "9223372036854775807", "-9223372036854775808",
        ]
        for number in numbers {
            let text =
                #"{"st\u0061tus": "completed", "final": null, "messages": [], "usage": {}, "rounds": \#(number), "#
                + #""error": null, "output": null, "interruptions": [], "state": null, "agent": null, "ké": 1}"#
            let data = Data(text.utf8)
            XCTAssertEqual(
                try JSONReader.decode(RunResult.self, from: data), try JSONDecoder().decode(RunResult.self, from: data),
                text)
        }
        // Counts up to UInt64's largest, read in place or not.
        for count in ["999999999999999999", "9223372036854775807", "9500000000000000000", "18446744073709551615"] {
            let text = #"{"input_tokens": \#(count), "output_tokens": 1}"#
            let data = Data(text.utf8)
            XCTAssertEqual(
                try JSONReader.decode(Usage.self, from: data), try JSONDecoder().decode(Usage.self, from: data), text)
        }
        // Keys are the same when their code points are: "é" and "e\u{301}"
        // are two keys, a key given twice is refused, in a small object and
        // in one of many keys alike.
        let base =
            #"{"status": "completed", "final": null, "messages": [], "usage": {}, "rounds": 1, "#
            + #""error": null, "output": null, "interruptions": [], "state": null, "agent": null"#
        let many = (0..<20).map { #", "k\#($0)": \#($0)"# }.joined()
        for extra in ["", many] {
            let twoKeys = base + extra + #", "é": 1, "e\u0301": 2}"#
            XCTAssertNoThrow(try JSONReader.decode(RunResult.self, from: Data(twoKeys.utf8)), twoKeys)
            let repeated = base + extra + #", "é": 1, "\u00e9": 2}"#
            XCTAssertThrowsError(try JSONReader.decode(RunResult.self, from: Data(repeated.utf8)), repeated)
        }
        let whole =
            #"{"status": "completed", "final": null, "messages": [], "usage": {}, "rounds": 9223372036854775808, "#
            + #""error": null, "output": null, "interruptions": [], "state": null, "agent": null}"#
        XCTAssertThrowsError(try JSONReader.decode(RunResult.self, from: Data(whole.utf8)))
        XCTAssertThrowsError(try JSONDecoder().decode(RunResult.self, from: Data(whole.utf8)))
        let refused = [
            #"{"status": "completed", "st\u0061tus": "failed", "rounds": 1}"#,
            #"{"status": "completed", "rounds": 1, "ké": 1, "k\u00e9": 2}"#,
            #"{"status": "completed", "rounds": 9223372036854775808}"#,
            #"{"status": "completed", "rounds": 00}"#,
            #"{"status": "completed", "rounds": 1.5}"#,
            #"{"status": "completed", "rounds" 1}"#,
            #"{"status": "completed", "rounds": 1, "a\u00"}"#,
        ]
        for text in refused {
            XCTAssertThrowsError(try JSONReader.decode(RunResult.self, from: Data(text.utf8)), text)
        }
    }

    func testInvalidJSONAndValuesOfTheWrongTypeAreRefused() throws {
        let valid =
            #"{"status": "completed", "final": null, "messages": [], "usage": {}, "rounds": 1, "#
            + #""error": null, "output": null, "interruptions": [], "state": null, "agent": null"#
        XCTAssertNoThrow(try JSONReader.decode(RunResult.self, from: Data((valid + "}").utf8)))
        let refused = [
            "", " ", valid, valid + "}}", valid + "} x", valid + ",}", valid + #", "rounds": 2}"#,
            valid.replacingOccurrences(of: #""rounds": 1"#, with: #""rounds": 1.5"#) + "}",
            valid.replacingOccurrences(of: #""rounds": 1"#, with: #""rounds": 01"#) + "}",
            valid.replacingOccurrences(of: #""rounds": 1"#, with: #""rounds": "1""#) + "}",
            valid.replacingOccurrences(of: #""rounds": 1"#, with: #""rounds" 1"#) + "}",
            valid.replacingOccurrences(of: #""status": "completed""#, with: #""status": "sleeping""#) + "}",
            valid.replacingOccurrences(of: #""status": "completed", "#, with: "") + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "tool", "is_error": "yes"}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": 5}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user", "content": 5}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user", "content": "\x"}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user", "content": "\ud800"}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user", "content": "\u12"}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: "[{\"role\": \"user\", \"content\": \"a\u{1}\"}]") + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user",}]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user"},]"#) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user"} {"role": "user"}]"#) + "}",
            valid + #", "x": [1, 2}"#, valid + #", "x": tru}"#, valid + #", "x": -}"#, valid + #", "x": 1.}"#,
            valid + #", "x": 1e}"#, valid + #", "x": "\q"}"#, valid + #", "x": {1: 2}}"#,
            valid + ", \"x\": " + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}",
            valid.replacingOccurrences(of: "[]", with: #"[{"role": "user", "content":"#) + "}",
            #"{"messages": [{"role": "user", "content":"#,
        ]
        for text in refused {
            XCTAssertThrowsError(try JSONReader.decode(RunResult.self, from: Data(text.utf8)), text)
        }
        // Bytes that are not UTF-8, in a string that is read.
        var notUTF8 = Data((valid.replacingOccurrences(of: #""agent": null"#, with: #""agent": "a"#)).utf8)
        notUTF8.append(contentsOf: [0xC3, 0x28])
        notUTF8.append(contentsOf: Array("\"}".utf8))
        XCTAssertThrowsError(try JSONReader.decode(RunResult.self, from: notUTF8))
        XCTAssertThrowsError(try JSONDecoder().decode(RunResult.self, from: notUTF8))
    }
}
