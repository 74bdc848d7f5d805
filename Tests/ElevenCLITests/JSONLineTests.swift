import Foundation
import Testing

@testable import CLISupport

/// `Terminal.json`'s line for flat objects (the bot's log) is written without
/// `JSONSerialization`, and must say what it says.
@Suite struct JSONLineTests {
    static func serialized(_ object: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    @Test func theSameLineAsJSONSerialization() throws {
        let object: [String: Any] = [
            "event": "joined", "at": Int64(1_764_433_206), "detail": "Ann \"the\" \\ joined ws://x/v1",
            "nameplate": "42", "count": -3, "ok": true, "no": false, "zero": 0,
        ]
        let line = try #require(Terminal.flatJSONLine(object))
        #expect(line == (try Self.serialized(object)))
    }

    @Test func controlCharactersAndNonASCIIReadBackTheSame() throws {
        var random = SystemRandomNumberGenerator()
        let alphabet: [Character] = [
            "a", "\"", "\\", "/", "\n", "\r", "\t", "\u{1}", "\u{1f}", "\u{7f}", "é", "日", "🙂",
        ]
        for _ in 0..<200 {
            let text = String(
                (0..<Int.random(in: 0..<12, using: &random)).map { _ in
                    alphabet.randomElement(using: &random)!
                })
            let object: [String: Any] = ["detail": text, "b\u{1}": text, "at": 7]
            let line = try #require(Terminal.flatJSONLine(object))
            let read = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(read["detail"] as? String == text && read["b\u{1}"] as? String == text)
            #expect(read["at"] as? Int == 7)
            #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"))
        }
    }

    @Test func anythingElseIsLeftToJSONSerialization() {
        #expect(Terminal.flatJSONLine(["a": 1.5]) == nil)
        #expect(Terminal.flatJSONLine(["a": ["b": 1]]) == nil)
        #expect(Terminal.flatJSONLine(["a": NSNull()]) == nil)
        #expect(Terminal.flatJSONLine(["a": UInt8(1)]) == nil)
    }
}
