import Foundation
import TestSupport
import Testing

@testable import ClientCore
@testable import SpaceModel

/// What `AdmissionQueue` does with a batch instead of keeping a roster per event: it applies the
/// batch's events to one roster in place, takes back (newest first) those the server did not
/// store, and finds a key a member holds by lookup rather than by scanning the space. Over random
/// batches (with entries refused before signing, and stores cut short) the roster it ends with
/// must be exactly the one verified afresh from the events the server stored.
@Suite struct AdmissionRosterTests {
    /// The queue's old check, a scan of every current member.
    private func scanned(_ keys: MemberPublicKeys, in roster: Roster) -> MemberRecord? {
        roster.members.values.first { $0.keys == keys }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func batchesAppliedInPlaceAndCutShortEqualTheStoredChainVerified(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        var fixture = try SpaceFixture()
        // A few members the owner adds first, some of whom then leave: their keys come back in
        // batches (held by a current member: refused; by a former one: a new member, allowed).
        var known: [MemberPublicKeys] = []
        for index in 0..<6 {
            let identity = DeviceIdentity.generate()
            let record = MemberRecord(id: .random(), keys: identity.publicKeys, name: "M\(index)")
            try fixture.append(fixture.roster.nextEvent(.memberAdded(record), signedBy: fixture.owner))
            known.append(identity.publicKeys)
            if index % 2 == 0 {
                try fixture.append(
                    fixture.roster.nextEvent(.memberRemoved(record.id), signedBy: fixture.owner))
            }
        }
        var stored = fixture.events
        var roster = fixture.roster
        var refusedBeforeSigning = 0
        var takenBack = 0
        for _ in 0..<40 {
            var running = roster
            var signed: [MembershipEvent] = []
            var undos: [Roster.Undo] = []
            for _ in 0..<Int.random(in: 1...5, using: &random) {
                let keys =
                    Bool.random(using: &random) && !known.isEmpty
                    ? known.randomElement(using: &random)! : DeviceIdentity.generate().publicKeys
                let lookedUp = running.currentMember(signingKey: keys.signing).flatMap {
                    $0.keys == keys ? $0 : nil
                }
                #expect(lookedUp == scanned(keys, in: running))
                if lookedUp != nil {
                    refusedBeforeSigning += 1
                    continue
                }
                let record = MemberRecord(id: .random(), keys: keys, name: "J\(stored.count)")
                let event = try running.nextEvent(.memberAdded(record), signedBy: fixture.owner)
                undos.append(try running.applyUndoably(event))
                signed.append(event)
                known.append(keys)
            }
            // The server stores a prefix of what was sent (all of it, most often).
            let count =
                Bool.random(using: &random) ? signed.count : Int.random(in: 0...signed.count, using: &random)
            if count > 0 {
                for undo in undos[count...].reversed() { running.undo(undo) }
                takenBack += signed.count - count
                stored += signed.prefix(count)
                roster = running
            }
            #expect(
                roster == (try Roster.verify(events: stored, ownerKey: fixture.owner.publicKeys.signing)))
        }
        // The run went through both kinds of refusal, whatever the seed.
        #expect(refusedBeforeSigning > 0)
        #expect(takenBack > 0)
    }
}
