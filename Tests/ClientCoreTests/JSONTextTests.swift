import Foundation
import Testing

@testable import ClientCore
@testable import JoinProtocol

/// The hand-written JSON of relay frames and join messages: what Foundation parses back, with
/// awkward strings, and the grant carried as sent.
struct JSONTextTests {
    @Test func objectsParseBackWithEscapes() throws {
        let awkward = "quote \" backslash \\ newline \n tab \t bell \u{07} é 😀 /"
        let bytes = JSONText.object([
            "b": .string(awkward), "a": .int(-42), "c": .strings(["x", awkward]),
            "d": .object(Array(#"{"k":[1,{"z":"}"}]}"#.utf8)),
        ])
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"a":-42,"b":"#))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(parsed["a"] as? Int == -42)
        #expect(parsed["b"] as? String == awkward)
        #expect(parsed["c"] as? [String] == ["x", awkward])
        #expect(((parsed["d"] as? [String: Any])?["k"] as? [Any])?.count == 2)
    }

    @Test func onlyOneWholeObjectIsInsertedAsIs() {
        #expect(JSONText.isSingleObject(Array(#"{"a":{"b":"}"},"c":[1,2]}"#.utf8)))
        #expect(!JSONText.isSingleObject(Array(#"{"a":1},"type":"refusal","b":{}"#.utf8)))
        #expect(!JSONText.isSingleObject(Array(#"[1]"#.utf8)))
        #expect(!JSONText.isSingleObject(Array(#"{"a":"}"#.utf8)))
        #expect(!JSONText.isSingleObject([]))
        // Anything else goes in as an empty grant, never next to the message's own members.
        let message = JoinMessage.grant(object: Array(#"{"a":1},"type":"refusal","b":{}"#.utf8)).encoded()
        let parsed = try? JSONSerialization.jsonObject(with: Data(message)) as? [String: Any]
        #expect(parsed?["type"] as? String == "grant")
        #expect((parsed?["grant"] as? [String: Any])?.isEmpty == true)
    }

    @Test func aMemberIsFoundAsSent() {
        let text = Array(#" { "v" : 1 , "s":"a,}\"b", "grant" : {"x":[{"y":"]"}],"z":null} ,"t":true}"#.utf8)
        #expect(
            JSONText.memberText("grant", in: text).map { Array($0) }
                == Array(#"{"x":[{"y":"]"}],"z":null}"#.utf8))
        #expect(JSONText.memberText("v", in: text).map { Array($0) } == Array("1".utf8))
        #expect(JSONText.memberText("t", in: text).map { Array($0) } == Array("true".utf8))
        #expect(JSONText.memberText("missing", in: text) == nil)
        #expect(JSONText.memberText("grant", in: Array("[1]".utf8)) == nil)
        #expect(JSONText.memberText("grant", in: []) == nil)
    }

    @Test func aGrantMessageRoundTripsItsText() throws {
        let grant = Array(#"{"b":"two","a":[1,2],"c":{"d":"\"}"}}"#.utf8)
        let decoded = try JoinMessage(
            decoding: JoinMessage.grant(object: grant).encoded(), allowed: ["grant"])
        #expect(decoded == .grant(object: grant))
    }
}
