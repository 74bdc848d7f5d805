import Foundation
import Mailbox
import PAKE
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

    @Test func aNestedMemberIsFoundAsSent() throws {
        let text = Array(#" { "v" : 1 , "s":"a,}\"b", "grant" : {"x":[{"y":"]"}],"z":null} ,"t":true}"#.utf8)
        let members = try JSONParser.members(text)
        #expect(members.nestedText("grant").map { Array($0) } == Array(#"{"x":[{"y":"]"}],"z":null}"#.utf8))
        #expect(members["v"] == .number(JSONNumber(1)))
        #expect(members["s"] == .string(#"a,}"b"#))
        #expect(members["t"] == .bool(true))
        #expect(members.nestedText("v") == nil)
        #expect(members.nestedText("missing") == nil)
        #expect(members["missing"] == nil)
        // The last of two, as for any other key.
        let twice = try JSONParser.members(Array(#"{"grant":{"a":1},"grant":[2]}"#.utf8))
        #expect(twice.nestedText("grant").map { Array($0) } == Array("[2]".utf8))
        for notAnObject in ["[1]", "", "1", #""a""#, "{", #"{"a":1}x"#] {
            #expect(throws: JSONParseError.self) { try JSONParser.members(Array(notAnObject.utf8)) }
        }
    }

    /// `JSONParser.members` against the whole tree of `parse`, on real join messages, JSON at
    /// the nesting limit and just past it, and a few hundred randomly damaged texts: it reads a
    /// text exactly when `parse` reads it as an object, with the same members in the same order,
    /// and a nested member's text parses to the tree's value.
    @Test func membersAgreeWithTheWholeTree() throws {
        func expectAgreement(_ bytes: [UInt8], _ note: String) {
            let tree = try? JSONParser.parse(bytes)
            let members = try? JSONParser.members(bytes)
            guard case .object(let object)? = tree else {
                #expect(members == nil, "\(note)")
                return
            }
            guard let members else {
                Issue.record("members refused what parse read: \(note)")
                return
            }
            #expect(members.members.map(\.key) == object.members.map(\.key), "\(note)")
            for (member, expected) in zip(members.members, object.members) {
                #expect(members.value(member.value) == expected.value, "\(note)")
                if case .nested(let range) = member.value {
                    #expect((try? JSONParser.parse(Array(bytes[range]))) == expected.value, "\(note)")
                }
            }
            for key in Set(object.members.map(\.key)) { #expect(members[key] == object[key], "\(note)") }
        }
        let grant = Array(
            #"{"b":"https:\/\/x","a":[1.50,-2e3,true,null,{"c":"\u00e9\ud83d\ude00"}],"d":{}, "e" : [ ] }"#
                .utf8)
        let texts: [[UInt8]] = [
            JoinMessage.grant(object: grant).encoded(),
            JoinMessage.refusal(reason: "used_up", message: "é/ü \"x\"").encoded(),
            JoinMessage.status(.waitingForApproval(inviter: "Paul")).encoded(),
            JoinMessage.request(
                JoinRequest(
                    displayName: "Sam", deviceLabel: "laptop\n", publicKeys: JoinerKeys(text: "k.k"),
                    failedAttempts: [
                        JoinAttemptReport(
                            relay: "ws://r", nameplate: .init("12"), side: .init("s"), at: 5,
                            outcome: "timed_out")
                    ])
            ).encoded(),
            Array(#" {"a" : {"b":[[[]]]} , "a":"x", "\u0061":2 } "#.utf8),
        ]
        for (n, text) in texts.enumerated() { expectAgreement(text, "text \(n)") }
        // The nesting limit counts the outer object, in both.
        for depth in [JSONParser.maximumDepth - 1, JSONParser.maximumDepth] {
            let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            expectAgreement(Array(#"{"a":\#(nested)}"#.utf8), "depth \(depth)")
        }
        var random = SeededRandom(seed: 23)
        for round in 0..<400 {
            let text = texts[round % texts.count]
            expectAgreement(EventListReaderTests.damage(text, &random), "round \(round)")
        }
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
