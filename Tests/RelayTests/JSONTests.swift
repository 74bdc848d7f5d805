import Mailbox
import Testing

@testable import Relay

@Suite("JSON reader and writer")
struct JSONTests {
    @Test(
        "valid documents round-trip byte for byte",
        arguments: [
            #"{"type":"ping","ping":5}"#,
            #"{"a":[1,-2.5e+10,0.125,true,false,null],"b":{"c":""}}"#,
            #"{"id":"8cc4","n":12345678901234567890123}"#,
            #"["é","日本","😀"]"#,
            #"{"dup":1,"dup":2}"#,
            #""just a string""#,
            "-0",
        ])
    func roundTrip(_ text: String) throws {
        let value = try JSONParser.parse(text)
        #expect(JSONWriter.string(value) == text)
    }

    @Test("whitespace and escapes are normalised, values kept")
    func normalisation() throws {
        let value = try JSONParser.parse(" { \"a\" : \"\\u0041\\n\\\"\\\\\\/\\ud83d\\ude00\" } ")
        #expect(value == .object(JSONObject(["a": .string("A\n\"\\/😀")])))
        #expect(JSONWriter.string(value) == #"{"a":"A\n\"\\/😀"}"#)
    }

    @Test("strings with and without escapes: runs before, between and after escapes are kept")
    func stringRuns() throws {
        let body = String(repeating: "0123456789abcdef", count: 256)
        let text = #"{"plain":""# + body + #"","mixed":"a\nb\u00e9c\"","lead":"\td","utf8":"é😀","empty":""}"#
        let object = try #require(try JSONParser.parse(text).objectValue)
        #expect(object["plain"] == .string(body))
        #expect(object["mixed"] == .string("a\nbéc\""))
        #expect(object["lead"] == .string("\td"))
        #expect(object["utf8"] == .string("é😀"))
        #expect(object["empty"] == .string(""))
    }

    @Test("control characters are escaped on output")
    func controlEscapes() {
        #expect(JSONWriter.string(.string("\u{01}\t\r")) == #""\u0001\t\r""#)
    }

    @Test("duplicate names: the last one wins, as in Python")
    func duplicates() throws {
        let object = try #require(try JSONParser.parse(#"{"type":"x","type":"ping"}"#).objectValue)
        #expect(object["type"] == "ping")
    }

    @Test(
        "invalid documents are rejected with a reason",
        arguments: [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{'a':1}", "NaN", "Infinity", "-Infinity", "01",
            "1.", ".5", "1e", "+1", "tru", "nul", "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"",
            "\"\\udc00\"", "\"\\ud800\\u0041\"", "{\"a\" 1}", "[1 2]", "{} {}", "\"tab\there\"",
            "{\"a\":}", "[", "{\"a\":1", "\u{00}",
        ])
    func invalid(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test(
        "invalid UTF-8 is rejected",
        arguments: [
            [0x22, 0xFF, 0x22], [0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22], [0x22, 0x80, 0x22],
        ] as [[UInt8]])
    func invalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
    }

    @Test("nesting deeper than the limit is refused, not a stack overflow")
    func depth() throws {
        let ok =
            String(repeating: "[", count: JSONParser.maximumDepth)
            + String(repeating: "]", count: JSONParser.maximumDepth)
        _ = try JSONParser.parse(ok)
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deep) }
        let deepObjects = String(repeating: "{\"a\":", count: 10_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(deepObjects) }
    }

    @Test("server times are written as floats without exponent")
    func numbers() {
        #expect(JSONNumber(1_764_433_206.0).text == "1764433206.0")
        #expect(JSONNumber(1_764_433_206.125).text == "1764433206.125")
        #expect(JSONNumber(7).text == "7")
    }

    @Test("random byte strings never crash the parser")
    func fuzz() {
        var random = SeededRandom(seed: 42)
        let alphabet = Array(#"{}[]":,\ -+.eE0123456789truefalsnul"#.utf8) + [0x00, 0x80, 0xC3, 0xA9, 0xFF]
        for _ in 0..<500 {
            let length = Int.random(in: 0..<40, using: &random)
            let bytes = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            if let value = try? JSONParser.parse(bytes) {
                // Whatever parses must re-parse to the same value.
                #expect((try? JSONParser.parse(JSONWriter.string(value))) == value)
            }
        }
    }

    @Test("strings: every byte that needs an escape gets it, wherever it falls in a run")
    func stringEscapes() throws {
        // The escape each character gets, one character at a time: what the writer must match.
        func reference(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u00" + (hex.count == 1 ? "0" + hex : hex)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        var random = SeededRandom(seed: 7)
        let pieces = [
            "\"", "\\", "\n", "\r", "\t", "\u{01}", "\u{1F}", "é", "😀", "a", "0f",
            String(repeating: "ab", count: 40),
        ]
        for _ in 0..<300 {
            let text = (0..<Int.random(in: 0..<12, using: &random)).map { _ in
                pieces.randomElement(using: &random)!
            }.joined()
            let written = JSONWriter.string(.string(text))
            #expect(written == reference(text))
            #expect(try JSONParser.parse(written) == .string(text))
        }
    }
}
