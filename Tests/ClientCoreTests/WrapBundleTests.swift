import CSodium
import Foundation
import Testing

@testable import ClientCore
@testable import SpaceModel

/// A wrap bundle (``KeyWrapBundle``) against a server or member that deviates: every attack is
/// refused with a stable code. ``oldFormatAgainstTheSameAttacks`` runs the same attacks on the
/// single wraps (``KeyWrap``) that spaces stored before: dropping a thread or re-ordering goes
/// unnoticed there.
@Suite struct WrapBundleTests {
    /// Paul's bundle of three threads' keys for Sam, and those keys.
    private static func bundle(
        _ fixture: SpaceFixture, for record: MemberRecord, by signer: DeviceIdentity? = nil
    )
        -> (KeyWrapBundle, [ThreadID: ThreadKey])
    {
        var keys: [ThreadID: ThreadKey] = [:]
        for _ in 0..<3 { keys[.random()] = .random() }
        let bundle = (signer ?? fixture.owner).wrapBundle(keys, for: record, in: fixture.space)!
        return (bundle, keys)
    }

    /// The bundle with some parts replaced, as a server could hand it out (no new signature).
    private static func altered(
        _ b: KeyWrapBundle, recipient: MemberID? = nil, ephemeral: [UInt8]? = nil,
        entries: [KeyWrapBundle.Entry]? = nil
    ) throws -> KeyWrapBundle {
        try KeyWrapBundle(
            space: b.space, recipient: recipient ?? b.recipient, signer: b.signer,
            ephemeral: ephemeral ?? b.ephemeral, entries: entries ?? b.entries, signature: b.signature)
    }

