import ClientCore
import Foundation
import SQLite
import SpaceModel
import Testing

@testable import SpaceServer

/// Wrap bundles on a space server with a real SQLite file: a schema-9 file's single wraps stay
/// readable after migration 10; a bundle is checked when posted; and a server that rewrites its
/// database to splice, drop, swap or replay a bundle's parts hands out something the member
/// refuses. Each attack runs on single wraps too, to show what the old format refused.
@Suite struct WrapBundleStorageTests {
    /// A space of Paul, Sam (who holds single wraps of three threads, as before bundles) and two
    /// joiners given those threads' keys in one bundle each.
    private struct Scene {
        let harness: APIHarness
        var space: TestSpace
        let sam: TestMember
        let joiners: [TestMember]
        let keys: [(ThreadID, ThreadKey)]

        init() throws {
            let harness = try APIHarness()
            var space = try TestSpace.create(harness)
            let sam = try space.add("Sam")
            let owner = space.owner
            keys = try (0..<3).map { _ in try space.createThread(by: owner, for: [owner, sam]) }
            joiners = [try space.add("Ann"), try space.add("Lee")]
            (self.harness, self.space, self.sam) = (harness, space, sam)
            for joiner in joiners { try post([bundle(for: joiner)], by: space.owner) }
        }

        func bundle(for member: TestMember, by signer: TestMember? = nil) -> KeyWrapBundle {
            (signer ?? space.owner).identity.wrapBundle(
                Dictionary(uniqueKeysWithValues: keys.map { ($0.0, $0.1) }), for: member.record,
                in: space.space)!
        }

        @discardableResult
        func post(_ bundles: [KeyWrapBundle], by sender: TestMember, status: Int = 201) throws -> Reply {
            let reply = try harness.send(
                "POST", "\(space.base)/wraps", token: sender.token,
                json: ["wraps": [String](), "bundles": bundles])
            #expect(reply.status == status, "\(reply.json)")
            return reply
        }

        /// What `member` fetches: its single wraps and bundles.
        func fetch(_ member: TestMember) throws -> SpaceWire.WrapList {
            let reply = try harness.send("GET", "\(space.base)/wraps", token: member.token)
            #expect(reply.status == 200, "\(reply.json)")
            return try JSONDecoder().decode(SpaceWire.WrapList.self, from: Data(reply.raw.body))
        }

        /// The keys `member` opens from what it fetches, or the first error's code.
        func open(_ member: TestMember) throws -> Result<[ThreadID: ThreadKey], KeyModelError> {
            let list = try fetch(member)
            var keys: [ThreadID: ThreadKey] = [:]
            do throws(KeyModelError) {
                for wrap in list.wraps {
                    keys[wrap.thread] = try wrap.open(with: member.identity, verifyingAgainst: space.roster)
                }
                for bundle in list.bundles ?? [] {
                    keys.merge(try bundle.open(with: member.identity, verifyingAgainst: space.roster)) { $1 }
                }
            } catch {
                return .failure(error)
            }
            return .success(keys)
        }

        func sql(_ text: String) throws {
            let db = try SQLiteDatabase(path: harness.databasePath)
            defer { db.close() }
            try db.execute(text)
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        "X'" + bytes.map { String(format: "%02x", $0) }.joined() + "'"
    }

