import Foundation
import TestSupport
import Testing

@testable import ClientCore
@testable import SpaceModel

/// What a join costs the roster others hold: `SharedTable` keeps a roster's members in small
/// leaves, so an event applied to a roster that a cache, the admissions in flight and the checks
/// all hold copies one leaf, not the space. And the signatures a bot verified once (an invite
/// record, its own events) are not verified again, while every rule still is.
@Suite struct RosterSharingTests {
    @Test func aSharedTableBehavesAsADictionary() {
        var random = SplitMix64(seed: 23)
        var table = SharedTable<Int, Int>()
        var model: [Int: Int] = [:]
        for step in 0..<6000 {
            let key = Int.random(in: 0..<1500, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                #expect(table.removeValue(forKey: key) == model.removeValue(forKey: key))
            case 1:
                table[key] = nil
                model[key] = nil
            default:
                table[key] = step
                model[key] = step
            }
            #expect(table.count == model.count)
            #expect(table[key] == model[key])
        }
        #expect(table.dictionary == model)
        #expect(Array(table).count == model.count)
        #expect(Set(table.keys) == Set(model.keys))
        #expect(table.values.sorted() == model.values.sorted())
        #expect(table.mapValues { $0 * 2 }.dictionary == model.mapValues { $0 * 2 })
        #expect(table == SharedTable(model))
        var other = table
        other[-1] = 0
        #expect(table != other)
        other[-1] = nil
        #expect(table == other)
        #expect(SharedTable<Int, Int>().isEmpty && !table.isEmpty)
    }

    @Test func aChangeToAHeldCopyCopiesOneLeaf() {
        var table = SharedTable<Int, String>()
        for key in 0..<5000 { table[key] = "\(key)" }
        let held = table
        #expect(table.sharedLeaves(with: held) == 1024)
        table[5000] = "new"
        #expect(table.sharedLeaves(with: held) == 1023)
        table.removeValue(forKey: 17)
        #expect(table.sharedLeaves(with: held) >= 1022)
        #expect(held.count == 5000 && held[17] == "17" && held[5000] == nil)
        #expect(table.count == 5000 && table[17] == nil && table[5000] == "new")
    }

