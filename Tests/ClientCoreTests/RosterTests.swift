import Foundation
import SpaceModel
import Testing

@testable import ClientCore

@Suite struct RosterTests {
    /// Owner adds Ann (invite right); Ann adds Bob; owner adds Cat (admin); Cat removes Bob.
    private func realisticChain() throws -> (
        SpaceFixture, ann: DeviceIdentity, bob: MemberRecord, cat: DeviceIdentity
    ) {
        var fixture = try SpaceFixture()
        let (ann, _) = try fixture.addMember(name: "Ann", rights: .invite)
        let (_, bob) = try fixture.addMember(name: "Bob", signedBy: ann)
        let (cat, _) = try fixture.addMember(name: "Cat", rights: .admin)
        try fixture.remove(bob.id, signedBy: cat)
        return (fixture, ann, bob, cat)
    }

    @Test func verifiesARealisticChain() throws {
        let (fixture, _, bob, _) = try realisticChain()
        let roster = try Roster.verify(events: fixture.events, ownerKey: fixture.owner.publicKeys.signing)
        #expect(roster == fixture.roster)
        #expect(roster.members.count == 3)
        #expect(roster.members[bob.id] == nil)
        #expect(roster.formerMembers[bob.id] == bob)
        #expect(roster.nextSequence == 5)
        #expect(roster.head == fixture.events.last!.hash)
        #expect(roster.rights(of: fixture.ownerID) == .all)
        // The JSON form round-trips and still verifies.
        let json = try JSONEncoder().encode(fixture.events)
        let decoded = try JSONDecoder().decode([MembershipEvent].self, from: json)
        #expect(decoded == fixture.events)
        #expect(try Roster.verify(events: decoded, ownerKey: fixture.owner.publicKeys.signing) == roster)
    }

