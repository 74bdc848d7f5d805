import ClientCore
import Foundation
import SQLite
import SpaceModel
import Testing

@testable import SpaceServer

/// What a join writes to the space server's database, b-tree pages each written whole to the WAL:
/// migration 6 keys `wraps` by (space, recipient, thread), so handing a new member the keys of
/// every thread writes a page or two, not one per thread; migration 7 keys device tokens by
/// their member, so a sign-in writes two b-trees for its token, not three; migration 9 makes a
/// sign-in challenge that the server checks by its tag, so asking for one writes nothing.
@Suite struct StorageLayoutTests {
    /// Turns a schema-10 file back into schema 9's tables (no wrap bundles; its wraps must be
    /// single wraps).
    static let undoSchema10 = """
        ALTER TABLE wraps DROP COLUMN bundle;
        """

    /// Turns a schema-10 file back into schema 8's tables (the server's secret goes with them).
    static let undoSchema9 =
        undoSchema10 + """
            DROP TABLE used_sign_in_challenges;
            DROP TABLE server_secrets;
            CREATE TABLE sign_in_challenges (
                challenge_hash BLOB PRIMARY KEY,
                space_id BLOB NOT NULL REFERENCES spaces(id),
                expires_at INTEGER NOT NULL
            ) WITHOUT ROWID;
            INSERT INTO sign_in_challenges VALUES (zeroblob(32), (SELECT id FROM spaces LIMIT 1), 0);
            """

    /// A space with `threads` threads, each wrapped to the owner and `members` other members.
    private static func space(threads: Int, members: Int) throws -> (
        APIHarness, TestSpace, [(ThreadID, ThreadKey)]
    ) {
        let harness = try APIHarness()
        var space = try TestSpace.create(harness)
        var everyone = [space.owner]
        for index in 0..<members { everyone.append(try space.add("Member \(index)")) }
        let keys = try (0..<threads).map { _ in try space.createThread(by: space.owner, for: everyone) }
        return (harness, space, keys)
    }