    @Test("a schema-9 database's single wraps still open after migration 10, beside new bundles")
    func schema9WrapsStayReadable() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let sam = try space.add("Sam")
        let owner = space.owner
        let keys = try (0..<3).map { _ in try space.createThread(by: owner, for: [owner, sam]) }
        try space.post("from before", by: owner, thread: keys[0].0, key: keys[0].1)
        // Back to what a schema-9 server left: single wraps only.
        do {
            let db = try SQLiteDatabase(path: harness.databasePath)
            defer { db.close() }
            try db.execute(StorageLayoutTests.undoSchema10 + "PRAGMA user_version=9;")
            #expect(try db.integer("SELECT count(*) FROM wraps") == 6)
        }
        let reopened = try SpaceAPI(databasePath: harness.databasePath)
        #expect(try reopened.schemaVersion() == 10)
        let migrated = try APIHarness(reopening: harness)
        var after = TestSpace(
            harness: migrated, space: space.space, owner: owner, adminToken: space.adminToken,
            roster: space.roster)
        // Sam reads through its old wrap.
        #expect(try after.read(as: sam, thread: keys[0].0) == ["from before"])
        // A joiner gets a bundle; Sam's wraps stay single wraps.
        let ann = try after.add("Ann")
        let bundle = owner.identity.wrapBundle(
            Dictionary(uniqueKeysWithValues: keys.map { ($0.0, $0.1) }), for: ann.record, in: space.space)!
        let reply = try migrated.send(
            "POST", "\(space.base)/wraps", token: owner.token,
            json: ["wraps": [String](), "bundles": [bundle]])
        #expect(reply.status == 201, "\(reply.json)")
        #expect(try after.read(as: ann, thread: keys[0].0) == ["from before"])
        #expect(try after.read(as: sam, thread: keys[0].0) == ["from before"])
        let samsList = try JSONDecoder().decode(
            SpaceWire.WrapList.self,
            from: Data(try migrated.send("GET", "\(space.base)/wraps", token: sam.token).raw.body))
        #expect(samsList.wraps.count == 3 && samsList.bundles == nil)
    }

