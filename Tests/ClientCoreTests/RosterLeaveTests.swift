import ClientCore
import SpaceModel
import Testing

/// A member may remove themselves (leave), which is how a full-length invite's signer retires
/// after the last claim; the owner still cannot be removed, and members still cannot remove others.
@Suite struct RosterLeaveTests {
    @Test func membersMayLeaveButNotRemoveOthersAndTheOwnerStays() throws {
        let owner = DeviceIdentity.generate()
        let ownerID = MemberID.random()
        let space = SpaceID.random()
        var roster = try Roster(genesis: owner.createSpace(space, as: ownerID))
        let sam = DeviceIdentity.generate()
        let lee = DeviceIdentity.generate()
        let samRecord = MemberRecord(id: .random(), keys: sam.publicKeys, rights: .invite, name: "Sam")
        let leeRecord = MemberRecord(id: .random(), keys: lee.publicKeys, name: "Lee")
        try roster.apply(roster.nextEvent(.memberAdded(samRecord), signedBy: owner))
        try roster.apply(roster.nextEvent(.memberAdded(leeRecord), signedBy: owner))

        let removeOther = try roster.nextEvent(.memberRemoved(leeRecord.id), signedBy: sam)
        #expect(throws: KeyModelError.self) { try roster.apply(removeOther) }
        let ownerLeaves = try roster.nextEvent(.memberRemoved(ownerID), signedBy: owner)
        #expect(throws: KeyModelError.self) { try roster.apply(ownerLeaves) }

        try roster.apply(roster.nextEvent(.memberRemoved(samRecord.id), signedBy: sam))
        #expect(roster.members[samRecord.id] == nil)
        #expect(roster.formerMembers[samRecord.id]?.name == "Sam")
        #expect(roster.members.count == 2)
    }
}
