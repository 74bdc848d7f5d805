import Foundation
import PAKE
import Testing

@testable import ClientCore

/// The grant of a join, checked on the joiner's device without any I/O.
@Suite struct JoinGrantTests {
    /// A space where Paul (owner) invites Sam; returns a grant as the attendant would build it.
    struct Scenario {
        var fixture: SpaceFixture
        let sam: DeviceIdentity
        let samRecord: MemberRecord
        let threads: [(ThreadID, ThreadKey)]
        let invite: SignedInvite

        init(expiresAt: Int64 = 2_000) throws {
            fixture = try SpaceFixture()
            let sam = DeviceIdentity.generate()
            let record = MemberRecord(id: .random(), keys: sam.publicKeys, name: "Sam")
            try fixture.append(fixture.roster.nextEvent(.memberAdded(record), signedBy: fixture.owner))
            self.sam = sam
            samRecord = record
            threads = (0..<3).map { _ in (ThreadID.random(), ThreadKey.random()) }
            invite = fixture.owner.signInvite(
                space: fixture.space, inviter: fixture.ownerID, nameplate: "42", createdAt: 1_000,
                expiresAt: expiresAt, uses: 1)
        }

        func grant(
            wraps: [KeyWrap]? = nil, invite: SignedInvite? = nil, events: [MembershipEvent]? = nil,
            member: MemberID? = nil
        ) -> JoinGrant {
            let wraps =
                wraps
                ?? threads.map { fixture.owner.wrap($0.1, for: samRecord, in: fixture.space, thread: $0.0) }
            return JoinGrant(
                space: .init(server: "http://127.0.0.1:1", id: fixture.space, name: "Family"),
                ownerSigningKey: Base64URL.encode(fixture.owner.publicKeys.signing.bytes),
                memberID: member ?? samRecord.id, deviceToken: nil, wraps: wraps,
                invite: invite ?? self.invite, roster: events ?? fixture.events,
                historyHint: .init(threads: 3, messages: 7))
        }
    }

