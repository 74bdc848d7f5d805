import Foundation
import JoinProtocol
import PAKE
import Testing

@testable import ClientCore
@testable import SpaceModel

/// Version 4, the compact grant (`JoinGrantWriter.compactBytes`, `StrictJSONReader.compactGrant`):
/// what it leaves out comes back exactly, so the joiner checks the very grant the attendant
/// compacted; a grant it cannot carry goes as version 3; older joiners refuse it (they are never
/// sent one: the attendant sends it only to a request that says it reads it); damaged ones fail
/// with a clear error.
@Suite struct JoinGrantCompactTests {
    /// The parts of the compact grants below: Sam's scenario (the owner invited), the owner's
    /// bundle, a bot with a sealed name and its own bundle of the same keys.
    private struct Parts {
        let s: JoinGrantTests.Scenario
        let keys: [ThreadID: ThreadKey]
        let ownerBundle: KeyWrapBundle
        let bot: DeviceIdentity
        let botRecord: MemberRecord
        let botBundle: KeyWrapBundle

        init() throws {
            s = try JoinGrantTests.Scenario()
            keys = Dictionary(uniqueKeysWithValues: s.threads.map { ($0.0, $0.1) })
            ownerBundle = try #require(
                s.fixture.owner.wrapBundle(keys, for: s.samRecord, in: s.fixture.space))
            bot = DeviceIdentity.generate()
            let sealed = SealedName.seal(
                "Bot", key: .random(), space: s.fixture.space, thread: .random(), member: s.samRecord.id)
            botRecord = MemberRecord(
                id: .random(), keys: bot.publicKeys, rights: [.invite, .attendant], name: "",
                sealedName: sealed)
            botBundle = try #require(bot.wrapBundle(keys, for: s.samRecord, in: s.fixture.space))
        }

