import Foundation
import Testing

@testable import ClientCore
@testable import SpaceModel

/// `Roster.applyUndoably` and `undo`: what a server keeps instead of a copy of the roster per
/// event. Taking events back, newest first, must give exactly the roster before them, for every
/// kind of event, and a refused event must leave the roster as it was.
@Suite struct RosterUndoTests {
    /// Every kind of event the chain carries after its first, in an order where each is allowed:
    /// additions, a rights change, a link's signer adding its claimers (the last use retires it),
    /// a removal, a leave, re-keys of a member and of the owner, and a rename.
    private func events(on fixture: SpaceFixture) throws -> [MembershipEvent] {
        var running = fixture
        var events: [MembershipEvent] = []
        func add(_ event: MembershipEvent) throws {
            try running.append(event)
            events.append(event)
        }
        let owner = fixture.owner
        let ann = DeviceIdentity.generate()
        let annRecord = MemberRecord(id: .random(), keys: ann.publicKeys, rights: .invite, name: "Ann")
        try add(running.roster.nextEvent(.memberAdded(annRecord), signedBy: owner))
        let admin = DeviceIdentity.generate()
        let adminRecord = MemberRecord(id: .random(), keys: admin.publicKeys, rights: [], name: "Cat")
        try add(running.roster.nextEvent(.memberAdded(adminRecord), signedBy: owner))
        try add(running.roster.nextEvent(.rightsChanged(adminRecord.id, .admin), signedBy: owner))
        // Ann's link for two people.
        let signer = DeviceIdentity.generate()
        let signerRecord = MemberRecord(
            id: .random(), keys: signer.publicKeys, rights: .invite, name: "(invite)")
        let invite = ann.signInvite(
            space: fixture.space, inviter: annRecord.id, nameplate: SignedInvite.linkNameplate, createdAt: 0,
            expiresAt: 100, uses: 2)
        try add(running.roster.nextEvent(.memberAdded(signerRecord), signedBy: ann, invite: invite))
        var claimers: [MemberRecord] = []
        for name in ["Lee", "Sam"] {
            let record = MemberRecord(
                id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [], name: name)
            claimers.append(record)
            try add(running.roster.nextEvent(.memberAdded(record), signedBy: signer))
        }
        try add(running.roster.nextEvent(.memberRemoved(claimers[0].id), signedBy: admin))
        // Sam re-keyed by Ann (who holds his rights), then the owner re-keyed by the admin.
        let newSam = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [], name: "Sam")
        try add(running.roster.nextEvent(.memberRekeyed(old: claimers[1].id, new: newSam), signedBy: ann))
        let newOwner = DeviceIdentity.generate()
        let newOwnerRecord = MemberRecord(
            id: .random(), keys: newOwner.publicKeys, rights: .all, name: "Paul")
        try add(
            running.roster.nextEvent(
                .memberRekeyed(old: fixture.ownerID, new: newOwnerRecord), signedBy: admin))
        let sealed = SealedName.seal(
            "Annie", key: ThreadKey.random(), space: fixture.space, thread: .random(), member: annRecord.id)
        try add(running.roster.nextEvent(.memberRenamed(annRecord.id, sealed), signedBy: ann))
        try add(running.roster.nextEvent(.memberRemoved(annRecord.id), signedBy: ann))
        return events
    }

    @Test func takingEventsBackGivesEachRosterBeforeThem() throws {
        let fixture = try SpaceFixture()
        let events = try events(on: fixture)
        var roster = fixture.roster
        var before: [Roster] = []
        var undos: [Roster.Undo] = []
        for event in events {
            before.append(roster)
            undos.append(try roster.applyUndoably(event))
        }
        #expect(
            roster
                == (try Roster.verify(
                    events: [fixture.events[0]] + events, ownerKey: fixture.owner.publicKeys.signing)))
        for (undo, expected) in zip(undos, before).reversed() {
            roster.undo(undo)
            #expect(roster == expected)
        }
        // Applied again after being taken back, the chain ends where it did.
        for event in events { _ = try roster.applyUndoably(event) }
        #expect(roster == (try before.last!.applying(events.last!)))
    }

    @Test func aRefusedEventLeavesTheRosterAsItWas() throws {
        let fixture = try SpaceFixture()
        let events = try events(on: fixture)
        var roster = fixture.roster
        for event in events {
            let before = roster
            // The event once more after it was applied (a replay), and a forged copy: refused.
            let forged = MembershipEvent(
                space: event.space, sequence: event.sequence, previous: event.previous, change: event.change,
                signer: event.signer, invite: event.invite,
                signature: resign(DeviceIdentity.generate(), event.signedBytes))
            #expect(errorCode { _ = try roster.applyUndoably(forged) } == .badSignature)
            #expect(roster == before)
            _ = try roster.applyUndoably(event)
            let after = roster
            #expect(errorCode { _ = try roster.applyUndoably(event) } == .eventOutOfOrder)
            #expect(roster == after)
        }
    }
}