    @Test("the server checks a bundle when it is posted")
    func postedBundlesAreChecked() throws {
        var scene = try Scene()
        // Again for a member who has the threads' keys already.
        let again = try scene.post([scene.bundle(for: scene.joiners[0])], by: scene.space.owner, status: 409)
        #expect(again.error == "wrap_exists")
        let kim = try scene.space.add("Kim")
        // Signed by someone else than the sender.
        #expect(
            try scene.post([scene.bundle(for: kim)], by: scene.sam, status: 403).error == "signer_mismatch")
        // Altered after signing.
        let b = scene.bundle(for: kim)
        let readdressed = try KeyWrapBundle(
            space: b.space, recipient: scene.sam.id, signer: b.signer, ephemeral: b.ephemeral,
            entries: b.entries,
            signature: b.signature)
        #expect(try scene.post([readdressed], by: scene.space.owner, status: 422).error == "bad_signature")
        // For a thread the space does not have.
        let unknown = scene.space.owner.identity.wrapBundle(
            [.random(): .random()], for: kim.record, in: scene.space.space)!
        #expect(try scene.post([unknown], by: scene.space.owner, status: 404).error == "unknown_thread")
        // A member who holds no key of the thread may not hand it out.
        let mia = try scene.space.add("Mia")
        #expect(
            try scene.post([scene.bundle(for: kim, by: mia)], by: mia, status: 403).error == "not_authorised")
        // Stored whole: Kim opens all three.
        try scene.post([b], by: scene.space.owner)
        #expect(try scene.open(kim).get().count == 3)
    }

    /// The server looks a bundle's threads up together, as one range of thread ids: each thread
    /// named is checked, one between them that the bundle does not name is not, and the first
    /// failing thread decides the error.
    @Test("a bundle's threads are looked up together and checked thread by thread")
    func bundleThreadsAreCheckedTogether() throws {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        let owner = space.owner
        let count = 20
        let keys = try (0..<count).map { _ in try space.createThread(by: owner, for: [owner]) }
            .sorted { $0.0 < $1.0 }
        let (middle, middleKey) = keys[count / 2]
        let sam = try space.add("Sam")
        let kim = try space.add("Kim")
        func bundle(_ keys: [(ThreadID, ThreadKey)], for member: TestMember, by signer: TestMember)
            -> KeyWrapBundle
        {
            signer.identity.wrapBundle(
                Dictionary(uniqueKeysWithValues: keys.map { ($0.0, $0.1) }), for: member.record,
                in: space.space)!
        }
        func post(_ bundle: KeyWrapBundle, by sender: TestMember, status: Int) throws -> String? {
            let reply = try harness.send(
                "POST", "\(space.base)/wraps", token: sender.token,
                json: ["wraps": [String](), "bundles": [bundle]])
            #expect(reply.status == status, "\(reply.json)")
            return reply.error
        }
        func wrap(_ thread: ThreadID, _ key: ThreadKey, to member: TestMember, by sender: TestMember) throws {
            let wrap = sender.identity.wrap(key, for: member.record, in: space.space, thread: thread)
            let reply = try harness.send(
                "POST", "\(space.base)/threads/\(thread)/wraps", token: sender.token, json: ["wraps": [wrap]])
            #expect(reply.status == 201, "\(reply.json)")
        }
        // Sam gets every key but the last thread's, and may not hand that one out.
        #expect(try post(bundle(Array(keys.dropLast()), for: sam, by: owner), by: owner, status: 201) == nil)
        #expect(try post(bundle(keys, for: kim, by: sam), by: sam, status: 403) == "not_authorised")
        // A thread the space does not have, sorting after every other.
        let unknown = try ThreadID(bytes: [UInt8](repeating: 0xff, count: ThreadID.byteCount))
        let withUnknown = keys + [(unknown, ThreadKey.random())]
        #expect(
            try post(bundle(withUnknown, for: kim, by: owner), by: owner, status: 404) == "unknown_thread")
        // Sam lacks the last key and the space the unknown thread: the first in order decides.
        #expect(try post(bundle(withUnknown, for: kim, by: sam), by: sam, status: 403) == "not_authorised")
        // Lee, a member, wraps the middle thread to Kim: a second wrap of it is refused ...
        let lee = try space.add("Lee")
        try wrap(middle, middleKey, to: lee, by: owner)
        try wrap(middle, middleKey, to: kim, by: lee)
        #expect(try post(bundle(keys, for: kim, by: owner), by: owner, status: 409) == "wrap_exists")
        // ... but not in a bundle of the first and last threads, between which it lies.
        let ends = [keys[0], keys[count - 1]]
        #expect(try post(bundle(ends, for: kim, by: owner), by: owner, status: 201) == nil)
        // Once Lee has left, the owner's bundle of the rest replaces Lee's wrap: Kim reads all.
        try space.remove(lee)
        let rest = Array(keys.dropFirst().dropLast())
        #expect(try post(bundle(rest, for: kim, by: owner), by: owner, status: 201) == nil)
        let list = try JSONDecoder().decode(
            SpaceWire.WrapList.self,
            from: Data(try harness.send("GET", "\(space.base)/wraps", token: kim.token).raw.body))
        #expect(list.wraps.isEmpty && list.bundles?.count == 2)
        var opened: [ThreadID: ThreadKey] = [:]
        for bundle in list.bundles ?? [] {
            opened.merge(try bundle.open(with: kim.identity, verifyingAgainst: space.roster)) { $1 }
        }
        #expect(opened == Dictionary(uniqueKeysWithValues: keys.map { ($0.0, $0.1) }))
    }

    enum Attack: String, CaseIterable, Sendable {
        case splice, drop, swapEphemeral, replay, removedSigner
    }

    enum Format: String, CaseIterable, Sendable {
        case single, bundle
    }

    /// The server rewrites its database, then the victim fetches: Ann's bundle (Lee's spliced in
    /// or replayed), or Sam's single wraps as a schema-9 server stored them (Paul's spliced in).
    @Test(arguments: Attack.allCases, Format.allCases)
    func aServerRewritingItsDatabase(attack: Attack, format: Format) throws {
        var scene = try Scene()
        // Whose wraps are attacked, and whose are spliced in or replayed: two joiners' bundles, or
        // Sam's and Paul's single wraps.
        let (ann, lee) =
            format == .bundle ? (scene.joiners[0], scene.joiners[1]) : (scene.sam, scene.space.owner)
        let space = Self.hex(scene.space.space.bytes)
        let annID = Self.hex(ann.id.bytes)
        let leeID = Self.hex(lee.id.bytes)
        let first = Self.hex(scene.keys.map(\.0).sorted()[0].bytes)
        // Not the first thread, whose row carries a bundle's signature: without it the server
        // lists no bundle at all, which any server can do (withhold).
        let last = Self.hex(scene.keys.map(\.0).sorted()[2].bytes)
        let mine = "space_id = \(space) AND recipient = \(annID)"
        switch attack {
        case .splice:
            // One thread's box from Lee's wrap or bundle in place of Ann's.
            try scene.sql(
                """
                UPDATE wraps SET sealed = (SELECT sealed FROM wraps WHERE space_id = \(space)
                    AND recipient = \(leeID) AND thread_id = \(first))
                WHERE \(mine) AND thread_id = \(first);
                """)
        case .drop:
            try scene.sql("DELETE FROM wraps WHERE \(mine) AND thread_id = \(last)")
        case .swapEphemeral:
            if format == .bundle {
                let other = Self.hex(try #require(scene.fetch(lee).bundles?.first).ephemeral)
                try scene.sql("UPDATE wraps SET bundle = \(other) WHERE \(mine)")
            } else {
                // A sealed box begins with its ephemeral key.
                let thread = scene.keys.map(\.0).sorted()[0]
                let theirs = try #require(scene.fetch(lee).wraps.first { $0.thread == thread }).sealed
                let ours = try #require(scene.fetch(ann).wraps.first { $0.thread == thread }).sealed
                let swapped = Self.hex(Array(theirs.prefix(32) + ours.dropFirst(32)))
                try scene.sql("UPDATE wraps SET sealed = \(swapped) WHERE \(mine) AND thread_id = \(first)")
            }
        case .replay:
            // Lee's wrap or bundle served to Ann as hers, in place of her own.
            try scene.sql(
                """
                DELETE FROM wraps WHERE \(mine);
                INSERT INTO wraps SELECT space_id, thread_id, \(annID), signer_key, sealed, signature, created_at,
                    bundle FROM wraps WHERE space_id = \(space) AND recipient = \(leeID);
                """)
        case .removedSigner:
            // Paul's wraps become Mia's, as if Mia wrapped them (same bytes, Mia's key), then Mia
            // is removed: what she handed out no longer counts.
            let mia = try scene.space.add("Mia")
            if format == .bundle {
                try scene.sql("DELETE FROM wraps WHERE \(mine)")
                try scene.post([scene.bundle(for: ann, by: mia)], by: scene.space.owner, status: 403)
                // Mia holds no key yet: Paul hands her the threads, then she wraps to Ann.
                try scene.post([scene.bundle(for: mia)], by: scene.space.owner)
                try scene.post([scene.bundle(for: ann, by: mia)], by: mia)
            } else {
                try scene.sql("DELETE FROM wraps WHERE \(mine)")
                for (thread, key) in scene.keys {
                    let toMia = scene.space.owner.identity.wrap(
                        key, for: mia.record, in: scene.space.space, thread: thread)
                    let toAnn = mia.identity.wrap(key, for: ann.record, in: scene.space.space, thread: thread)
                    for (wrap, sender) in [(toMia, scene.space.owner), (toAnn, mia)] {
                        let reply = try scene.harness.send(
                            "POST", "\(scene.space.base)/threads/\(thread)/wraps", token: sender.token,
                            json: ["wraps": [wrap]])
                        #expect(reply.status == 201, "\(reply.json)")
                    }
                }
            }
            #expect(try scene.open(ann).get().count == 3, "before the removal, Mia's wraps open")
            try scene.space.remove(mia)
        }
        let result = try scene.open(ann)
        let outcome: String =
            switch result {
            case .success(let keys): "accepted \(keys.count) keys"
            case .failure(let error): error.code.rawValue
            }
        print("wrap attack \(attack.rawValue), \(format.rawValue) format: \(outcome)")
        let expected: String =
            switch (attack, format) {
            // Each single wrap stands alone: the others open and nothing says one is gone.
            case (.drop, .single): "accepted 2 keys"
            case (.removedSigner, _): "signer_not_member"
            case (.splice, .single), (.swapEphemeral, .single), (.replay, .single): "bad_signature"
            case (_, .bundle): "bad_signature"
            }
        #expect(outcome == expected)
    }
}