    /// A member added to a roster of 1,500 that someone else still holds: the new roster shares
    /// all but one leaf of its members with the held one (with one dictionary per field, as
    /// before, it shared none: every join copied the whole space).
    @Test func addingAMemberToAHeldRosterLeavesTheRestShared() throws {
        var fixture = try SpaceFixture()
        var roster = fixture.roster
        for index in 0..<1500 {
            let record = MemberRecord(
                id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [], name: "M\(index)")
            try roster.apply(
                roster.nextEvent(.memberAdded(record), signedBy: fixture.owner), verifyingSignatures: false)
        }
        let held = roster
        let joiner = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [], name: "Sam")
        _ = try roster.applyUndoably(roster.nextEvent(.memberAdded(joiner), signedBy: fixture.owner))
        #expect(roster.members.sharedLeaves(with: held.members) == 1023)
        #expect(roster.members.count == held.members.count + 1)
        #expect(held.members[joiner.id] == nil && roster.members[joiner.id] == joiner)
        #expect(roster.currentMember(signingKey: joiner.keys.signing) == joiner)
        #expect(held.currentMember(signingKey: joiner.keys.signing) == nil)
        _ = try fixture.addMember(name: "Ann")
    }

    /// An invite record checked through a memo is remembered by its exact bytes: checked again,
    /// it is not verified again; a record differing in its signature, or in a signed field, is
    /// verified (and refused).
    @Test func aRememberedInviteIsCheckedByItsExactBytes() throws {
        var fixture = try SpaceFixture()
        let (ann, annRecord) = try fixture.addMember(name: "Ann", rights: .invite)
        let invite = ann.signInvite(
            space: fixture.space, inviter: annRecord.id, nameplate: "7", createdAt: 0, expiresAt: 100,
            uses: 3)
        let memo = SignatureMemo()
        try fixture.roster.checkInvite(invite, memo: memo)
        #expect(memo.count == 1)
        try fixture.roster.checkInvite(invite, memo: memo)
        #expect(memo.count == 1)
        var signature = Base64URL.decode(invite.signature)!
        signature[5] ^= 1
        let forged = SignedInvite(
            v: invite.v, space: invite.space, inviter: invite.inviter, inviterKey: invite.inviterKey,
            nameplate: invite.nameplate, createdAt: invite.createdAt, expiresAt: invite.expiresAt,
            uses: invite.uses, signature: Base64URL.encode(signature))
        #expect(errorCode { try fixture.roster.checkInvite(forged, memo: memo) } == .badSignature)
        let moreUses = SignedInvite(
            v: invite.v, space: invite.space, inviter: invite.inviter, inviterKey: invite.inviterKey,
            nameplate: invite.nameplate, createdAt: invite.createdAt, expiresAt: invite.expiresAt,
            uses: 4, signature: invite.signature)
        #expect(errorCode { try fixture.roster.checkInvite(moreUses, memo: memo) } == .badSignature)
        #expect(memo.count == 1)
        // Full, it starts over (and still answers).
        let small = SignatureMemo(capacity: 1)
        try fixture.roster.checkInvite(invite, memo: small)
        let other = ann.signInvite(
            space: fixture.space, inviter: annRecord.id, nameplate: "8", createdAt: 0, expiresAt: 100,
            uses: 3)
        try fixture.roster.checkInvite(other, memo: small)
        #expect(small.count == 1)
    }

    /// An event this device signed is applied without verifying its own signature (it made it),
    /// but by every rule, and with its invite record verified.
    @Test func anEventSignedHereIsCheckedByEveryRuleAndItsInvite() throws {
        var fixture = try SpaceFixture()
        let (ann, annRecord) = try fixture.addMember(name: "Ann", rights: .invite)
        let (bot, botRecord) = try fixture.addMember(name: "Bot", rights: .invite)
        let invite = ann.signInvite(
            space: fixture.space, inviter: annRecord.id, nameplate: "7", createdAt: 0, expiresAt: 100,
            uses: 3)
        let memo = SignatureMemo()
        let sam = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: [], name: "Sam")
        let event = try fixture.roster.nextEvent(.memberAdded(sam), signedBy: bot, invite: invite)
        var roster = fixture.roster
        _ = try roster.applyUndoably(event, checks: .signedHere(memo: memo))
        #expect(roster.members[sam.id] == sam)
        #expect(memo.count == 1)
        // What `signedHere` trusts is the event's own signature, and nothing else.
        let unsigned = MembershipEvent(
            space: event.space, sequence: event.sequence, previous: event.previous, change: event.change,
            signer: event.signer, invite: event.invite,
            signature: try Signature(bytes: [UInt8](repeating: 0, count: 64)))
        var trusting = fixture.roster
        _ = try trusting.applyUndoably(unsigned, checks: .signedHere(memo: nil))
        var checking = fixture.roster
        #expect(errorCode { _ = try checking.applyUndoably(unsigned) } == .badSignature)
        #expect(checking == fixture.roster)
        // A rule still refuses: rights the signer lacks, and a forged invite record.
        let admin = MemberRecord(
            id: .random(), keys: DeviceIdentity.generate().publicKeys, rights: .admin, name: "Eve")
        let tooMuch = try fixture.roster.nextEvent(.memberAdded(admin), signedBy: bot, invite: invite)
        var refusing = fixture.roster
        #expect(
            errorCode { _ = try refusing.applyUndoably(tooMuch, checks: .signedHere(memo: memo)) }
                == .notAuthorised)
        #expect(refusing == fixture.roster)
        let forged = SignedInvite(
            v: invite.v, space: invite.space, inviter: invite.inviter, inviterKey: invite.inviterKey,
            nameplate: invite.nameplate, createdAt: invite.createdAt, expiresAt: invite.expiresAt,
            uses: 30, signature: invite.signature)
        let withForged = try fixture.roster.nextEvent(.memberAdded(sam), signedBy: bot, invite: forged)
        #expect(
            errorCode { _ = try refusing.applyUndoably(withForged, checks: .signedHere(memo: memo)) }
                == .badSignature)
        #expect(refusing == fixture.roster)
        _ = botRecord
    }
}