    @Test func anHonestGrantVerifiesAndRoundTripsThroughJSON() throws {
        let s = try Scenario()
        let grant = s.grant()
        let bytes = grant.encoded()
        // Through the encrypted message layer and back.
        let message = JoinMessage.grant(object: bytes).encoded()
        guard case .grant(let object) = try JoinMessage(decoding: message, allowed: ["grant"]) else {
            Issue.record("not a grant")
            return
        }
        let decoded = try JoinGrant(decoding: object)
        #expect(decoded == grant)
        let verified = try decoded.verify(identity: s.sam, now: 1_500)
        #expect(verified.threadKeys.count == 3)
        #expect(verified.inviter.id == s.fixture.ownerID)
        for (thread, key) in s.threads {
            #expect(verified.threadKeys[thread]?.secret.unredactedBytes() == key.secret.unredactedBytes())
        }
        let json = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        #expect(
            Set(json?.keys.map { $0 } ?? []) == [
                // No device token: the joiner signs in with its own key.
                "v", "space", "owner_signing_key", "member_id", "wraps", "invite", "roster", "history_hint",
            ])
    }

    @Test func anotherDeviceCannotUseTheGrant() throws {
        let s = try Scenario()
        #expect(throws: JoinGrantError.self) {
            try s.grant().verify(identity: DeviceIdentity.generate(), now: 1_500)
        }
    }

    @Test func aForgedOrExpiredInviteIsRefused() throws {
        let s = try Scenario()
        // Recorded for another nameplate than the one joined on; the right one passes.
        #expect(code { try s.grant().verify(identity: s.sam, now: 1_500, nameplate: "43") } == "grant_forged")
        #expect(code { try s.grant().verify(identity: s.sam, now: 1_500, nameplate: "42") } == nil)
        // Expired.
        #expect(code { try s.grant().verify(identity: s.sam, now: 2_001) } == "grant_forged")
        // Signed by a stranger but naming Paul as inviter.
        let stranger = DeviceIdentity.generate()
        var forged = stranger.signInvite(
            space: s.fixture.space, inviter: s.fixture.ownerID, nameplate: "42", createdAt: 1_000,
            expiresAt: 2_000, uses: 1)
        #expect(code { try s.grant(invite: forged).verify(identity: s.sam, now: 1_500) } == "grant_forged")
        // Paul's record with a field changed after signing.
        let i = s.invite
        forged = SignedInvite(
            v: 1, space: i.space, inviter: i.inviter, inviterKey: i.inviterKey, nameplate: i.nameplate,
            createdAt: i.createdAt, expiresAt: 9_999_999, uses: i.uses, signature: i.signature)
        #expect(code { try s.grant(invite: forged).verify(identity: s.sam, now: 1_500) } == "grant_forged")
        // Malformed signature text and an unknown version.
        forged = SignedInvite(
            v: 1, space: i.space, inviter: i.inviter, inviterKey: i.inviterKey, nameplate: i.nameplate,
            createdAt: i.createdAt, expiresAt: i.expiresAt, uses: i.uses, signature: "!!")
        #expect(code { try s.grant(invite: forged).verify(identity: s.sam, now: 1_500) } == "grant_invalid")
        forged = SignedInvite(
            v: 2, space: i.space, inviter: i.inviter, inviterKey: i.inviterKey, nameplate: i.nameplate,
            createdAt: i.createdAt, expiresAt: i.expiresAt, uses: i.uses, signature: i.signature)
        #expect(code { try s.grant(invite: forged).verify(identity: s.sam, now: 1_500) } == "grant_invalid")
    }

    @Test func anInviterWithoutTheRightOrWhoDidNotAddUsIsRefused() throws {
        var s = try Scenario()
        // Eve is a plain member (no invite right) and signs an invite record.
        let (eve, eveRecord) = try s.fixture.addMember(name: "Eve")
        let eveInvite = eve.signInvite(
            space: s.fixture.space, inviter: eveRecord.id, nameplate: "42", createdAt: 1_000,
            expiresAt: 2_000,
            uses: 1)
        #expect(
            code {
                try s.grant(invite: eveInvite, events: s.fixture.events).verify(identity: s.sam, now: 1_500)
            }
                == "grant_forged")
        // Ann may invite, signs the record, but Paul added Sam: the record does not match the event.
        let (ann, annRecord) = try s.fixture.addMember(name: "Ann", rights: .invite)
        let annInvite = ann.signInvite(
            space: s.fixture.space, inviter: annRecord.id, nameplate: "42", createdAt: 1_000,
            expiresAt: 2_000,
            uses: 1)
        #expect(
            code {
                try s.grant(invite: annInvite, events: s.fixture.events).verify(identity: s.sam, now: 1_500)
            }
                == "grant_forged")
    }

    @Test func wrapsMustBeSignedByAMemberAndAddressedToUs() throws {
        var s = try Scenario()
        let (thread, key) = s.threads[0]
        // Signed by someone outside the roster.
        let outsider = DeviceIdentity.generate()
        var wraps = [outsider.wrap(key, for: s.samRecord, in: s.fixture.space, thread: thread)]
        #expect(code { try s.grant(wraps: wraps).verify(identity: s.sam, now: 1_500) } == "grant_forged")
        // Addressed to another member.
        let (_, other) = try s.fixture.addMember(name: "Ann")
        wraps = [s.fixture.owner.wrap(key, for: other, in: s.fixture.space, thread: thread)]
        #expect(
            code { try s.grant(wraps: wraps, events: s.fixture.events).verify(identity: s.sam, now: 1_500) }
                == "grant_forged")
        // For another space.
        wraps = [s.fixture.owner.wrap(key, for: s.samRecord, in: SpaceID.random(), thread: thread)]
        #expect(code { try s.grant(wraps: wraps).verify(identity: s.sam, now: 1_500) } == "grant_forged")
    }

    @Test func aTamperedRosterIsRefused() throws {
        let s = try Scenario()
        // Drop the event that added Sam, or reorder: the chain no longer lists this device.
        #expect(
            code {
                try s.grant(events: Array(s.fixture.events.dropLast())).verify(identity: s.sam, now: 1_500)
            }
                == "grant_forged")
        #expect(
            code { try s.grant(events: s.fixture.events.reversed()).verify(identity: s.sam, now: 1_500) }
                == "grant_forged")
    }

    @Test(arguments: [
        "", "[]", "{}", #"{"v":2}"#, #"{"v":3}"#, #"{"v":1}"#, #"{"v":1,"space":7}"#, "not json",
    ])
    func badGrantObjectsGetAClearError(text: String) {
        #expect(throws: JoinGrantError.self) { try JoinGrant(decoding: Array(text.utf8)) }
    }

    /// Each kind of bad grant says what is wrong: not a grant, an unsupported version (also when
    /// every field is well formed), a bad field.
    @Test func badGrantsSayWhy() throws {
        func message(_ bytes: [UInt8]) -> String? {
            do {
                _ = try JoinGrant(decoding: bytes)
                return nil
            } catch {
                return error.message
            }
        }
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(try Scenario().grant().encoded())) as? [String: Any])
        json["v"] = 3
        let future = Array(try JSONSerialization.data(withJSONObject: json))
        #expect(message(future)?.contains("grant version 3 is not supported") == true)
        #expect(message(Array(#"{"v":3}"#.utf8))?.contains("grant version 3 is not supported") == true)
        #expect(message(Array("{}".utf8))?.contains("not a grant object") == true)
        #expect(message(Array(#"{"v":2}"#.utf8))?.contains("missing or malformed") == true)
    }

    /// Version 2 (what attendants send): no member list in the grant; the joiner verifies the
    /// chain it fetched from the space server, and the same checks hold.
    @Test func aVersion2GrantLeavesTheChainOutAndVerifiesAgainstTheFetchedOne() throws {
        let s = try Scenario()
        let honest = s.grant()
        let grant = JoinGrant(
            space: honest.space, ownerSigningKey: honest.ownerSigningKey, memberID: honest.memberID,
            deviceToken: nil, wraps: honest.wraps, invite: honest.invite, historyHint: honest.historyHint)
        let bytes = grant.encoded()
        let json = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        #expect(json?["roster"] == nil)
        #expect(json?["v"] as? Int == 2)
        let decoded = try JoinGrant(decoding: bytes)
        #expect(decoded == grant)
        #expect(code { try decoded.verify(identity: s.sam, now: 1_500) } == "grant_invalid")
        let verified = try decoded.verify(identity: s.sam, now: 1_500, events: s.fixture.events)
        #expect(verified.threadKeys.count == 3)
        // A server chain that does not list this device, or a forged invite, is refused.
        #expect(
            code {
                try decoded.verify(identity: s.sam, now: 1_500, events: Array(s.fixture.events.dropLast()))
            } == "grant_forged")
        #expect(
            code {
                try decoded.verify(
                    identity: DeviceIdentity.generate(), now: 1_500, events: s.fixture.events)
            } == "grant_forged")
    }

    /// With the attendant's checkpoint the fetched chain is pinned by its hash: the same verdicts,
    /// and a chain that does not reach the vouched hash is refused.
    @Test func aCheckpointedGrantVerifiesAgainstTheFetchedChain() throws {
        let s = try Scenario()
        let honest = s.grant()
        let events = s.fixture.events
        let grant = JoinGrant(
            space: honest.space, ownerSigningKey: honest.ownerSigningKey, memberID: honest.memberID,
            deviceToken: nil, wraps: honest.wraps, invite: honest.invite, historyHint: honest.historyHint,
            checkpoint: ChainCheckpoint(events[events.count - 1]))
        let decoded = try JoinGrant(decoding: grant.encoded())
        #expect(decoded == grant)
        #expect(try decoded.verify(identity: s.sam, now: 1_500, events: events).threadKeys.count == 3)
        #expect(
            code { try decoded.verify(identity: s.sam, now: 1_500, events: Array(events.dropLast())) }
                == "grant_forged")
        let elsewhere = JoinGrant(
            space: honest.space, ownerSigningKey: honest.ownerSigningKey, memberID: honest.memberID,
            deviceToken: nil, wraps: honest.wraps, invite: honest.invite, historyHint: honest.historyHint,
            checkpoint: ChainCheckpoint(sequence: UInt64(events.count - 1), hash: events[0].hash))
        #expect(code { try elsewhere.verify(identity: s.sam, now: 1_500, events: events) } == "grant_forged")
    }

    /// A version 1 grant (from an older attendant) still carries its chain and is accepted; one
    /// that lost its chain is malformed.
    @Test func aVersion1GrantIsStillAccepted() throws {
        let s = try Scenario()
        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(s.grant().encoded())) as? [String: Any])
        json["v"] = 1
        let v1 = try JoinGrant(decoding: Array(try JSONSerialization.data(withJSONObject: json)))
        #expect(v1.v == 1)
        #expect(try v1.verify(identity: s.sam, now: 1_500).threadKeys.count == 3)
        json["roster"] = nil
        let missing = Array(try JSONSerialization.data(withJSONObject: json))
        #expect(code { _ = try JoinGrant(decoding: missing) } == "grant_invalid")
    }

    private func code(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch let error as JoinGrantError {
            return error.code
        } catch {
            return "other: \(error)"
        }
    }
}
