import ClientCore
import Foundation
import PAKE
import SpaceModel
import Testing

private func space(_ name: String, id: SpaceID = .random()) -> SavedSpace {
    SavedSpace(
        space: id, name: name, server: "http://127.0.0.1:1", member: .random(), ownerSigningKey: "k",
        deviceToken: "token-\(name)")
}

/// The property test's generator: PAKE's seeded byte stream, eight bytes at a time.
private struct Seeded: RandomNumberGenerator {
    var source: SeededRandom
    init(state: UInt64) { source = SeededRandom(seed: state) }
    mutating func next() -> UInt64 { source.bytes(count: 8).reduce(0) { $0 << 8 | UInt64($1) } }
}

@Suite struct VaultDocumentTests {
    /// Found by `FuzzPeerMessages`: a vault naming one space twice crashed the merge.
    @Test func aVaultNamingASpaceTwiceIsRefusedAsCorrupt() throws {
        let id = "AAAAAAAAAAAAAAAAAAAAAA"
        let entry = { (counter: Int) in
            #"{"space":"\#(id)","clock":{"counter":\#(counter),"device":"d"},"position":1}"#
        }
        let twice = #"{"version":1,"entries":[\#(entry(3)),\#(entry(4))],"devices":[]}"#
        #expect(throws: LocalStateError.self) { try VaultDocument(decoding: Array(twice.utf8)) }
        let once = #"{"version":1,"entries":[\#(entry(3))],"devices":[]}"#
        let document = try VaultDocument(decoding: Array(once.utf8))
        #expect(document.merged(with: document) == document)
    }

    @Test func concurrentEditsOfDifferentSpacesBothSurvive() {
        var base = VaultDocument()
        let family = space("Family")
        let work = space("Work")
        base.absorb([family, work], device: "a")
        var a = base
        var b = base
        var starred = family
        starred.starred = true
        a.absorb([starred, work], device: "a")
        b.absorb([family], device: "b")  // B left Work
        let ab = a.merged(with: b)
        let ba = b.merged(with: a)
        #expect(ab == ba)
        #expect(ab.spaces == [starred])
        // Merging again changes nothing.
        #expect(ab.merged(with: a) == ab)
        #expect(ab.merged(with: b) == ab)
    }

    @Test func aRemovalIsNotUndoneByADeviceThatNeverHeardOfIt() {
        var a = VaultDocument()
        let family = space("Family")
        a.absorb([family], device: "a")
        let stale = a
        a.absorb([], device: "a")
        #expect(a.merged(with: stale).spaces.isEmpty)
        // Joining again later wins over the tombstone.
        var back = family
        back.deviceToken = "new"
        a.absorb([back], device: "a")
        #expect(a.merged(with: stale).spaces == [back])
    }

    @Test func moveChangesOnlyTheMovedEntry() {
        var doc = VaultDocument()
        let spaces = ["A", "B", "C", "D"].map { space($0) }
        doc.absorb(spaces, device: "x")
        let before = doc
        let first = doc.move(spaces[3].space, to: 0, device: "x")
        #expect(first)
        #expect(doc.spaces.map(\.name) == ["D", "A", "B", "C"])
        let second = doc.move(spaces[0].space, to: 2, device: "x")
        #expect(second)
        #expect(doc.spaces.map(\.name) == ["D", "B", "A", "C"])
        let unknown = doc.move(.random(), to: 0, device: "x")
        #expect(!unknown)
        let changed = zip(before.entries, doc.entries).filter { $0.0 != $0.1 }.map(\.0.saved?.name)
        #expect(Set(changed) == ["A", "D"])
    }