    @Test func wrapsAndOpensEveryThread() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let (lee, _) = try fixture.addMember(name: "Lee")
        let (bundle, keys) = Self.bundle(fixture, for: samRecord)
        #expect(bundle.entries.map(\.thread) == keys.keys.sorted())
        #expect(try bundle.open(with: sam, verifyingAgainst: fixture.roster) == keys)
        #expect(try bundle.verify(against: fixture.roster) == fixture.ownerRecord)
        let decoded = try JSONDecoder().decode(KeyWrapBundle.self, from: JSONEncoder().encode(bundle))
        #expect(decoded == bundle)
        #expect(
            errorCode { _ = try bundle.open(with: lee, verifyingAgainst: fixture.roster) } == .wrongRecipient)
        #expect(fixture.owner.wrapBundle([:], for: samRecord, in: fixture.space) == nil)
    }

    @Test func aServerThatSplicesDropsSwapsReplaysOrReordersIsRefused() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let (lee, leeRecord) = try fixture.addMember(name: "Lee")
        let (bundle, _) = Self.bundle(fixture, for: samRecord)
        let (other, _) = Self.bundle(fixture, for: samRecord)
        let open = { (b: KeyWrapBundle, who: DeviceIdentity) in
            errorCode { _ = try b.open(with: who, verifyingAgainst: fixture.roster) }
        }
        // A thread's box from another bundle to the same member, in place of one of this one's.
        var spliced = bundle.entries
        spliced[1] = try KeyWrapBundle.Entry(
            thread: spliced[1].thread, nonce: other.entries[0].nonce, sealed: other.entries[0].sealed)
        #expect(open(try Self.altered(bundle, entries: spliced), sam) == .badSignature)
        // One thread left out.
        #expect(
            open(try Self.altered(bundle, entries: Array(bundle.entries.dropLast())), sam) == .badSignature)
        // Another bundle's ephemeral key.
        #expect(open(try Self.altered(bundle, ephemeral: other.ephemeral), sam) == .badSignature)
        // Sam's bundle handed to Lee: as it is, and readdressed to Lee.
        #expect(open(bundle, lee) == .wrongRecipient)
        #expect(open(try Self.altered(bundle, recipient: leeRecord.id), lee) == .badSignature)
        // Threads re-ordered: refused as it is assembled (and decoded).
        #expect(
            errorCode { _ = try Self.altered(bundle, entries: Array(bundle.entries.reversed())) }
                == .invalidEncoding)
        var json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(bundle)) as! [String: Any]
        json["entries"] = Array((json["entries"] as! [Any]).reversed())
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(KeyWrapBundle.self, from: JSONSerialization.data(withJSONObject: json))
        }
        // A thread twice.
        #expect(
            errorCode { _ = try Self.altered(bundle, entries: [bundle.entries[0], bundle.entries[0]]) }
                == .invalidEncoding)
        // Untouched, it opens.
        #expect(open(bundle, sam) == nil)
    }

    @Test func aMemberThatDeviatesIsRefused() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let (eve, eveRecord) = try fixture.addMember(name: "Eve")
        let (bundle, _) = Self.bundle(fixture, for: samRecord)
        // A box spliced in from another bundle, re-signed by a member: the box is bound to its
        // own bundle key and ephemeral key, so it does not open.
        let (other, _) = Self.bundle(fixture, for: samRecord)
        var entries = bundle.entries
        entries[0] = try KeyWrapBundle.Entry(
            thread: entries[0].thread, nonce: other.entries[0].nonce, sealed: other.entries[0].sealed)
        let resigned = try KeyWrapBundle(
            space: bundle.space, recipient: bundle.recipient, signer: bundle.signer,
            ephemeral: bundle.ephemeral,
            entries: entries,
            signature: resign(
                fixture.owner,
                KeyWrapBundle.signedBytes(
                    space: bundle.space, recipient: bundle.recipient, ephemeral: bundle.ephemeral,
                    entries: entries)))
        #expect(
            errorCode { _ = try resigned.open(with: sam, verifyingAgainst: fixture.roster) }
                == .decryptionFailed)
        // A signer that picks a small-order ephemeral point (every shared secret zero).
        for point in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            let forged = try KeyWrapBundle(
                space: bundle.space, recipient: bundle.recipient, signer: bundle.signer, ephemeral: point,
                entries: bundle.entries,
                signature: resign(
                    fixture.owner,
                    KeyWrapBundle.signedBytes(
                        space: bundle.space, recipient: bundle.recipient, ephemeral: point,
                        entries: bundle.entries)))
            #expect(
                errorCode { _ = try forged.open(with: sam, verifyingAgainst: fixture.roster) }
                    == .invalidPublicKey)
        }
        // A bundle from a member who was removed since, and from someone who never was one.
        let (fromEve, _) = Self.bundle(fixture, for: samRecord, by: eve)
        #expect(try fromEve.open(with: sam, verifyingAgainst: fixture.roster).count == 3)
        try fixture.remove(eveRecord.id)
        #expect(
            errorCode { _ = try fromEve.open(with: sam, verifyingAgainst: fixture.roster) }
                == .signerNotMember)
        let (fromStranger, _) = Self.bundle(fixture, for: samRecord, by: .generate())
        #expect(
            errorCode { _ = try fromStranger.open(with: sam, verifyingAgainst: fixture.roster) }
                == .signerNotMember)
        // Another space's bundle.
        let elsewhere = fixture.owner.wrapBundle([.random(): .random()], for: samRecord, in: .random())!
        #expect(
            errorCode { _ = try elsewhere.open(with: sam, verifyingAgainst: fixture.roster) } == .wrongContext
        )
    }

    /// The same attacks on single wraps: what the old format refused, and what it could not see.
    @Test func oldFormatAgainstTheSameAttacks() throws {
        var fixture = try SpaceFixture()
        let (sam, samRecord) = try fixture.addMember(name: "Sam")
        let (lee, leeRecord) = try fixture.addMember(name: "Lee")
        let keys = (0..<3).map { _ in (ThreadID.random(), ThreadKey.random()) }
        let wraps = keys.map { fixture.owner.wrap($0.1, for: samRecord, in: fixture.space, thread: $0.0) }
        let other = fixture.owner.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        func openAll(_ list: [KeyWrap], _ who: DeviceIdentity) -> (KeyModelError.Code?, Int) {
            var opened = 0
            let code = errorCode {
                for wrap in list {
                    _ = try wrap.open(with: who, verifyingAgainst: fixture.roster)
                    opened += 1
                }
            }
            return (code, opened)
        }
        func with(_ w: KeyWrap, recipient: MemberID? = nil, sealed: [UInt8]? = nil) throws -> KeyWrap {
            try KeyWrap(
                space: w.space, thread: w.thread, recipient: recipient ?? w.recipient, signer: w.signer,
                sealed: sealed ?? w.sealed, signature: w.signature)
        }
        var spliced = wraps
        spliced[1] = try with(wraps[1], sealed: other.sealed)
        #expect(openAll(spliced, sam).0 == .badSignature, "splice: refused")
        // Dropping a thread: the others open, and nothing says one is missing.
        #expect(openAll(Array(wraps.dropLast()), sam) == (nil, 2), "drop: not noticed")
        // The ephemeral key is the sealed box's first 32 bytes.
        var swapped = wraps
        swapped[0] = try with(
            wraps[0], sealed: Array(other.sealed.prefix(32) + wraps[0].sealed.dropFirst(32)))
        #expect(openAll(swapped, sam).0 == .badSignature, "swapped ephemeral key: refused")
        #expect(openAll(wraps, lee).0 == .wrongRecipient, "replay to another member: refused")
        #expect(openAll([try with(wraps[0], recipient: leeRecord.id)], lee).0 == .badSignature)
        // Re-ordered: each wrap stands alone, so any order opens.
        #expect(openAll(wraps.reversed(), sam) == (nil, 3), "re-order: not noticed")
        let (eve, eveRecord) = try fixture.addMember(name: "Eve")
        let fromEve = eve.wrap(.random(), for: samRecord, in: fixture.space, thread: .random())
        try fixture.remove(eveRecord.id)
        #expect(openAll([fromEve], sam).0 == .signerNotMember, "removed member's wrap: refused")
    }
}