    /// Single wraps (as before schema 10) or one wrap bundle (what attendants send now).
    @Test(
        "a new member's keys of ten threads are one commit of at most 28 KiB of WAL pages, not a page per thread",
        arguments: [false, true])
    func newMembersWrapsArePagesNotThreads(bundled: Bool) throws {
        // 10 threads of 31 members: about 80 KB of wraps, some twenty b-tree leaves.
        let (harness, spaceBefore, keys) = try Self.space(threads: 10, members: 30)
        var space = spaceBefore
        let joiner = try space.add("Joiner")
        let reader = try SQLiteDatabase(path: harness.databasePath)
        defer { reader.close() }
        try reader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(try walFrames(harness.databasePath, reader) == 0, "the checkpoint emptied the WAL")

        let identity = space.owner.identity
        let body: [String: Any] =
            if bundled {
                [
                    "wraps": [String](),
                    "bundles": [
                        try #require(
                            identity.wrapBundle(
                                Dictionary(uniqueKeysWithValues: keys.map { ($0.0, $0.1) }),
                                for: joiner.record,
                                in: space.space))
                    ],
                ]
            } else {
                [
                    "wraps": keys.map { thread, key in
                        identity.wrap(key, for: joiner.record, in: space.space, thread: thread)
                    }
                ]
            }
        let reply = try harness.send("POST", "\(space.base)/wraps", token: space.owner.token, json: body)
        #expect(reply.status == 201, "\(reply.json)")
        // Keyed by thread first (schema 5) this commit wrote 20 pages of 4 KiB (80 KiB): a leaf
        // per thread, the recipient index's leaf and their parents. Now the wraps are neighbours;
        // with 4 KiB pages they landed on one leaf, balanced with its neighbours when full: at
        // most three leaves, a new one, their parent and the file's header page (7 pages, 28
        // KiB). With 1 KiB pages they span a few leaves, each balanced likewise (8 to 21 pages of
        // 1 KiB in repeated runs). A bundle's rows are the same neighbours, its signature in the
        // first: nothing is written elsewhere.
        let bytes = try walFrames(harness.databasePath, reader) * reader.integer("PRAGMA page_size")
        #expect(bytes > 0 && bytes <= 7 * 4096, "\(bytes) bytes of WAL pages for one member's wraps")
        #expect(try walTrees(harness.databasePath, reader).subtracting(["wraps", "sqlite_schema"]).isEmpty)
        #expect(try space.read(as: joiner, thread: keys[9].0) == [])
    }

    @Test(
        "a schema-5 database of 4 KiB pages keeps its wraps, tokens and page size through migrations 6 to 10")
    func migrationKeepsWrapsAndTokens() throws {
        let (harness, spaceBefore, keys) = try Self.space(threads: 3, members: 4)
        var space = spaceBefore
        let sam = try space.add("Sam")
        try space.post("hello", by: space.owner, thread: keys[1].0, key: keys[1].1)
        let before = try harness.dump()
        let oldPath = harness.directory.appendingPathComponent("old.sqlite").path
        #expect(before["wraps"]?.count == 15)
        #expect(before["device_tokens"]?.count == 6)
        // Turn the file back into what a schema-5 server left behind.
        do {
            let db = try SQLiteDatabase(path: harness.databasePath)
            defer { db.close() }
            try db.execute(Self.undoSchema9)
            try db.execute(
                """
                CREATE TABLE wraps_v1 (
                    space_id BLOB NOT NULL, thread_id BLOB NOT NULL, recipient BLOB NOT NULL,
                    signer_key BLOB NOT NULL, sealed BLOB NOT NULL, signature BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (space_id, thread_id, recipient),
                    FOREIGN KEY (space_id, thread_id) REFERENCES threads(space_id, thread_id)
                ) WITHOUT ROWID;
                INSERT INTO wraps_v1 SELECT * FROM wraps;
                DROP TABLE wraps;
                ALTER TABLE wraps_v1 RENAME TO wraps;
                CREATE INDEX wraps_recipient ON wraps(space_id, recipient);
                CREATE TABLE device_tokens_v1 (
                    id BLOB PRIMARY KEY, token_hash BLOB NOT NULL UNIQUE, space_id BLOB NOT NULL,
                    member_id BLOB NOT NULL, label TEXT NOT NULL, created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL, revoked_at INTEGER,
                    FOREIGN KEY (space_id, member_id) REFERENCES members(space_id, member_id)
                ) WITHOUT ROWID;
                INSERT INTO device_tokens_v1 SELECT * FROM device_tokens;
                DROP TABLE device_tokens;
                ALTER TABLE device_tokens_v1 RENAME TO device_tokens;
                CREATE INDEX device_tokens_member ON device_tokens(space_id, member_id);
                ALTER TABLE key_invites DROP COLUMN sealed_names;
                PRAGMA user_version=5;
                """)
            #expect(try db.integer("SELECT count(*) FROM sqlite_schema WHERE type = 'index'") >= 2)
            // Earlier servers made files of SQLite's default 4 KiB pages.
            #expect(try db.integer("PRAGMA page_size") == Int64(SpaceSchema.pageSize))
            try db.execute("PRAGMA page_size=4096; VACUUM INTO '\(oldPath)'")
        }
        let reopened = try SpaceAPI(databasePath: oldPath)
        #expect(try reopened.schemaVersion() == 10)
        #expect(try reopened.dumpTables() == before)
        let check = try SQLiteDatabase(path: oldPath)
        #expect(try check.integer("PRAGMA page_size") == 4096, "an existing file keeps its page size")
        defer { check.close() }
        #expect(
            try check.integer(
                """
                SELECT count(*) FROM sqlite_schema
                WHERE name IN ('wraps_recipient', 'device_tokens_member', 'sign_in_challenges')
                """
            ) == 0)
        func send(_ method: String, _ target: String, token: String) -> APIResponse {
            reopened.handle(
                APIRequest(method: method, target: target, headers: ["Authorization": "Bearer \(token)"]))
        }
        // Every member still finds and opens its wrap through the migrated server.
        let reply = send("GET", "\(space.base)/threads/\(keys[1].0)/wraps", token: space.owner.token)
        #expect(reply.status == 200)
        let list = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
        let wraps = try JSONDecoder().decode(
            [KeyWrap].self, from: JSONSerialization.data(withJSONObject: list?["wraps"] ?? []))
        #expect(
            try wraps.first?.open(with: space.owner.identity, verifyingAgainst: space.roster) == keys[1].1)
        // Tokens: each still signs its member in; a member revokes only their own, the operator any.
        let tokens = try #require(before["device_tokens"])
        let samsID = try #require(tokens.first { $0[3].blob == sam.id.bytes }?[0].blob)
        let ownersID = try #require(tokens.first { $0[3].blob == space.owner.id.bytes }?[0].blob)
        #expect(
            send("DELETE", "\(space.base)/tokens/\(Base64URL.encode(ownersID))", token: sam.token).status
                == 404)
        #expect(send("GET", "\(space.base)/threads", token: space.owner.token).status == 200)
        #expect(
            send("DELETE", "\(space.base)/tokens/\(Base64URL.encode(samsID))", token: space.adminToken).status
                == 200)
        #expect(send("GET", "\(space.base)/threads", token: sam.token).status == 401)
    }

    @Test(
        "a new database has 1 KiB pages, checkpointed every 4000 WAL frames (4 MiB, as 1000 of 4 KiB), and a 32 MiB page cache"
    )
    func newFilePageSizeAndCheckpoints() throws {
        let harness = try APIHarness()
        let db = try SQLiteDatabase(path: harness.databasePath)
        defer { db.close() }
        #expect(try db.integer("PRAGMA page_size") == 1024)
        // The cache is the connection's own: a plain connection keeps SQLite's default.
        #expect(try db.integer("PRAGMA cache_size") == -2000)
        let store = try SpaceStore(path: harness.databasePath)
        #expect(try store.db.integer("PRAGMA wal_autocheckpoint") == 4000)
        #expect(try store.db.integer("PRAGMA cache_size") == -32768)
    }

    @Test("asking for a sign-in challenge writes nothing")
    func challengeWritesNothing() throws {
        let (harness, spaceBefore, _) = try Self.space(threads: 0, members: 2)
        var space = spaceBefore
        let sam = try space.add("Sam")
        let reader = try SQLiteDatabase(path: harness.databasePath)
        defer { reader.close() }
        try reader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for _ in 0..<3 {
            let challenge = try harness.send(
                "POST", "\(space.base)/sign-in/challenge", json: ["member": sam.id])
            #expect(challenge.status == 201, "\(challenge.json)")
        }
        #expect(try walFrames(harness.databasePath, reader) == 0)
    }

    @Test("a sign-in writes its token to two b-trees (by member, by hash) and its used challenge")
    func signInTrees() throws {
        let (harness, spaceBefore, _) = try Self.space(threads: 0, members: 200)
        var space = spaceBefore
        let sam = try space.add("Sam")
        let challenge = try harness.send("POST", "\(space.base)/sign-in/challenge", json: ["member": sam.id])
        let proof = try sam.identity.signIn(
            to: space.space, as: sam.id,
            challenge: try #require(Base64URL.decode(challenge.string("challenge"))))
        let reader = try SQLiteDatabase(path: harness.databasePath)
        defer { reader.close() }
        try reader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let signIn = try harness.send(
            "POST", "\(space.base)/sign-in", json: ["proof": proof, "label": "phone"])
        #expect(signIn.status == 201, "\(signIn.json)")
        // Schema 6 also wrote the index by member (device_tokens_member).
        let trees = try walTrees(harness.databasePath, reader).subtracting(["sqlite_schema"])
        #expect(trees == ["device_tokens", "sqlite_autoindex_device_tokens_1", "used_sign_in_challenges"])
        #expect(try harness.send("GET", "\(space.base)/threads", token: signIn.string("token")).status == 200)
    }

    /// Pages in the WAL now (a 32-byte header, then a 24-byte header and a page per frame).
    /// The b-trees (tables and indexes, `sqlite_schema` for the file's first page) whose pages
    /// the WAL holds now.
    private func walTrees(_ path: String, _ db: SQLiteDatabase) throws -> Set<String> {
        let wal = Array(FileManager.default.contents(atPath: path + "-wal") ?? Data())
        let pageSize = Int(try db.integer("PRAGMA page_size"))
        var trees: Set<String> = []
        var offset = 32
        while offset + 24 + pageSize <= wal.count {
            let page = wal[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            for row in try db.query("SELECT name FROM dbstat WHERE pageno = ?", [.integer(Int64(page))]) {
                trees.insert(row[0].text ?? "")
            }
            offset += 24 + pageSize
        }
        return trees
    }

    private func walFrames(_ path: String, _ db: SQLiteDatabase) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "-wal")
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let pageSize = try db.integer("PRAGMA page_size")
        return size <= 32 ? 0 : (size - 32) / (pageSize + 24)
    }
}