        /// A version 3 grant as `SpaceSession.admit` makes it (by default the owner attended and
        /// invited: one vouched record).
        func grant(
            name: String = "Family", ownerKey: String? = nil, token: String? = nil,
            bundles: [KeyWrapBundle]? = nil,
            checkpoint: ChainCheckpoint?? = nil, vouched: [MemberRecord]?? = nil,
            hint: JoinGrant.HistoryHint = .init(threads: 3, messages: 7)
        ) -> JoinGrant {
            JoinGrant(
                space: .init(server: "http://127.0.0.1:1/a/b", id: s.fixture.space, name: name),
                ownerSigningKey: ownerKey ?? Base64URL.encode(s.fixture.owner.publicKeys.signing.bytes),
                memberID: s.samRecord.id, deviceToken: token, wraps: [], bundles: bundles ?? [ownerBundle],
                invite: s.invite, historyHint: hint, checkpoint: checkpoint ?? ChainCheckpoint(s.samEvent),
                vouched: vouched ?? [s.fixture.ownerRecord.with(rights: .all)])
        }
    }

    /// Each left-out field once left out and once written, with the keys the text must not hold.
    private func cases(_ p: Parts) -> [(grant: JoinGrant, absent: [String])] {
        let owner = p.s.fixture.ownerRecord.with(rights: .all)
        return [
            // The owner attended and invited: no signer, no inviter key, no owner key.
            (
                p.grant(),
                [#""signer""#, #""inviter_key""#, #""owner_signing_key""#, #""wraps""#, #""recipient""#]
            ),
            // The bot attended (first vouched record) and the owner invited: the owner's bundle
            // names its signer, the bot's does not; the bot's sealed name has no clear one.
            (p.grant(bundles: [p.botBundle], vouched: [p.botRecord, owner]), [#""signer""#, #""name":"""#]),
            (p.grant(bundles: [p.ownerBundle], vouched: [p.botRecord, owner]), [#""inviter_key""#]),
            // The inviter is not vouched for: its key is written; no vouched records at all:
            // every signer is written.
            (p.grant(vouched: [p.botRecord]), [#""owner_signing_key""#]),
            (p.grant(checkpoint: .some(nil), vouched: .some(nil)), [#""owner_signing_key""#]),
            // An owner who is not the inviter, a device token, texts without escapes.
            (p.grant(ownerKey: Base64URL.encode(p.bot.publicKeys.signing.bytes)), [#""inviter_key""#]),
            (p.grant(token: "tok/en+é"), []),
            (p.grant(name: "Ünïcode 😀 ~\u{7F}\u{2028}", hint: .init(threads: 0, messages: Int.max)), []),
        ]
    }

    @Test func compactGrantsRoundTripSmallerAndOlderDecodersRefuseThem() throws {
        let p = try Parts()
        for (index, (grant, absent)) in cases(p).enumerated() {
            let compact = grant.compact()
            #expect(compact.v == JoinGrant.compactVersion && grant.v == 3, "grant \(index)")
            let bytes = compact.encoded()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains(#""v":4"#), "grant \(index)")
            #expect(try JoinGrant(decoding: bytes) == compact, "grant \(index)")
            #expect(try JoinGrant(decoding: bytes).with(version: 3) == grant, "grant \(index)")
            #expect(bytes.count < grant.encoded().count, "grant \(index)")
            for key in absent { #expect(!text.contains(key), "grant \(index): \(key)") }
            // What a joiner before version 4 did with it: its reader and `JSONDecoder` refuse the
            // fields, and the version alone says to update.
            #expect((try? JSONDecoder().decode(JoinGrant.self, from: Data(bytes))) == nil, "grant \(index)")
            #expect(JoinGrantReader.grant(Array(grant.encoded())) == grant, "grant \(index)")
        }
        // Every written key is one the reader knows, in any layout.
        let spaced = String(decoding: p.grant().compact().encoded(), as: UTF8.self)
            .replacingOccurrences(of: #",""#, with: " ,\n\"").replacingOccurrences(of: #"":"#, with: "\" : ")
        #expect(try JoinGrant(decoding: Array(spaced.utf8)) == p.grant().compact())
    }

    /// Version 5 is the compact form with the server's sign-in challenge: it reads back whole,
    /// and is version 4's text with the key added. A version 4 joiner's reader does not know the
    /// key and `JSONDecoder` refuses the compact form, so the attendant sends it only to a joiner
    /// that reads 5; labelled 5, such a joiner would at least say to update.
    @Test func aGrantWithAChallengeIsVersion5() throws {
        let p = try Parts()
        let challenge = Base64URL.encode((0..<32).map { UInt8($0 * 7 & 0xFF) })
        let compact = p.grant().compact()
        let grant = compact.with(signInChallenge: challenge)
        #expect(grant.v == JoinGrant.challengeVersion && grant.signInChallenge == challenge)
        let bytes = grant.encoded()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(try JoinGrant(decoding: bytes) == grant)
        #expect(
            text.replacingOccurrences(of: #","sign_in_challenge":"\#(challenge)""#, with: "")
                .replacingOccurrences(of: #""v":5"#, with: #""v":4"#)
                == String(decoding: compact.encoded(), as: UTF8.self))
        #expect((try? JSONDecoder().decode(JoinGrant.self, from: Data(bytes))) == nil)
        // Version 3's form with the challenge (older joiners' `JSONDecoder` skips the key).
        let full = p.grant().with(signInChallenge: challenge).with(version: 3)
        #expect(try JoinGrant(decoding: full.encoded()) == full)
        #expect(try JSONDecoder().decode(JoinGrant.self, from: Data(full.encoded())) == full)
    }

    /// The exact text of the bot's usual grant (the bot attended, the owner invited).
    @Test func theCompactTextIsExactlyThis() throws {
        let p = try Parts()
        let owner = p.s.fixture.ownerRecord.with(rights: .all)
        let grant = p.grant(bundles: [p.botBundle], vouched: [p.botRecord, owner]).compact()
        func b64(_ bytes: [UInt8]) -> String { Base64URL.encode(bytes) }
        func rights(_ record: MemberRecord) -> String {
            record.rights.names.map { "\"\($0)\"" }.joined(separator: ",")
        }
        let bundle = p.botBundle
        let boxes = b64(bundle.entries.flatMap { $0.thread.bytes + $0.nonce + $0.sealed })
        let invite = p.s.invite
        let checkpoint = ChainCheckpoint(p.s.samEvent)
        let sealed = try #require(p.botRecord.sealedName)
        let expected =
            #"{"checkpoint":{"hash":"\#(b64(checkpoint.hash.bytes))","sequence":\#(checkpoint.sequence)},"#
            + #""history_hint":{"messages":7,"threads":3},"#
            + #""invite":{"created_at":1000,"expires_at":2000,"inviter":"\#(b64(invite.inviter.bytes))","#
            + #""nameplate":"42","signature":"\#(invite.signature)","uses":1},"#
            + #""member_id":"\#(b64(p.s.samRecord.id.bytes))","#
            + #""space":{"id":"\#(b64(p.s.fixture.space.bytes))","name":"Family","server":"http://127.0.0.1:1/a/b"},"#
            + #""v":4,"vouched_members":["#
            + #"{"id":"\#(b64(p.botRecord.id.bytes))","keys":{"encryption":"\#(b64(p.bot.publicKeys.encryption.bytes))","#
            + #""signing":"\#(b64(p.bot.publicKeys.signing.bytes))"},"rights":[\#(rights(p.botRecord))],"#
            + #""sealedName":{"box":"\#(b64(sealed.box))","thread":"\#(b64(sealed.thread.bytes))"}},"#
            + #"{"id":"\#(b64(owner.id.bytes))","keys":{"encryption":"\#(b64(owner.keys.encryption.bytes))","#
            + #""signing":"\#(b64(owner.keys.signing.bytes))"},"name":"\#(owner.name)","#
            + #""rights":[\#(rights(owner))]}],"#
            + #""wrap_bundles":[{"boxes":"\#(boxes)","ephemeral":"\#(b64(bundle.ephemeral))","#
            + #""signature":"\#(b64(bundle.signature.bytes))"}]}"#
        #expect(String(decoding: grant.encoded(), as: UTF8.self) == expected)
        #expect(p.botRecord.rights.names.count == 2)
    }

    /// What the compact form cannot carry goes in version 3's form (labelled 4, so it decodes to
    /// the same grant), which the joiner reads as before.
    @Test func aGrantTheCompactFormCannotCarryGoesAsVersion3() throws {
        let p = try Parts()
        var fixture = p.s.fixture
        let (_, annRecord) = try fixture.addMember(name: "Ann")
        let forAnn = try #require(fixture.owner.wrapBundle(p.keys, for: annRecord, in: fixture.space))
        let escaped = MemberRecord(id: .random(), keys: p.bot.publicKeys, name: "a\"b")
        for grant in [
            p.grant(name: "The \"Family\""), p.grant(bundles: [forAnn]), p.grant(vouched: [escaped]),
            p.grant(token: "tab\t"),
        ] {
            let bytes = grant.compact().encoded()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains(#""v":4"#) && text.contains(#""wraps":[]"#))
            #expect(
                text.replacingOccurrences(of: #""v":4"#, with: #""v":3"#)
                    == String(decoding: grant.encoded(), as: UTF8.self))
            #expect(try JoinGrant(decoding: bytes) == grant.compact())
        }
        // A grant with single wraps or no bundles is not compacted at all.
        let wraps = p.s.vouchedGrant()
        #expect(wraps.compact() == wraps)
    }

    /// A compact grant is checked exactly as version 3: the honest one opens every key either
    /// way; a bundle missing a thread, a repeated bundle, an invite put on another vouched
    /// member or a bundle put on another signer is refused.
    @Test func aCompactGrantIsVerifiedAsVersion3Is() throws {
        let p = try Parts()
        let s = p.s
        let honest = try JoinGrant(decoding: p.grant().compact().encoded())
        #expect(try honest.verify(identity: s.sam, now: 1_500, vouchedEvent: s.samEvent).threadKeys == p.keys)
        #expect(try honest.verify(identity: s.sam, now: 1_500, events: s.fixture.events).threadKeys == p.keys)
        let bundle = p.ownerBundle
        let dropped = try KeyWrapBundle(
            space: bundle.space, recipient: bundle.recipient, signer: bundle.signer,
            ephemeral: bundle.ephemeral,
            entries: Array(bundle.entries.dropFirst()), signature: bundle.signature)
        let owner = s.fixture.ownerRecord.with(rights: .all)
        var texts = [[dropped], [bundle, bundle]].map {
            String(decoding: p.grant(bundles: $0).compact().encoded(), as: UTF8.self)
        }
        // The owner's bundle, its signer left out as if the bot (first vouched) had signed it.
        let both = String(
            decoding: p.grant(bundles: [bundle], vouched: [p.botRecord, owner]).compact().encoded(),
            as: UTF8.self)
        let ownerSigner = #","signer":"\#(Base64URL.encode(bundle.signer.bytes))""#
        #expect(both.contains(ownerSigner))
        texts.append(both.replacingOccurrences(of: ownerSigner, with: ""))
        // The invite put on the bot (its key then comes from the bot's vouched record).
        texts.append(
            both.replacingOccurrences(
                of: #""inviter":"\#(Base64URL.encode(owner.id.bytes))""#,
                with: #""inviter":"\#(Base64URL.encode(p.botRecord.id.bytes))""#))
        for (index, text) in texts.enumerated() {
            let grant = try JoinGrant(decoding: Array(text.utf8))
            #expect(grant.v == 4, "case \(index)")
            #expect(
                throws: JoinGrantError.self, "case \(index)",
                performing: { try grant.verify(identity: s.sam, now: 1_500, vouchedEvent: s.samEvent) })
        }
    }

    /// Malformed compact grants fail as malformed, whatever was left out or added.
    @Test func malformedCompactGrantsSayWhy() throws {
        let p = try Parts()
        let owner = p.s.fixture.ownerRecord.with(rights: .all)
        let text = String(
            decoding: p.grant(bundles: [p.botBundle], vouched: [p.botRecord, owner]).compact().encoded(),
            as: UTF8.self)
        let boxes = Base64URL.encode(p.botBundle.entries.flatMap { $0.thread.bytes + $0.nonce + $0.sealed })
        let vouched = try #require(text.range(of: #","vouched_members":["#))
        let withoutVouched =
            String(text[..<vouched.lowerBound]) + #","wrap_bundles":"#
            + String(text[try #require(text.range(of: #""wrap_bundles":"#)).upperBound...])
        let malformed = [
            text.replacingOccurrences(of: #""v":4"#, with: #""v":4,"wraps":[]"#),
            text.replacingOccurrences(of: #""v":4"#, with: #""v":4,"extra":1"#),
            text.replacingOccurrences(of: #""v":4"#, with: #""v":4,"v":4"#),
            text.replacingOccurrences(of: boxes, with: String(boxes.dropLast(4))),
            text.replacingOccurrences(of: boxes, with: ""),
            text.replacingOccurrences(of: #""boxes":"#, with: #""entries":"#),
            text.replacingOccurrences(of: #""nameplate":"42","#, with: ""),
            text.replacingOccurrences(of: #""uses":1"#, with: #""uses":1,"space":"x""#),
            // No vouched records: nothing to take the bundle's signer or the inviter's key from.
            withoutVouched,
        ]
        for (index, bad) in malformed.enumerated() {
            #expect(
                throws: JoinGrantError.invalid("a field is missing or malformed"), "case \(index)",
                performing: { try JoinGrant(decoding: Array(bad.utf8)) })
        }
        #expect(
            throws: JoinGrantError.invalid("grant version 6 is not supported; update eleven"),
            performing: {
                try JoinGrant(decoding: Array(text.replacingOccurrences(of: #""v":4"#, with: #""v":6"#).utf8))
            })
    }

    /// Random damage (a few hundred cases, and a version 3 text labelled 4): a clear refusal, or
    /// a grant the reader fully understood, which writes back to the same grant.
    @Test func damagedCompactGrantsAreRefusedOrReadWhole() throws {
        let p = try Parts()
        let owner = p.s.fixture.ownerRecord.with(rights: .all)
        let text = p.grant(bundles: [p.botBundle], vouched: [p.botRecord, owner]).compact().encoded()
        let relabelled = String(decoding: p.grant().encoded(), as: UTF8.self)
            .replacingOccurrences(of: #""v":3"#, with: #""v":4"#)
        var random = SeededRandom(seed: 4)
        for round in 0..<301 {
            let damaged = round == 300 ? Array(relabelled.utf8) : EventListReaderTests.damage(text, &random)
            switch Result(catching: { () throws(JoinGrantError) in try JoinGrant(decoding: damaged) }) {
            case .success(let grant):
                // What the peer-message fuzzer holds: a grant read writes back to itself.
                #expect(try JoinGrant(decoding: grant.encoded()) == grant, "round \(round)")
            case .failure(let error):
                #expect(error.code == .grantInvalid, "round \(round)")
                #expect(error.message.hasPrefix("The invitation could not be checked: "), "round \(round)")
            }
        }
    }

    /// The request says which versions the joiner reads; requests without it (older joiners)
    /// read the same text as before, and older attendants ignore the key.
    @Test func theRequestCarriesTheGrantVersion() throws {
        let keys = JoinerKeys(DeviceIdentity.generate().publicKeys)
        let old = JoinRequest(displayName: "Sam", deviceLabel: "phone", publicKeys: keys)
        let new = JoinRequest(displayName: "Sam", deviceLabel: "phone", publicKeys: keys, grantVersion: 4)
        let oldText = String(decoding: JoinMessage.request(old).encoded(), as: UTF8.self)
        let newText = String(decoding: JoinMessage.request(new).encoded(), as: UTF8.self)
        #expect(!oldText.contains("grant_version"))
        #expect(
            newText
                == oldText.replacingOccurrences(
                    of: #","public_keys""#, with: #","grant_version":4,"public_keys""#))
        for (request, text) in [(old, oldText), (new, newText)] {
            #expect(try JoinMessage(decoding: Array(text.utf8), allowed: ["request"]) == .request(request))
            let stored = try JSONEncoder().encode(request)
            #expect(try JSONDecoder().decode(JoinRequest.self, from: stored) == request)
        }
        #expect(!String(decoding: try JSONEncoder().encode(old), as: UTF8.self).contains("grant"))
    }
}
