import Foundation
import Testing

@testable import ClientCore
@testable import SpaceModel

/// The rules that bound a full-length link's signer (`Roster.delegations`): its key travels in the
/// link, so whoever holds the link may sign anything with it, in any order a server stores.
@Suite struct RosterDelegationTests {
    /// Ann (invite right) mints a link for `uses` people: she adds its signer with her signed
    /// record of the uses.
    private func linkFixture(uses: Int, rights: MemberRights = []) throws -> (
        SpaceFixture, ann: DeviceIdentity, annID: MemberID, signer: DeviceIdentity, signerID: MemberID
    ) {
        var fixture = try SpaceFixture()
        let (ann, annRecord) = try fixture.addMember(name: "Ann", rights: .invite)
        let signer = DeviceIdentity.generate()
        let record = MemberRecord(
            id: .random(), keys: signer.publicKeys, rights: rights.union(.invite), name: "(invite)")
        let record0 = ann.signInvite(
            space: fixture.space, inviter: annRecord.id, nameplate: SignedInvite.linkNameplate, createdAt: 0,
            expiresAt: 100, uses: uses)
        try fixture.append(fixture.roster.nextEvent(.memberAdded(record), signedBy: ann, invite: record0))
        return (fixture, ann, annRecord.id, signer, record.id)
    }

    private func newcomer(_ name: String, rights: MemberRights = []) -> MemberRecord {
        MemberRecord(id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: rights, name: name)
    }

    @Test func theLastUseRetiresTheSignerAndNothingMoreIsAdded() throws {
        var (fixture, _, _, signer, signerID) = try linkFixture(uses: 2)
        #expect(fixture.roster.delegations[signerID]?.usesLeft == 2)
        try fixture.append(fixture.roster.nextEvent(.memberAdded(newcomer("Lee")), signedBy: signer))
        #expect(fixture.roster.members[signerID] != nil)
        try fixture.append(fixture.roster.nextEvent(.memberAdded(newcomer("Sam")), signedBy: signer))
        #expect(fixture.roster.members[signerID] == nil)
        #expect(fixture.roster.formerMembers[signerID] != nil)
        // A third addition with the same key, placed by a server right after: refused.
        let third = MembershipEvent.make(
            space: fixture.space, sequence: fixture.roster.nextSequence, previous: fixture.roster.head,
            change: .memberAdded(newcomer("Mallory")), signer: signerID, identity: signer)
        #expect(errorCode { try fixture.append(third) } == .signerNotMember)
        // The whole chain verifies from the owner's key the same way on every device.
        let verified = try Roster.verify(events: fixture.events, ownerKey: fixture.owner.publicKeys.signing)
        #expect(verified == fixture.roster)
    }

    @Test func theSignerGrantsNoInviteRightAndSignsNothingButAdditions() throws {
        var (fixture, _, annID, signer, signerID) = try linkFixture(uses: 3)
        let inviting = newcomer("Mallory", rights: .invite)
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberAdded(inviting), signedBy: signer))
            } == .notAuthorised)
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberRemoved(annID), signedBy: signer))
            } == .notAuthorised)
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.rightsChanged(annID, []), signedBy: signer))
            } == .notAuthorised)
        // Its wraps and messages are nobody's: the key is in the link.
        let lee = newcomer("Lee")
        try fixture.append(fixture.roster.nextEvent(.memberAdded(lee), signedBy: signer))
        let thread = ThreadID.random()
        let wrap = signer.wrap(ThreadKey.random(), for: lee, in: fixture.space, thread: thread)
        #expect(errorCode { try wrap.verify(against: fixture.roster) } == .notAuthorised)
        let message = signer.encrypt(
            Array("hello".utf8), with: ThreadKey.random(), in: fixture.space, thread: thread, as: signerID)
        #expect(errorCode { try message.verifyAuthor(in: fixture.roster) } == .notAuthorised)
    }

    @Test func itsInviterRetiresItAndAnInviterWhoLeftVoidsIt() throws {
        var (fixture, ann, _, signer, signerID) = try linkFixture(uses: 5)
        // Ann holds no admin right, yet may retire her own link's signer (on expiry).
        var retired = fixture
        try retired.append(retired.roster.nextEvent(.memberRemoved(signerID), signedBy: ann))
        #expect(retired.roster.members[signerID] == nil)
        // Once Ann has left, what she sealed into the link adds nobody.
        try fixture.remove(fixture.roster.members.values.first { $0.name == "Ann" }!.id)
        #expect(
            errorCode {
                try fixture.append(fixture.roster.nextEvent(.memberAdded(newcomer("Lee")), signedBy: signer))
            } == .notAuthorised)
    }
}
