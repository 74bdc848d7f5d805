import Foundation
import Testing

@testable import ClientCore
@testable import JoinProtocol

/// Join messages through the mailbox codec: what Foundation parses back, the exact bytes, and the
/// grant carried as sent.
struct JSONTextTests {
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

    /// Join messages byte for byte, as every Eleven attendant and joiner has sent them: members in
    /// key order, RFC 8259 escapes, the grant's text as the space layer wrote it.
    @Test func joinMessagesKeepTheirBytes() {
        let cases: [(JoinMessage, String)] = [
            (
                .request(
                    JoinRequest(
                        displayName: "Sam \"x\" \\", deviceLabel: "laptop\n\u{1}",
                        publicKeys: JoinerKeys(text: "k.k"))),
                #"{"device_label":"laptop\n\u0001","display_name":"Sam \"x\" \\","public_keys":"k.k","type":"request","v":1}"#
            ),
            (
                .status(.waitingForApproval(inviter: "Paul")),
                #"{"inviter_name":"Paul","state":"waiting_for_approval","type":"status","v":1}"#
            ),
            (
                .status(JoinStatus(state: .other("later"), inviterName: nil)),
                #"{"state":"later","type":"status","v":1}"#
            ),
            (
                .grant(object: Array(#"{"b":"https:\/\/x","a":1.50}"#.utf8)),
                #"{"grant":{"b":"https:\/\/x","a":1.50},"type":"grant","v":1}"#
            ),
            (
                .refusal(reason: "used_up", message: "é/ü"),
                #"{"message":"é/ü","reason":"used_up","type":"refusal","v":1}"#
            ),
        ]
        for (message, wire) in cases {
            #expect(String(decoding: message.encoded(), as: UTF8.self) == wire)
        }
    }

    @Test func joinMessagesDecodeAsSent() throws {
        let grant = #"{"b":"https:\/\/x", "a":1.50}"#
        #expect(
            try JoinMessage(
                decoding: Array(#"{"v":1,"type":"grant","grant": \#(grant) }"#.utf8), allowed: ["grant"])
                == .grant(object: Array(grant.utf8)))
        #expect(
            try JoinMessage(
                decoding: Array(
                    #"{"type":"status","v":1,"state":"waiting_for_approval","inviter_name":"Paul"}"#.utf8),
                allowed: ["status"]) == .status(.waitingForApproval(inviter: "Paul")))
        #expect(
            try JoinMessage(
                decoding: Array(#"{"type":"refusal","v":1,"reason":"r","message":"m","extra":[1]}"#.utf8),
                allowed: ["refusal"]) == .refusal(reason: "r", message: "m"))
        let long = String(repeating: "a", count: 129)
        for bad in [
            "", "[]", "{}", #"{"v":2,"type":"refusal","reason":"r","message":"m"}"#,
            #"{"v":"1","type":"refusal","reason":"r","message":"m"}"#,
            #"{"v":1,"type":"grant","reason":"r","message":"m"}"#, #"{"v":1,"type":"refusal","message":"m"}"#,
            #"{"v":1,"type":"grant","grant":[1]}"#,
            #"{"v":1,"type":"request","display_name":"\#(long)","device_label":"d","public_keys":"k"}"#,
        ] {
            #expect(throws: JoinHandshakeError.self) {
                try JoinMessage(decoding: Array(bad.utf8), allowed: ["grant", "refusal", "request"])
            }
        }
        #expect(throws: JoinHandshakeError.self) {
            try JoinMessage(
                decoding: Array(#"{"v":1,"type":"refusal","reason":"r","message":"m"}"#.utf8),
                allowed: ["grant"])
        }
    }
}
