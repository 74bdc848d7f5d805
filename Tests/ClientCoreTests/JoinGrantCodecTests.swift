import Foundation
import PAKE
import Testing

@testable import ClientCore
@testable import SpaceModel

/// `JoinGrantWriter` and `JoinGrantReader`, the grant's JSON without `Codable`, checked against
/// Foundation (the paths they stand in for): the writer writes exactly the bytes `JSONEncoder`
/// writes, and `JoinGrant(decoding:)` accepts and refuses exactly what it did with `JSONDecoder`
/// alone; whatever the reader returns, `JSONDecoder` returns too.
@Suite struct JoinGrantCodecTests {
    private static let sortedEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Grants in the attendant's form, varied: one bundle or two, a device token or none, no
    /// checkpoint or vouched members, a vouched member with a sealed name and rights, texts
    /// with slashes and non-ASCII letters (which need no escape), and texts that need one.
    private func grants() throws -> [JoinGrant] {
        let s = try JoinGrantTests.Scenario()
        let honest = s.vouchedGrant()
        let keys = Dictionary(uniqueKeysWithValues: s.threads.map { ($0.0, $0.1) })
        let bundle = try #require(s.fixture.owner.wrapBundle(keys, for: s.samRecord, in: s.fixture.space))
        let one = try #require(
            s.fixture.owner.wrapBundle(
                [.random(): .random()], for: s.samRecord, in: s.fixture.space))
        let thread = ThreadID.random()
        let sealed = SealedName.seal(
            "Ann", key: .random(), space: s.fixture.space, thread: thread, member: s.samRecord.id)
        let ann = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [.invite, .attendant],
            name: "", sealedName: sealed)
        let bot = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: .all, name: "bot é/😀")
        func grant(
            server: String = "http://127.0.0.1:1/a/b", name: String = "Family", token: String? = nil,
            bundles: [KeyWrapBundle]? = nil, checkpoint: ChainCheckpoint?? = nil,
            vouched: [MemberRecord]?? = nil,
            hint: JoinGrant.HistoryHint = .init(threads: 3, messages: 7), challenge: String? = nil
        ) -> JoinGrant {
            JoinGrant(
                space: .init(server: server, id: honest.space.id, name: name),
                ownerSigningKey: honest.ownerSigningKey, memberID: honest.memberID, deviceToken: token,
                wraps: [], bundles: bundles ?? [bundle], invite: honest.invite, historyHint: hint,
                checkpoint: checkpoint ?? honest.checkpoint, vouched: vouched ?? honest.vouched,
                signInChallenge: challenge)
        }
        return [
            grant(),
            grant(bundles: [one, bundle]),
            grant(token: "tok/en+é"),
            grant(checkpoint: .some(nil), vouched: .some(nil)),
            grant(vouched: [ann, bot]),
            grant(vouched: []),
            grant(name: "Ünïcode 😀 ~\u{7F}\u{2028}", hint: .init(threads: 0, messages: Int.max)),
            // Version 5: with the server's sign-in challenge.
            grant(challenge: Base64URL.encode((0..<32).map { UInt8($0) })),
            // Texts that need escapes: left to `JSONEncoder`.
            grant(name: "The \"Family\""),
            grant(server: "http://x\\y"),
            grant(name: "tab\there\u{1}\u{8}\u{C}"),
            grant(vouched: [bot.with(rights: []), MemberRecord(id: .random(), keys: bot.keys, name: "a\"b")]),
            // Version 2 (single wraps, no bundles) and version 1 (with the chain): also left to it.
            s.vouchedGrant(),
            s.grant(),
        ]
    }

    /// What `JoinGrant(decoding:)` returned before the reader: `JSONDecoder`, then the checks.
    private func reference(_ bytes: [UInt8]) -> JoinGrant? {
        guard let grant = try? JSONDecoder().decode(JoinGrant.self, from: Data(bytes)),
            JoinGrant.acceptedVersions.contains(grant.v), grant.v != 1 || grant.roster != nil
        else { return nil }
        return grant
    }

    /// The reader either gives up or agrees with `JSONDecoder`, and decoding always agrees.
    private func expectAgreement(_ bytes: [UInt8], _ comment: Comment? = nil) {
        let expected = reference(bytes)
        if let fast = JoinGrantReader.grant(bytes) {
            #expect(fast == (try? JSONDecoder().decode(JoinGrant.self, from: Data(bytes))), comment)
        }
        #expect((try? JoinGrant(decoding: bytes)) == expected, comment)
    }

    @Test func theWriterWritesWhatJSONEncoderWrites() throws {
        let grants = try grants()
        for (index, grant) in grants.enumerated() {
            let expected = Array(try Self.sortedEncoder.encode(grant))
            #expect(grant.encoded() == expected, "grant \(index)")
            // The attendant's usual grants take the direct path; the others fall back.
            #expect((JoinGrantWriter.bytes(grant) != nil) == (index < 8), "grant \(index)")
        }
    }

    @Test func theReaderReadsWhatTheEncoderWritesAsJSONDecoderDoes() throws {
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted]
        for (index, grant) in try grants().enumerated() {
            let bytes = grant.encoded()
            #expect(reference(bytes) == grant, "grant \(index)")
            #expect(try JoinGrant(decoding: bytes) == grant, "grant \(index)")
            // The attendant's usual grants take the direct path; the others are read alike or left
            // to JSONDecoder (single wraps and chains always are).
            let direct = JoinGrantReader.grant(bytes)
            if index < 8 { #expect(direct == grant, "grant \(index)") }
            #expect(direct == nil || direct == grant, "grant \(index)")
            if index >= 12 { #expect(direct == nil, "grant \(index)") }
            // Other layouts and key orders (a default encoder escapes slashes: left to JSONDecoder).
            for other in [JSONEncoder(), pretty] {
                let text = Array(try other.encode(grant))
                expectAgreement(text, "grant \(index), other layout")
                #expect(try JoinGrant(decoding: text) == grant)
            }
        }
        // White space between the tokens (none of these characters is in the grant's texts).
        let first = try grants()[0]
        let spaced = String(decoding: first.encoded(), as: UTF8.self)
            .replacingOccurrences(of: #"":"#, with: "\" :\n ")
            .replacingOccurrences(of: #","#, with: " ,\t")
            .replacingOccurrences(of: "{", with: "\r\n{ ")
            .replacingOccurrences(of: "[", with: "[ ")
        #expect(JoinGrantReader.grant(Array(spaced.utf8)) == first)
        #expect(reference(Array(spaced.utf8)) == first)
    }

    @Test func malformedGrantsAreRefusedAsJSONDecoderRefusesThem() throws {
        let grants = try grants()
        let text = String(decoding: grants[4].encoded(), as: UTF8.self)
        let tokened = String(decoding: grants[2].encoded(), as: UTF8.self)
        let bundle = try #require(grants[0].bundles?.first)
        let ephemeral = Base64URL.encode(bundle.ephemeral)
        let nonce = Base64URL.encode(bundle.entries[0].nonce)
        let signer = Base64URL.encode(bundle.signer.bytes)
        let badPoint = Base64URL.encode([UInt8](repeating: 0, count: 32))
        let hint = #""history_hint":{"messages":7,"threads":3}"#
        #expect(text.contains(hint) && text.contains(#""v":3"#) && text.contains(#""wraps":[]"#))
        let cases: [String] = [
            "", "{", "[]", "null", "{}", #"{"v":3}"#, text + "x",
            text.replacingOccurrences(of: "]}", with: ",]}"),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":4"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":1"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":2"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3.0"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3e0"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":03"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":"3""#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":-0"#),
            text.replacingOccurrences(of: #""v":3,"#, with: ""),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3,"v":3"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3,"extra":null"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3,"roster":null"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3,"device_token":null"#),
            text.replacingOccurrences(of: #""v":3"#, with: #""v":3,"checkpoint":null"#),
            text.replacingOccurrences(of: #""wraps":[]"#, with: #""wraps":null"#),
            text.replacingOccurrences(of: #","wraps":[]"#, with: ""),
            text.replacingOccurrences(of: #""wraps":[]"#, with: #""wraps":[{}]"#),
            text.replacingOccurrences(of: #""wrap_bundles":["#, with: #""wrap_bundles":[],"x":["#),
            text.replacingOccurrences(of: hint, with: #""history_hint":{"messages":7,"threads":-3}"#),
            text.replacingOccurrences(of: hint, with: #""history_hint":{"messages":7}"#),
            text.replacingOccurrences(
                of: hint, with: #""history_hint":{"messages":7,"threads":9223372036854775808}"#),
            text.replacingOccurrences(of: #""sequence":"#, with: #""sequence":-"#),
            text.replacingOccurrences(of: #""attendant""#, with: #""root""#),
            text.replacingOccurrences(of: #""attendant""#, with: #""att\u0065ndant""#),
            text.replacingOccurrences(of: #""Family""#, with: #""Fam\/ily""#),
            text.replacingOccurrences(of: #""Family""#, with: #""Fam\ud800ily""#),
            text.replacingOccurrences(of: #""Family""#, with: "\"Fam\u{1}ily\""),
            text.replacingOccurrences(of: #""Family""#, with: "null"),
            text.replacingOccurrences(of: #""name":"","#, with: ""),
            text.replacingOccurrences(of: #""name":"","#, with: #""name":5,"#),
            text.replacingOccurrences(of: ephemeral, with: String(ephemeral.dropLast(2))),
            text.replacingOccurrences(of: ephemeral, with: ephemeral + "="),
            text.replacingOccurrences(of: nonce, with: String(nonce.dropLast(3))),
            text.replacingOccurrences(of: signer, with: badPoint),
            text.replacingOccurrences(of: #""entries":["#, with: #""entries":[],"x":["#),
            text.replacingOccurrences(
                of: #""entries":[{"#, with: #""entries":[{"thread":"AAAAAAAAAAAAAAAAAAAAAA","#),
            tokened.replacingOccurrences(of: #""device_token":"#, with: #""device_token":5,"x":"#),
            tokened.replacingOccurrences(of: #""tok/en+é""#, with: #""tok\/en+é""#),
        ]
        for (index, text) in cases.enumerated() {
            expectAgreement(Array(text.utf8), "case \(index)")
        }
        // Invalid UTF-8 in a name.
        var bytes = Array(text.utf8)
        let name = try #require(bytes.firstRange(of: Array("Family".utf8)))
        bytes[name.lowerBound] = 0xFF
        expectAgreement(bytes, "invalid UTF-8")
        #expect(throws: JoinGrantError.self) { try JoinGrant(decoding: bytes) }
    }

    /// Random damage to a real grant (a few hundred cases): the two paths never disagree.
    @Test func damagedGrantsGiveTheSameResultAsJSONDecoder() throws {
        let text = try grants()[4].encoded()
        var random = SeededRandom(seed: 23)
        for round in 0..<300 {
            expectAgreement(EventListReaderTests.damage(text, &random), "round \(round)")
        }
    }
}
