import Foundation
import SpaceModel
import Testing

@testable import ClientCore

/// `Roster.verify(events:ownerKey:vouchedThrough:)`: a chain pinned by a vouched hash up to a
/// checkpoint, verified in full after it.
@Suite struct RosterCheckpointTests {
    /// Owner adds Ann (invite right); Ann adds Bob and Dan; owner removes Bob; owner adds Eve.
    private func chain() throws -> SpaceFixture {
        var fixture = try SpaceFixture()
        let (ann, _) = try fixture.addMember(name: "Ann", rights: .invite)
        let (_, bob) = try fixture.addMember(name: "Bob", signedBy: ann)
        _ = try fixture.addMember(name: "Dan", signedBy: ann)
        try fixture.remove(bob.id)
        _ = try fixture.addMember(name: "Eve")
        return fixture
    }

    private func vouchedDecode(_ events: [MembershipEvent]) throws -> [MembershipEvent] {
        let decoder = JSONDecoder()
        decoder.userInfo = [.memberKeysVouched: true]
        return try decoder.decode([MembershipEvent].self, from: JSONEncoder().encode(events))
    }

    @Test func anyCheckpointGivesTheSameRosterAsFullVerification() throws {
        let fixture = try chain()
        let key = fixture.owner.publicKeys.signing
        let full = try Roster.verify(events: fixture.events, ownerKey: key)
        let decoded = try vouchedDecode(fixture.events)
        #expect(decoded == fixture.events)
        for event in fixture.events {
            let roster = try Roster.verify(
                events: decoded, ownerKey: key, vouchedThrough: ChainCheckpoint(event))
            #expect(roster == full)
        }
        // The checkpoint's JSON form round-trips.
        let checkpoint = ChainCheckpoint(fixture.events[3])
        let json = try JSONEncoder().encode(checkpoint)
        #expect(try JSONDecoder().decode(ChainCheckpoint.self, from: json) == checkpoint)
    }

    @Test func aChainThatDoesNotReachTheVouchedHashIsRefused() throws {
        let fixture = try chain()
        let key = fixture.owner.publicKeys.signing
        let checkpoint = ChainCheckpoint(fixture.events[3])
        // Another hash at that sequence.
        let other = ChainCheckpoint(sequence: 3, hash: fixture.events[2].hash)
        #expect(
            errorCode { _ = try Roster.verify(events: fixture.events, ownerKey: key, vouchedThrough: other) }
                == .eventChainBroken)
        // The chain ends before the checkpoint (a server withholding the newest events).
        #expect(
            errorCode {
                _ = try Roster.verify(
                    events: Array(fixture.events.prefix(3)), ownerKey: key, vouchedThrough: checkpoint)
            } == .eventChainBroken)
        // A pinned event changed after signing (rights escalated): its hash changes, so the next
        // event no longer follows it, and at the checkpoint itself the head differs.
        for index in [1, 3] {
            var events = fixture.events
            guard case .memberAdded(let record) = events[index].change else {
                Issue.record("expected an add")
                return
            }
            let escalated = MemberRecord(id: record.id, keys: record.keys, rights: .invite, name: "X")
            let e = events[index]
            events[index] = MembershipEvent(
                space: e.space, sequence: e.sequence, previous: e.previous, change: .memberAdded(escalated),
                signer: e.signer, signature: e.signature)
            #expect(
                errorCode { _ = try Roster.verify(events: events, ownerKey: key, vouchedThrough: checkpoint) }
                    == .eventChainBroken)
        }
        // The wrong owner.
        #expect(
            errorCode {
                _ = try Roster.verify(
                    events: fixture.events, ownerKey: DeviceIdentity.generate().publicKeys.signing,
                    vouchedThrough: checkpoint)
            } == .ownerKeyMismatch)
    }

    @Test func rulesHoldInsideThePinnedPrefix() throws {
        // A member without the invite right adds someone: hash-linked and signed, but not allowed.
        var fixture = try SpaceFixture()
        let (plain, plainRecord) = try fixture.addMember(name: "Plain")
        let newcomer = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "New")
        let event = MembershipEvent.make(
            space: fixture.space, sequence: 2, previous: fixture.roster.head, change: .memberAdded(newcomer),
            signer: plainRecord.id, identity: plain)
        #expect(
            errorCode {
                _ = try Roster.verify(
                    events: fixture.events + [event], ownerKey: fixture.owner.publicKeys.signing,
                    vouchedThrough: ChainCheckpoint(event))
            } == .notAuthorised)
    }

    @Test func eventsAfterTheCheckpointAreVerifiedInFull() throws {
        let fixture = try chain()
        let key = fixture.owner.publicKeys.signing
        let checkpoint = ChainCheckpoint(fixture.events[2])
        // A forged signature after the checkpoint.
        var events = fixture.events
        let e = events[4]
        var signature = e.signature.bytes
        signature[7] ^= 0x01
        events[4] = MembershipEvent(
            space: e.space, sequence: e.sequence, previous: e.previous, change: e.change, signer: e.signer,
            signature: try Signature(bytes: signature))
        #expect(
            errorCode { _ = try Roster.verify(events: events, ownerKey: key, vouchedThrough: checkpoint) }
                == .badSignature)
        // A member key that is not a usable point, decoded unchecked, after the checkpoint: refused;
        // the same event inside the pinned prefix is the voucher's to have checked.
        var bad = try SpaceFixture()
        let smallOrder = [UInt8](repeating: 0, count: 32)
        let record = MemberRecord(
            id: .random(),
            keys: MemberPublicKeys(
                encryption: EncryptionPublicKey(trusted: smallOrder),
                signing: DeviceIdentity.generate().publicKeys.signing),
            name: "Bad")
        try bad.append(bad.roster.nextEvent(.memberAdded(record), signedBy: bad.owner))
        let decoded = try vouchedDecode(bad.events)
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode([MembershipEvent].self, from: JSONEncoder().encode(bad.events))
        }
        #expect(
            errorCode {
                _ = try Roster.verify(
                    events: decoded, ownerKey: bad.owner.publicKeys.signing,
                    vouchedThrough: ChainCheckpoint(decoded[0]))
            } == .invalidPublicKey)
        #expect(
            (try? Roster.verify(
                events: decoded, ownerKey: bad.owner.publicKeys.signing,
                vouchedThrough: ChainCheckpoint(decoded[1]))) != nil)
    }
}