    /// Two replicas edit at random (add, change, remove, move); merging in either order gives the
    /// same document, and every space last edited on one side shows that side's edit.
    @Test(arguments: 0..<200) func mergeIsOrderFreeAndKeepsTheLatestEdit(seed: Int) {
        var random = Seeded(state: UInt64(seed))
        let pool = (0..<6).map { space("S\($0)", id: SpaceID.random()) }
        var base = VaultDocument()
        base.absorb(Array(pool.prefix(3)), device: "base")
        var replicas = [base, base]
        var lists = [Array(pool.prefix(3)), Array(pool.prefix(3))]
        for _ in 0..<Int.random(in: 1...8, using: &random) {
            let side = Int.random(in: 0...1, using: &random)
            let device = side == 0 ? "a" : "b"
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                let pick = pool.randomElement(using: &random)!
                if !lists[side].contains(where: { $0.space == pick.space }) { lists[side].append(pick) }
            case 1:
                if !lists[side].isEmpty {
                    let index = Int.random(in: 0..<lists[side].count, using: &random)
                    lists[side][index].deviceToken = "t\(random.next())"
                }
            case 2:
                if !lists[side].isEmpty {
                    lists[side].remove(at: Int.random(in: 0..<lists[side].count, using: &random))
                }
            default:
                if let pick = lists[side].randomElement(using: &random) {
                    replicas[side].absorb(lists[side], device: device)
                    replicas[side].move(pick.space, to: Int.random(in: 0...5, using: &random), device: device)
                }
            }
            replicas[side].absorb(lists[side], device: device)
        }
        let ab = replicas[0].merged(with: replicas[1])
        let ba = replicas[1].merged(with: replicas[0])
        #expect(ab == ba)
        #expect(ab.merged(with: ab) == ab)
        for entry in ab.entries {
            let a = replicas[0].entries.first { $0.space == entry.space }
            let b = replicas[1].entries.first { $0.space == entry.space }
            #expect(entry == a || entry == b)
            #expect(entry.clock >= (a?.clock ?? entry.clock) && entry.clock >= (b?.clock ?? entry.clock))
        }
    }

    @Test func decodingRefusesNewerAndDamagedVaults() throws {
        var doc = VaultDocument()
        doc.absorb([space("Family")], device: "a")
        #expect(try VaultDocument(decoding: doc.encoded()) == doc)
        #expect(throws: LocalStateError.self) { try VaultDocument(decoding: Array(#"{"version":3}"#.utf8)) }
        #expect(throws: LocalStateError.self) { try VaultDocument(decoding: Array("nope".utf8)) }
    }
}

@Suite struct VaultKeyTests {
    @Test func sealOpenWrapUnwrap() throws {
        let key = VaultKey.random(generation: 3)
        let sealed = key.seal(Array("spaces".utf8))
        #expect(VaultKey.generation(of: sealed) == 3)
        #expect(try key.open(sealed) == Array("spaces".utf8))
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: KeyModelError.self) { try key.open(tampered) }
        #expect(throws: KeyModelError.self) { try VaultKey.random(generation: 3).open(sealed) }
        #expect(throws: KeyModelError.self) { try VaultKey.random(generation: 4).open(sealed) }
        #expect(throws: KeyModelError.self) { try key.open([1, 2, 3]) }

        let device = DeviceIdentity.generate()
        let wrap = key.wrap(for: device.anchor())
        #expect(wrap.count == VaultKey.wrapByteCount)
        let opened = try device.unwrapVaultKey(wrap)
        #expect(opened == key)
        #expect(opened.generation == 3)
        #expect(throws: KeyModelError.self) { try DeviceIdentity.generate().unwrapVaultKey(wrap) }
        #expect(throws: KeyModelError.self) { try device.unwrapVaultKey(Array(wrap.dropLast())) }
        #expect("\(key)".contains("redacted"))
    }

    @Test func anchorIDsAreBlindIndexesOfTheAccount() {
        let device = DeviceIdentity.generate().anchor()
        let account = AccountKey.random()
        #expect(device.id(accountKey: account) == device.id(accountKey: account))
        #expect(device.id(accountKey: account) != device.id(accountKey: .random()))
        #expect(
            AnchorKeys(kind: .recovery, publicKeys: device.publicKeys).id(accountKey: account)
                != device.id(accountKey: account))
        #expect("\(account)" == "AccountKey(redacted)")
    }

    @Test func proofsBindPurposePayloadAndKey() throws {
        let device = DeviceIdentity.generate()
        let anchor = device.anchor().id(accountKey: .random())
        let proof = device.homeProof(.session, anchor: anchor, payload: [1], now: 100)
        try proof.verify(.session, payload: [1], signingKey: device.publicKeys.signing)
        #expect(throws: KeyModelError.self) {
            try proof.verify(.createAccount, payload: [1], signingKey: device.publicKeys.signing)
        }
        #expect(throws: KeyModelError.self) {
            try proof.verify(.session, payload: [2], signingKey: device.publicKeys.signing)
        }
        #expect(throws: KeyModelError.self) {
            try proof.verify(.session, payload: [1], signingKey: DeviceIdentity.generate().publicKeys.signing)
        }
        let decoded = try JSONDecoder().decode(HomeProof.self, from: JSONEncoder().encode(proof))
        #expect(decoded == proof)
    }
}
