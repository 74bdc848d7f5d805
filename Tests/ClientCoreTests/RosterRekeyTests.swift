import Foundation
import SpaceModel
import Testing

@testable import ClientCore

/// "Member re-keyed" (the re-invite floor of account recovery): who may re-admit whom, what the
/// new identity gets, and that the old identity's messages still verify.
@Suite struct RosterRekeyTests {
    func rekey(_ old: MemberID, rights: MemberRights, name: String = "Sam") -> (DeviceIdentity, MemberRecord)
    {
        let identity = DeviceIdentity.generate()
        return (identity, MemberRecord(id: .random(), keys: identity.publicKeys, rights: rights, name: name))
    }

    @Test func inviterReadmitsAMemberWhoKeepsTheirRightsAndHistory() throws {
        var fixture = try SpaceFixture()
        let (inviter, _) = try fixture.addMember(name: "Ann", rights: .invite)
        let (plain, plainRecord) = try fixture.addMember(name: "Bob")
        let (oldSam, sam) = try fixture.addMember(name: "Sam", rights: .invite)
        let thread = ThreadID.random()
        let key = ThreadKey.random()
        let message = oldSam.encrypt(
            Array("hi".utf8), with: key, in: fixture.space, thread: thread, as: sam.id)

        // No right: may not re-admit. Wrong rights: refused.
        let (_, newSam) = rekey(sam.id, rights: .invite)
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(.memberRekeyed(old: sam.id, new: newSam), signedBy: plain))
            }
                == .notAuthorised)
        let (_, grabby) = rekey(sam.id, rights: .all)
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(
                        .memberRekeyed(old: sam.id, new: grabby), signedBy: fixture.owner))
            }
                == .invalidEvent)
        // Sam may move himself to a new identity (a remaining device after another was removed).
        var moved = fixture
        try moved.append(moved.roster.nextEvent(.memberRekeyed(old: sam.id, new: newSam), signedBy: oldSam))
        #expect(moved.roster.members[newSam.id]?.rights == .invite)
        #expect(moved.roster.formerMembers[sam.id] != nil)
        // An id or key already used: refused.
        let taken = MemberRecord(id: plainRecord.id, keys: newSam.keys, rights: .invite, name: "Sam")
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(.memberRekeyed(old: sam.id, new: taken), signedBy: inviter))
            }
                == .invalidEvent)

        try fixture.append(
            fixture.roster.nextEvent(.memberRekeyed(old: sam.id, new: newSam), signedBy: inviter))
        let roster = fixture.roster
        #expect(roster.members[sam.id] == nil)
        #expect(roster.formerMembers[sam.id] == sam)
        #expect(roster.members[newSam.id] == newSam)
        #expect(roster.newIdentities == [newSam.id: sam.id])
        #expect(SpaceSession.newIdentityNotes(roster) == ["Sam has a new identity"])
        // The old identity's message still verifies; the old identity cannot sign any more.
        #expect(try message.decrypt(with: key, verifyingAgainst: roster) == Array("hi".utf8))
        #expect(
            errorCode { _ = try roster.nextEvent(.memberRemoved(plainRecord.id), signedBy: oldSam) }
                == .signerNotMember)
        // The whole chain verifies from the owner's key and round-trips through JSON.
        let decoded = try JSONDecoder().decode(
            [MembershipEvent].self, from: JSONEncoder().encode(fixture.events))
        #expect(try Roster.verify(events: decoded, ownerKey: fixture.owner.publicKeys.signing) == roster)
    }

    @Test func onlyAnotherAdminReadmitsTheOwner() throws {
        var fixture = try SpaceFixture()
        let (inviter, _) = try fixture.addMember(name: "Ann", rights: .invite)
        let (admin, _) = try fixture.addMember(name: "Cat", rights: .admin)
        let (newOwnerKeys, newOwner) = rekey(fixture.ownerID, rights: .all, name: "Paul")
        #expect(
            errorCode {
                try fixture.append(
                    fixture.roster.nextEvent(
                        .memberRekeyed(old: fixture.ownerID, new: newOwner), signedBy: inviter))
            } == .notAuthorised)
        try fixture.append(
            fixture.roster.nextEvent(.memberRekeyed(old: fixture.ownerID, new: newOwner), signedBy: admin))
        #expect(fixture.roster.owner == newOwner.id)
        #expect(fixture.roster.rights(of: newOwner.id) == .all)
        // The new owner acts as owner.
        try fixture.append(
            fixture.roster.nextEvent(
                .memberAdded(
                    MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: .admin)),
                signedBy: newOwnerKeys))
        #expect(
            try Roster.verify(events: fixture.events, ownerKey: fixture.owner.publicKeys.signing)
                == fixture.roster)
    }
}