    @Test func rejectsTheWrongOwner() throws {
        let (fixture, _, _, _) = try realisticChain()
        let other = DeviceIdentity.generate().publicKeys.signing
        #expect(
            errorCode { _ = try Roster.verify(events: fixture.events, ownerKey: other) } == .ownerKeyMismatch)
        #expect(errorCode { _ = try Roster.verify(events: [], ownerKey: other) } == .invalidEvent)
        // A chain that starts with anything but the creation event.
        #expect(
            errorCode {
                _ = try Roster.verify(events: Array(fixture.events.dropFirst()), ownerKey: other)
            } == .ownerKeyMismatch)
    }

    @Test func rejectsReorderedReplayedAndDroppedEvents() throws {
        let (fixture, _, _, _) = try realisticChain()
        let key = fixture.owner.publicKeys.signing
        var swapped = fixture.events
        swapped.swapAt(1, 2)
        #expect(errorCode { _ = try Roster.verify(events: swapped, ownerKey: key) } == .eventOutOfOrder)
        var replayed = fixture.events
        replayed.append(fixture.events[1])
        #expect(errorCode { _ = try Roster.verify(events: replayed, ownerKey: key) } == .eventOutOfOrder)
        var dropped = fixture.events
        dropped.remove(at: 2)
        #expect(errorCode { _ = try Roster.verify(events: dropped, ownerKey: key) } == .eventOutOfOrder)
        var genesisTwice = fixture.events
        genesisTwice.insert(fixture.events[0], at: 1)
        #expect(errorCode { _ = try Roster.verify(events: genesisTwice, ownerKey: key) } == .eventOutOfOrder)
    }

    @Test func rejectsAForkedChain() throws {
        // Same sequence number, validly signed by the owner, but naming the wrong predecessor.
        var fixture = try SpaceFixture()
        _ = try fixture.addMember(name: "Ann")
        let record = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "Fork")
        let fork = MembershipEvent.make(
            space: fixture.space, sequence: 2, previous: fixture.events[0].hash, change: .memberAdded(record),
            signer: fixture.ownerID, identity: fixture.owner)
        #expect(errorCode { try fixture.append(fork) } == .eventChainBroken)
    }

    @Test func rejectsForgedSignatures() throws {
        let (fixture, _, _, _) = try realisticChain()
        for index in fixture.events.indices {
            var events = fixture.events
            let e = events[index]
            var signature = e.signature.bytes
            signature[10] ^= 0x01
            events[index] = MembershipEvent(
                space: e.space, sequence: e.sequence, previous: e.previous, change: e.change,
                signer: e.signer,
                signature: try Signature(bytes: signature))
            #expect(
                errorCode {
                    _ = try Roster.verify(events: events, ownerKey: fixture.owner.publicKeys.signing)
                }
                    == .badSignature)
        }
        // An event whose content was changed after signing (rights escalated).
        var events = fixture.events
        guard case .memberAdded(let ann) = events[1].change else {
            Issue.record("expected an add")
            return
        }
        let escalated = MemberRecord(id: ann.id, keys: ann.keys, rights: .all, name: ann.name)
        events[1] = MembershipEvent(
            space: events[1].space, sequence: 1, previous: events[1].previous,
            change: .memberAdded(escalated),
            signer: events[1].signer, signature: events[1].signature)
        #expect(
            errorCode { _ = try Roster.verify(events: events, ownerKey: fixture.owner.publicKeys.signing) }
                == .badSignature)
    }

    @Test func rejectsEventsFromAnotherSpace() throws {
        var fixture = try SpaceFixture()
        var other = try SpaceFixture()
        _ = try other.addMember(name: "Ann")
        // Replaying another space's second event here: wrong space even though the slot fits.
        #expect(errorCode { try fixture.append(other.events[1]) } == .wrongContext)
    }

    @Test func onlyEntitledMembersAddAndRemove() throws {
        var fixture = try SpaceFixture()
        let (plain, plainRecord) = try fixture.addMember(name: "Plain")
        let (inviter, _) = try fixture.addMember(name: "Inviter", rights: .invite)
        let newcomer = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "New")

        // No right: may not add.
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberAdded(newcomer), signedBy: plain))
            }
                == .notAuthorised)
        // Invite right: may add, but not grant admin, and may not remove.
        let admin = MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: .admin)
        #expect(
            errorCode { try fixture.append(fixture.roster.nextEvent(.memberAdded(admin), signedBy: inviter)) }
                == .notAuthorised)
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(.memberRemoved(plainRecord.id), signedBy: inviter))
            }
                == .notAuthorised)
        try fixture.append(fixture.roster.nextEvent(.memberAdded(newcomer), signedBy: inviter))
        // Nobody removes the owner, not even an admin.
        let (adminIdentity, _) = try fixture.addMember(name: "Admin", rights: .admin)
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(.memberRemoved(fixture.ownerID), signedBy: adminIdentity))
            }
                == .notAuthorised)
        // A non-member cannot sign; a removed member cannot sign any more.
        let stranger = DeviceIdentity.generate()
        #expect(
            errorCode { _ = try fixture.roster.nextEvent(.memberAdded(newcomer), signedBy: stranger) }
                == .signerNotMember)
        let staleEvent = try fixture.roster.nextEvent(
            .memberAdded(MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys)),
            signedBy: inviter)
        try fixture.remove(
            try #require(fixture.roster.currentMember(signingKey: inviter.publicKeys.signing)).id)
        let late = MembershipEvent.make(
            space: fixture.space, sequence: fixture.roster.nextSequence, previous: fixture.roster.head,
            change: staleEvent.change, signer: staleEvent.signer, identity: inviter)
        #expect(errorCode { try fixture.append(late) } == .signerNotMember)
    }

    @Test func rejectsInvalidMembershipChanges() throws {
        var fixture = try SpaceFixture()
        let (ann, annRecord) = try fixture.addMember(name: "Ann")
        // Re-adding a taken id, reusing a current member's signing key, removing a non-member.
        let sameID = MemberRecord(id: annRecord.id, keys: DeviceIdentity.generate().publicKeys)
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberAdded(sameID), signedBy: fixture.owner))
            }
                == .invalidEvent)
        let sameKey = MemberRecord(id: .random(), keys: ann.publicKeys)
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberAdded(sameKey), signedBy: fixture.owner))
            }
                == .invalidEvent)
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(.memberRemoved(.random()), signedBy: fixture.owner))
            }
                == .invalidEvent)
        let longName = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys,
            name: String(repeating: "x", count: 200))
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberAdded(longName), signedBy: fixture.owner))
            }
                == .invalidEvent)
        let controlName = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, name: "a\u{7}b")
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(.memberAdded(controlName), signedBy: fixture.owner))
            }
                == .invalidEvent)
        // A second creation event.
        let again = try fixture.roster.nextEvent(
            .spaceCreated(owner: fixture.ownerRecord), signedBy: fixture.owner)
        #expect(errorCode { try fixture.append(again) } == .invalidEvent)
        // Failed events changed nothing.
        #expect(fixture.roster.nextSequence == 2)
        #expect(
            try Roster.verify(events: fixture.events, ownerKey: fixture.owner.publicKeys.signing)
                == fixture.roster)
    }

    @Test func genesisMustBeSelfSignedByTheOwner() throws {
        let owner = DeviceIdentity.generate()
        let other = DeviceIdentity.generate()
        let space = SpaceID.random()
        let ownerID = MemberID.random()
        let genesis = owner.createSpace(space, as: ownerID)
        // Signed by someone else under the owner's name.
        let forged = MembershipEvent.make(
            space: space, sequence: 0, previous: .genesis, change: genesis.change, signer: ownerID,
            identity: other)
        #expect(errorCode { _ = try Roster(genesis: forged) } == .badSignature)
        let wrongSigner = MembershipEvent.make(
            space: space, sequence: 0, previous: .genesis, change: genesis.change, signer: .random(),
            identity: owner)
        #expect(errorCode { _ = try Roster(genesis: wrongSigner) } == .notAuthorised)
        let late = MembershipEvent.make(
            space: space, sequence: 1, previous: .genesis, change: genesis.change, signer: ownerID,
            identity: owner)
        #expect(errorCode { _ = try Roster(genesis: late) } == .eventOutOfOrder)
    }

    @Test func eventJSONRejectsUnknownShapes() throws {
        let fixture = try SpaceFixture()
        let json = String(decoding: try JSONEncoder().encode(fixture.events[0]), as: UTF8.self)
        for (from, to) in [
            ("space_created", "space_deleted"), ("\"version\":1", "\"version\":2"), ("\"admin\"", "\"root\""),
        ] {
            let bad = json.replacingOccurrences(of: from, with: to)
            #expect(bad != json)
            #expect(throws: DecodingError.self) {
                try JSONDecoder().decode(MembershipEvent.self, from: Data(bad.utf8))
            }
        }
    }
}
