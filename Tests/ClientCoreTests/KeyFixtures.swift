import Foundation

@testable import ClientCore
@testable import SpaceModel

/// A space with an owner and helpers to add members, for key-model tests.
struct SpaceFixture {
    let space = SpaceID.random()
    let owner = DeviceIdentity.generate()
    let ownerID = MemberID.random()
    private(set) var events: [MembershipEvent] = []
    private(set) var roster: Roster

    init() throws {
        let genesis = owner.createSpace(space, as: ownerID, ownerName: "Paul")
        events = [genesis]
        roster = try Roster.verify(events: events, ownerKey: owner.publicKeys.signing)
    }

    /// Adds a new member (signed by `signer`, the owner by default) and returns their identity and record.
    mutating func addMember(
        name: String, rights: MemberRights = [], signedBy signer: DeviceIdentity? = nil
    ) throws -> (DeviceIdentity, MemberRecord) {
        let identity = DeviceIdentity.generate()
        let record = MemberRecord(id: .random(), keys: identity.publicKeys, rights: rights, name: name)
        try append(roster.nextEvent(.memberAdded(record), signedBy: signer ?? owner))
        return (identity, record)
    }

    mutating func remove(_ id: MemberID, signedBy signer: DeviceIdentity? = nil) throws {
        try append(roster.nextEvent(.memberRemoved(id), signedBy: signer ?? owner))
    }

    mutating func append(_ event: MembershipEvent) throws {
        try roster.apply(event)
        events.append(event)
    }

    var ownerRecord: MemberRecord { roster.members[ownerID]! }
}

/// Runs `body` and returns the key-model error code it throws (nil when it does not throw).
func errorCode(_ body: () throws -> Void) -> KeyModelError.Code? {
    do {
        try body()
        return nil
    } catch let error as KeyModelError {
        return error.code
    } catch {
        return nil
    }
}

/// Signs arbitrary bytes with an identity (to build well-signed but wrong objects in tests).
func resign(_ identity: DeviceIdentity, _ bytes: [UInt8]) -> Signature {
    identity.sign(bytes)
}
