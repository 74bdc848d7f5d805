import Foundation
import TestSupport
import Testing

@testable import ClientCore
@testable import SpaceModel

/// The remembered chains (`roster-<space>.sealed`) in a real state directory: what one command
/// saves the next reads back; concurrent commands keep the longest chain and lose nothing; two
/// histories are told apart; a file that does not open is not used.
@Suite struct VerifiedChainStoreTests {
    static func store() throws -> VerifiedChainStore {
        VerifiedChainStore(directory: StateDirectory(path: try TestSupport.temporaryDirectory().path))
    }

    @Test func aSavedChainReadsBackAsSaved() throws {
        var fixture = try SpaceFixture()
        for name in ["Ann", "Lee"] { _ = try fixture.addMember(name: name) }
        let store = try Self.store()
        let key = fixture.owner.publicKeys.signing
        #expect(store.load(fixture.space, ownerKey: key) == nil)
        #expect(try store.remember(fixture.events, space: fixture.space, ownerKey: key, over: nil) == nil)
        let loaded = try #require(store.load(fixture.space, ownerKey: key))
        #expect(loaded.events.map(\.hash) == fixture.events.map(\.hash))
        // Bound to the space and its owner: another owner's key or another space opens nothing.
        #expect(store.load(fixture.space, ownerKey: DeviceIdentity.generate().publicKeys.signing) == nil)
        #expect(store.load(.random(), ownerKey: key) == nil)
    }

    /// Two commands that read the file before either saved: the one with the shorter chain
    /// saves last, and the longer chain stays.
    @Test func theLongerOfTwoConcurrentSavesStays() throws {
        var fixture = try SpaceFixture()
        _ = try fixture.addMember(name: "Ann")
        let short = fixture.events
        _ = try fixture.addMember(name: "Lee")
        let store = try Self.store()
        let key = fixture.owner.publicKeys.signing
        _ = try store.remember(Array(short.prefix(1)), space: fixture.space, ownerKey: key, over: nil)
        let read = store.load(fixture.space, ownerKey: key)
        #expect(try store.remember(fixture.events, space: fixture.space, ownerKey: key, over: read) == nil)
        #expect(try store.remember(short, space: fixture.space, ownerKey: key, over: read) == nil)
        #expect(store.load(fixture.space, ownerKey: key)?.events.count == fixture.events.count)
    }

    /// A command served another history than the one a concurrent command saved: nothing is
    /// saved and the sequence where they part is returned.
    @Test func anotherHistorySavedMeanwhileIsAFork() throws {
        var fixture = try SpaceFixture()
        let genesis = fixture.events
        var other = fixture
        _ = try fixture.addMember(name: "Ann")
        _ = try other.addMember(name: "Mallory")
        _ = try other.addMember(name: "Eve")
        let store = try Self.store()
        let key = fixture.owner.publicKeys.signing
        _ = try store.remember(genesis, space: fixture.space, ownerKey: key, over: nil)
        let read = store.load(fixture.space, ownerKey: key)
        _ = try store.remember(fixture.events, space: fixture.space, ownerKey: key, over: read)
        #expect(try store.remember(other.events, space: fixture.space, ownerKey: key, over: read) == 1)
        #expect(store.load(fixture.space, ownerKey: key)?.events.map(\.hash) == fixture.events.map(\.hash))
    }

    /// Any change to the sealed file (a flipped byte, a cut, another file's bytes) and it does
    /// not open: the caller verifies from the start.
    @Test func aDamagedFileIsNotUsed() throws {
        var fixture = try SpaceFixture()
        _ = try fixture.addMember(name: "Ann")
        let store = try Self.store()
        let key = fixture.owner.publicKeys.signing
        _ = try store.remember(fixture.events, space: fixture.space, ownerKey: key, over: nil)
        let path = store.path(fixture.space)
        let good = try #require(FileManager.default.contents(atPath: path))
        var flipped = good
        flipped[flipped.count / 2] ^= 1
        for bad in [flipped, good.prefix(good.count - 1), Data()] {
            try bad.write(to: URL(fileURLWithPath: path))
            #expect(store.load(fixture.space, ownerKey: key) == nil)
        }
        // Saved again over the damaged file.
        let read = store.load(fixture.space, ownerKey: key)
        #expect(try store.remember(fixture.events, space: fixture.space, ownerKey: key, over: read) == nil)
        #expect(store.load(fixture.space, ownerKey: key)?.events.count == 2)
    }
}
