import Foundation
import Mailbox
import SQLite
import Support
import Testing

@testable import Relay

/// A fresh temporary directory, removed by `cleanup()`.
struct TempDir {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("relay-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func cleanup() { try? FileManager.default.removeItem(at: url) }
}

/// The storage back-ends under test: both can wait for their queued commits.
protocol FlushableStorage: RelayStorage {
    func flush()
}

extension SQLiteRelayStorage: FlushableStorage {}
extension PostgresRelayStorage: FlushableStorage {}

extension FlushableStorage {
    /// Queues writes and waits for their commit.
    func commit(_ writes: [StorageOp]) -> RelayStorageError? {
        let result = Locked<RelayStorageError??>(nil)
        enqueue(writes) { error in result.withLock { $0 = .some(error) } }
        flush()
        return result.withLock { $0 } ?? RelayStorageError(.write, "completion did not run")
    }
}

/// Scenarios every storage back-end must pass, given a way to open the same store again.
enum StorageScenarios {
    /// A restarted relay resumes nameplates, mailboxes and queued messages.
    static func restartAndResume(open: () throws -> any FlushableStorage) throws {
        var store = try open()
        var h = CoreHarness()
        h.bound(1, side: "aaaa")
        #expect(store.commit(h.last.writes) == nil)
        let mailbox = h.claim(1, "42")
        #expect(store.commit(h.last.writes) == nil)
        h.send(1, ["type": "open", "mailbox": .string(mailbox.value)])
        #expect(store.commit(h.last.writes) == nil)
        h.send(1, ["type": "add", "phase": "pake", "body": "a1a1", "id": "0001"])
        #expect(store.commit(h.last.writes) == nil)
        let pake = try #require(h.sent(to: 1).last?.stored)
        store.close()

        store = try open()
        let loaded = try store.load()
        #expect(loaded == h.core.state)
        var resumed = CoreHarness(snapshot: loaded, now: h.now + 60)
        resumed.bound(2, side: "bbbb")
        #expect(resumed.claim(2, "42") == mailbox, "the nameplate survived")
        #expect(
            resumed.send(2, ["type": "open", "mailbox": .string(mailbox.value)]) == [
                .ack(id: .null), .message(pake),
            ])
        resumed.bound(3, side: "aaaa")
        #expect(resumed.claim(3, "42") == mailbox, "the first side reclaims idempotently")
        store.close()
    }
}

/// Drives random but valid-looking traffic through a core: several sides binding, claiming,
/// opening, adding, releasing, closing, disconnecting and ticking.
func randomTraffic(_ h: inout CoreHarness, seed: UInt64, steps: Int, onWrites: ([StorageOp]) -> Void) {
    var random = SeededRandom(seed: seed)
    var connection: UInt64 = 100
    var live: [UInt64] = []
    let sides = ["s1", "s2", "s3", "s4"]
    let apps = [testApp, "elevenmessenger.com/join"]
    for _ in 0..<steps {
        h.now += Double(Int.random(in: 0...30, using: &random))
        let roll = Int.random(in: 0..<100, using: &random)
        var output = RelayOutput()
        if live.isEmpty || roll < 12 {
            connection += 1
            live.append(connection)
            h.connect(connection)
            output = h.last
            let side = sides.randomElement(using: &random)!
            let app = apps.randomElement(using: &random)!
            onWrites(output.writes)
            h.send(connection, ["type": "bind", "appid": .string(app), "side": .string(side)])
            output = h.last
        } else if roll < 18 {
            let c = live.remove(at: Int.random(in: 0..<live.count, using: &random))
            h.disconnect(c)
            output = h.last
        } else if roll < 20 {
            output = h.tick(after: 400)
        } else {
            let c = live.randomElement(using: &random)!
            let nameplate = String(Int.random(in: 1...3, using: &random))
            let mailbox =
                h.core.state.mailboxes.keys.map(\.id.value).sorted().randomElement(using: &random) ?? "mx"
            let commands: [String] = [
                #"{"type":"allocate"}"#,
                #"{"type":"claim","nameplate":"\#(nameplate)"}"#,
                #"{"type":"release"}"#,
                #"{"type":"open","mailbox":"\#(mailbox)"}"#,
                #"{"type":"add","phase":"p\#(roll)","body":"\#(String(roll, radix: 16))ab","id":"\#(roll)"}"#,
                #"{"type":"add","phase":"0","body":"","id":{"n":[1,2]}}"#,
                #"{"type":"close","mood":"happy"}"#,
                #"{"type":"close","mailbox":"\#(mailbox)","mood":"scary"}"#,
                #"{"type":"list"}"#,
            ]
            h.send(c, commands.randomElement(using: &random)!)
            output = h.last
        }
        onWrites(output.writes)
    }
}

@Suite("SQLite storage")
struct StorageTests {
    @Test("a new file gets the current schema version; reopening keeps it")
    func schemaVersion() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let store = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        #expect(try store.schemaVersion() == SQLiteRelayStorage.currentSchemaVersion)
        #expect(SQLiteRelayStorage.currentSchemaVersion == 3)
        store.close()
        let again = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        #expect(try again.schemaVersion() == 3)
        #expect(try again.load() == .empty)
        again.close()
    }

    @Test("a file from schema 1 keeps its queued messages, in order, through the migration")
    func migrationKeepsMessages() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let first = MailboxKey(app: "a", id: "m1")
        let second = MailboxKey(app: "a", id: "m2")
        func message(_ phase: String, _ at: Double) -> StoredMessage {
            StoredMessage(
                side: "s", phase: Phase(phase), body: "ab\(phase)",
                serverRX: RelayInstant(secondsSince1970: at),
                messageID: phase == "p1" ? .object(JSONObject(["n": "1"])) : .null)
        }
        // Two mailboxes whose messages were added interleaved, so each one's order is not the
        // table's: written as a relay at schema 1 wrote them (its migration, its insert).
        var writes: [StorageOp] = [
            .putMailbox(first, forNameplate: true, updated: RelayInstant(secondsSince1970: 100)),
            .putMailbox(second, forNameplate: false, updated: RelayInstant(secondsSince1970: 100)),
        ]
        for (index, phase) in ["p0", "q0", "p1", "q1", "p2"].enumerated() {
            writes.append(
                .appendMessage(phase.hasPrefix("p") ? second : first, message(phase, Double(index))))
        }
        let old = try SQLiteDatabase.open(
            path: path,
            schema: DatabaseSchema(
                owner: .relay, tables: RelaySchema.tables, migrations: [RelaySchema.migrations[0]]),
            sync: .full)
        for op in writes {
            switch op {
            case .putMailbox(let key, let forNameplate, let updated):
                try old.query(
                    "INSERT INTO mailboxes (app_id, id, for_nameplate, updated) VALUES (?1, ?2, ?3, ?4)",
                    [
                        .text(key.app.value), .text(key.id.value), .integer(forNameplate ? 1 : 0),
                        .integer(Int64(updated.secondsSince1970)),
                    ])
            case .appendMessage(let key, let m):
                try old.query(
                    "INSERT INTO messages (app_id, mailbox_id, side, phase, body, server_rx, msg_id) "
                        + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    [
                        .text(key.app.value), .text(key.id.value), .text(m.side.value),
                        .text(m.phase.value), .text(m.body), .integer(Int64(m.serverRX.secondsSince1970)),
                        m.messageID == .null ? .null : .text(JSONWriter.string(m.messageID)),
                    ])
            default:
                Issue.record("unexpected \(op)")
            }
        }
        #expect(try old.integer("PRAGMA user_version") == 1)
        old.close()

        // New messages go after the migrated ones.
        try Self.expectMigrated(
            path, writes,
            then: [.appendMessage(first, message("q2", 10)), .appendMessage(second, message("p3", 11))],
            messages: [first: ["q0", "q1", "q2"], second: ["p0", "p1", "p2", "p3"]])
    }

    /// Opens the file at `path`, written at an older schema: it is at the current one and loads
    /// what `writes` made; it takes `more`, and after a restart it loads all of it, each
    /// mailbox's messages (`messages`: their phases) in the order they were added.
    static func expectMigrated(
        _ path: String, _ writes: [StorageOp], then more: [StorageOp], messages: [MailboxKey: [String]]
    ) throws {
        var expected = RelaySnapshot()
        expected.apply(writes)
        let store = try SQLiteRelayStorage(path: path)
        #expect(try store.schemaVersion() == SQLiteRelayStorage.currentSchemaVersion)
        #expect(try store.load() == expected)
        #expect(store.commit(more) == nil)
        expected.apply(more)
        #expect(try store.load() == expected)
        store.close()
        let reopened = try SQLiteRelayStorage(path: path)
        defer { reopened.close() }
        let loaded = try reopened.load()
        #expect(loaded == expected)
        for (key, phases) in messages {
            #expect(loaded.mailboxes[key]?.messages.map(\.phase.value) == phases)
        }
    }

    @Test("a file at schema 2 keeps its nameplates, mailboxes, sides and queued messages, and its page size")
    func migrationFromSchema2() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        func at(_ seconds: Double) -> RelayInstant { RelayInstant(secondsSince1970: seconds) }
        let live = MailboxKey(app: "a", id: "m1")
        let standalone = MailboxKey(app: "b", id: "")
        let nameplate = NameplateKey(app: "a", name: Nameplate("42"))
        let grant = String(repeating: "5a", count: 4975)
        let writes: [StorageOp] = [
            // Recorded activity as the relay keeps it: no older than its newest message.
            .putMailbox(live, forNameplate: true, updated: at(5.5)),
            .putNameplate(nameplate, mailbox: live.id),
            .putNameplateSide(nameplate, "s1", NameplateSideRecord(claimed: true, added: at(1.25))),
            .putNameplateSide(nameplate, "s2", NameplateSideRecord(claimed: false, added: at(2))),
            .putMailboxSide(live, "s1", MailboxSideRecord(opened: true, added: at(1.25))),
            .putMailboxSide(live, "s2", MailboxSideRecord(opened: false, added: at(2), mood: "happy")),
            .appendMessage(
                live, StoredMessage(side: "s1", phase: "pake", body: "a1b2", serverRX: at(3), messageID: "x")),
            .appendMessage(
                live,
                StoredMessage(side: "s2", phase: "grant", body: grant, serverRX: at(4), messageID: .null)),
            .appendMessage(
                live, StoredMessage(side: "s2", phase: "odd", body: "ABC", serverRX: at(5), messageID: .null)),
            .putMailbox(standalone, forNameplate: false, updated: at(7)),
            .putMailboxSide(standalone, "", MailboxSideRecord(opened: true, added: at(6))),
        ]
        // Written as a relay at schema 2 wrote them: its two migrations, its statements.
        let old = try SQLiteDatabase.open(
            path: path,
            schema: DatabaseSchema(
                owner: .relay, tables: RelaySchema.tables, migrations: Array(RelaySchema.migrations[0..<2])),
            sync: .full)
        /// Runs one statement with its values (`Double` binds as REAL, as the relay bound times).
        func run(_ sql: String, _ values: [Any?]) throws {
            let st = try old.statement(sql)
            for (offset, value) in values.enumerated() {
                let index = Int32(offset + 1)
                switch value {
                case let real as Double: st.bind(index, real)
                case let text as String: st.bind(index, text)
                case let flag as Bool: st.bind(index, flag)
                case let number as Int: try st.bind(index, .integer(Int64(number)))
                case let bytes as [UInt8]: try st.bind(index, .blob(bytes))
                default: try st.bind(index, .null)
                }
            }
            try st.step()
        }
        var seq = 0
        for op in writes {
            switch op {
            case .putMailbox(let key, let forNameplate, let updated):
                try run(
                    "INSERT INTO mailboxes (app_id, id, for_nameplate, updated) VALUES (?1, ?2, ?3, ?4)",
                    [key.app.value, key.id.value, forNameplate, updated.secondsSince1970])
            case .putNameplate(let key, let mailbox):
                try run(
                    "INSERT INTO nameplates (app_id, name, mailbox_id) VALUES (?1, ?2, ?3)",
                    [key.app.value, key.name.value, mailbox.value])
            case .putNameplateSide(let key, let side, let record):
                try run(
                    "INSERT INTO nameplate_sides (app_id, name, side, claimed, added) VALUES (?1, ?2, ?3, ?4, ?5)",
                    [
                        key.app.value, key.name.value, side.value, record.claimed,
                        record.added.secondsSince1970,
                    ])
            case .putMailboxSide(let key, let side, let record):
                try run(
                    "INSERT INTO mailbox_sides (app_id, mailbox_id, side, opened, added, mood) "
                        + "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    [
                        key.app.value, key.id.value, side.value, record.opened, record.added.secondsSince1970,
                        record.mood,
                    ])
            case .appendMessage(let key, let m):
                seq += 1
                let body: Any = StoredBody.bytes(m.body) ?? m.body
                try run(
                    "INSERT INTO messages (app_id, mailbox_id, seq, side, phase, body, server_rx, msg_id) "
                        + "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    [
                        key.app.value, key.id.value, seq, m.side.value, m.phase.value, body,
                        m.serverRX.secondsSince1970,
                        m.messageID == .null ? nil : JSONWriter.string(m.messageID),
                    ])
            default:
                Issue.record("unexpected \(op)")
            }
        }
        #expect(try old.integer("PRAGMA user_version") == 2)
        #expect(try old.integer("PRAGMA page_size") == 4096)
        old.close()

        // It keeps working: a message after the migrated ones, a side closes, a nameplate goes.
        try Self.expectMigrated(
            path, writes,
            then: [
                .appendMessage(
                    live,
                    StoredMessage(side: "s1", phase: "ack", body: "00", serverRX: at(8), messageID: .null)),
                .touchMailbox(live, updated: at(8)),
                .putMailboxSide(
                    live, "s1", MailboxSideRecord(opened: false, added: at(1.25), mood: "lonely")),
                .deleteNameplate(nameplate),
            ],
            messages: [live: ["pake", "grant", "odd", "ack"], standalone: []])
        let check = try SQLiteDatabase(path: path)
        defer { check.close() }
        #expect(try check.integer("PRAGMA page_size") == 4096, "an existing file keeps its page size")
        #expect(try check.tableNames() == ["channels", "messages"])
    }

    @Test("adding a message to a mailbox writes one page to the WAL, not one per table and index")
    func oneMessageOnePage() throws {
        #expect(try walPages(adding: String(repeating: "cd", count: 33), mailboxes: 300).wal == 1)
    }

    @Test("a grant-sized hex body is kept as its bytes: half the overflow pages")
    func grantPages() throws {
        // About the size of a join's grant (9,950 hex digits in `eleven-bench bot`). Uppercase
        // hex is kept as text, as every body was before. Secure delete writes each of these
        // pages once more when the mailbox closes.
        let bytes = try walPages(adding: String(repeating: "5a", count: 4975), mailboxes: 3)
        let text = try walPages(adding: String(repeating: "5A", count: 4975), mailboxes: 3)
        #expect(bytes.overflow * 2 <= text.overflow + 1, "\(bytes.overflow) and \(text.overflow)")
        #expect(bytes.wal < text.wal)
    }

    @Test("a touch at the time of a side it opens or a message it adds writes no mailboxes page")
    func touchesRideOnSidesAndMessages() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let key = MailboxKey(app: "a", id: MailboxID("m1"))
        func at(_ seconds: Double) -> RelayInstant { RelayInstant(secondsSince1970: seconds) }
        do {
            let store = try SQLiteRelayStorage(path: path)
            defer { store.close() }
            /// The WAL pages `writes` commits, and the mailbox's `updated` as loaded after.
            func commit(_ writes: [StorageOp]) throws -> (pages: Int64, updated: RelayInstant?) {
                try store.checkpoint()
                #expect(store.commit(writes) == nil)
                return (try walFrames(path), try store.load().mailboxes[key]?.updated)
            }
            _ = try commit([.putMailbox(key, forNameplate: true, updated: at(1))])
            // `open`: the mailbox is touched and the side attached at the same time (schema 2
            // wrote the `mailboxes` page too: 2 pages).
            let opened = try commit([
                .touchMailbox(key, updated: at(2)),
                .putMailboxSide(key, "s", MailboxSideRecord(opened: true, added: at(2))),
            ])
            #expect(opened.pages == 1)
            #expect(opened.updated == at(2))
            // `add`: the message's time.
            let message = StoredMessage(
                side: "s", phase: "pake", body: "ab", serverRX: at(3), messageID: .null)
            let added = try commit([.appendMessage(key, message), .touchMailbox(key, updated: at(3))])
            #expect(added.pages == 1)
            #expect(added.updated == at(3))
            // A touch of its own (the last listener left) is written; so is one at another time
            // than the side beside it, on the same page as the side (schema 2: two pages).
            #expect(try commit([.touchMailbox(key, updated: at(4))]) == (1, at(4)))
            let reopened = try commit([
                .touchMailbox(key, updated: at(6)),
                .putMailboxSide(key, "t", MailboxSideRecord(opened: true, added: at(5))),
            ])
            #expect(reopened.pages == 1)
            #expect(reopened.updated == at(6))
        }
        // A restarted relay loads the same.
        let again = try SQLiteRelayStorage(path: path)
        defer { again.close() }
        #expect(try again.load().mailboxes[key]?.updated == at(6))
    }

    /// The pages one commit adding a message with `body` to one of `mailboxes` mailboxes (each
    /// holding two short messages) writes to the WAL, and the overflow pages `messages` has then.
    private func walPages(adding body: String, mailboxes: Int) throws -> (wal: Int64, overflow: Int64) {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let store = try SQLiteRelayStorage(path: path)
        defer { store.close() }
        let keys = (0..<mailboxes).map { MailboxKey(app: "a", id: MailboxID(String(format: "m%03d", $0))) }
        var writes: [StorageOp] = []
        for (index, key) in keys.enumerated() {
            writes.append(.putMailbox(key, forNameplate: true, updated: RelayInstant(secondsSince1970: 1)))
            for phase in ["pake", "version"] {
                writes.append(
                    .appendMessage(
                        key,
                        StoredMessage(
                            side: "s", phase: Phase(phase), body: String(repeating: "ab", count: 33),
                            serverRX: RelayInstant(secondsSince1970: Double(index)), messageID: .null)))
            }
        }
        #expect(store.commit(writes) == nil)
        try store.checkpoint()
        let reader = try SQLiteDatabase(path: path)
        defer { reader.close() }
        let pageSize = try reader.integer("PRAGMA page_size")
        #expect(try walSize(path) == 0, "the checkpoint emptied the WAL")

        let added = StoredMessage(
            side: "t", phase: "pake", body: body, serverRX: RelayInstant(secondsSince1970: 400),
            messageID: .null)
        let key = keys[mailboxes / 2]
        #expect(store.commit([.appendMessage(key, added)]) == nil)
        #expect(try store.load().mailboxes[key]?.messages.last == added)
        // A WAL is a 32-byte header and, per page a commit changed, a 24-byte frame header and
        // the page.
        let overflow = try reader.integer(
            "SELECT count(*) FROM dbstat WHERE name = 'messages' AND pagetype = 'overflow'")
        return ((try walSize(path) - 32) / (pageSize + 24), overflow)
    }

    @Test(
        "bodies load back exactly as added, lowercase hex kept as its bytes and anything else as text",
        arguments: ["", "0", "00", "a1b2c3", "A1B2", "a1B2", "0g", "ab cd", "é1", "ab\u{0}1"])
    func bodiesRoundTrip(_ body: String) throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let store = try SQLiteRelayStorage(path: path)
        let key = MailboxKey(app: "a", id: "m")
        let writes: [StorageOp] = [
            .putMailbox(key, forNameplate: true, updated: RelayInstant(secondsSince1970: 5)),
            .appendMessage(
                key,
                StoredMessage(
                    side: "s", phase: "p", body: body, serverRX: RelayInstant(secondsSince1970: 1),
                    messageID: .null)),
        ]
        #expect(store.commit(writes) == nil)
        var expected = RelaySnapshot()
        expected.apply(writes)
        #expect(try store.load() == expected)
        store.close()
        let check = try SQLiteDatabase(path: path)
        let kind = try check.query("SELECT typeof(body) FROM messages").first?.first?.text
        let lowercaseHex =
            !body.isEmpty && body.utf8.count % 2 == 0 && body.allSatisfy { "0123456789abcdef".contains($0) }
        #expect(kind == (lowercaseHex ? "blob" : "text"))
        check.close()
    }

    /// The pages in the WAL of the database at `path`: a 32-byte header and, per page a commit
    /// changed, a 24-byte frame header and the page.
    private func walFrames(_ path: String) throws -> Int64 {
        let reader = try SQLiteDatabase(path: path)
        defer { reader.close() }
        let pageSize = try reader.integer("PRAGMA page_size")
        return max(try walSize(path) - 32, 0) / (pageSize + 24)
    }

    @Test("a new file has 1 KiB pages; the claim, release and close of a join write one or two")
    func channelPages() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let store = try SQLiteRelayStorage(path: path)
        defer { store.close() }
        func at(_ seconds: Double) -> RelayInstant { RelayInstant(secondsSince1970: seconds) }
        // 300 joins around the new one, each a nameplate and a mailbox with two sides.
        var writes: [StorageOp] = []
        for index in 0..<300 {
            let nameplate = NameplateKey(app: "a", name: Nameplate("\(1000 + index)"))
            let mailbox = MailboxKey(app: "a", id: MailboxID(String(format: "m%03d", index)))
            writes += [
                .putMailbox(mailbox, forNameplate: true, updated: at(1)),
                .putNameplate(nameplate, mailbox: mailbox.id),
            ]
            for side in ["s1", "s2"] as [Side] {
                writes += [
                    .putNameplateSide(nameplate, side, NameplateSideRecord(claimed: true, added: at(1))),
                    .putMailboxSide(mailbox, side, MailboxSideRecord(opened: true, added: at(1))),
                ]
            }
        }
        // Every other one ended: leaves as a running relay has them, with room (rows inserted
        // in order fill each leaf before the next).
        for index in stride(from: 0, to: 300, by: 2) {
            writes += [
                .deleteNameplate(NameplateKey(app: "a", name: Nameplate("\(1000 + index)"))),
                .deleteMailbox(MailboxKey(app: "a", id: MailboxID(String(format: "m%03d", index)))),
            ]
        }
        #expect(store.commit(writes) == nil)
        let nameplate = NameplateKey(app: "a", name: Nameplate("1150x"))
        let mailbox = MailboxKey(app: "a", id: "m150x")
        var committed = writes
        /// The WAL pages `writes` adds, from an empty WAL.
        func pages(_ writes: [StorageOp]) throws -> Int64 {
            committed += writes
            try store.checkpoint()
            #expect(store.commit(writes) == nil)
            return try walFrames(path)
        }
        let reader = try SQLiteDatabase(path: path)
        #expect(try reader.integer("PRAGMA page_size") == 1024)
        reader.close()
        // A first claim: the nameplate and the mailbox with a side each (schema 2: a leaf of each
        // of four tables).
        #expect(
            try pages([
                .putMailbox(mailbox, forNameplate: true, updated: at(2)),
                .putNameplate(nameplate, mailbox: mailbox.id),
                .putNameplateSide(nameplate, "s1", NameplateSideRecord(claimed: true, added: at(2))),
                .putMailboxSide(mailbox, "s1", MailboxSideRecord(opened: true, added: at(2))),
            ]) <= 2)
        // The second side's claim, then each side's release and close: the nameplate's leaf or
        // the mailbox's.
        #expect(
            try pages([
                .putNameplateSide(nameplate, "s2", NameplateSideRecord(claimed: true, added: at(3))),
                .touchMailbox(mailbox, updated: at(3)),
                .putMailboxSide(mailbox, "s2", MailboxSideRecord(opened: true, added: at(3))),
            ]) <= 2)
        #expect(
            try pages([.putNameplateSide(nameplate, "s1", NameplateSideRecord(claimed: false, added: at(2)))])
                == 1)
        #expect(
            try pages([
                .putMailboxSide(mailbox, "s1", MailboxSideRecord(opened: false, added: at(2), mood: "happy"))
            ])
                == 1)
        #expect(try pages([.deleteNameplate(nameplate)]) == 1)
        var expected = RelaySnapshot()
        expected.apply(committed)
        #expect(try store.load() == expected)
        #expect(expected.nameplates[nameplate] == nil)
        #expect(expected.mailboxes[mailbox]?.sides.count == 2)
    }

    private func walSize(_ path: String) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path + "-wal")
        return (attributes[.size] as? NSNumber)?.int64Value ?? -1
    }

    @Test("a file from a newer relay is refused, not damaged")
    func newerSchema() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let db = try SQLiteDatabase(path: dir.path("relay.sqlite"))
        try db.execute("PRAGMA user_version=99")
        db.close()
        #expect(throws: RelayStorageError.self) { try SQLiteRelayStorage(path: dir.path("relay.sqlite")) }
        do {
            _ = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        } catch {
            #expect(error.code == .schemaTooNew)
        }
        let check = try SQLiteDatabase(path: dir.path("relay.sqlite"))
        #expect(try check.integer("PRAGMA user_version") == 99)
    }

    @Test("an unopenable path is a clear error")
    func badPath() {
        #expect(throws: RelayStorageError.self) {
            try SQLiteRelayStorage(path: "/nonexistent-dir-for-relay-test/x/relay.sqlite")
        }
    }

    @Test("random traffic: what SQLite loads back equals the core's state", arguments: [1, 2, 3] as [UInt64])
    func consistency(_ seed: UInt64) throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let store = try SQLiteRelayStorage(
            path: dir.path("relay.sqlite"), options: .init(synchronous: .normal))
        var h = CoreHarness(config: RelayConfig(limits: .unlimited), seed: seed)
        var pending: [StorageOp] = []
        randomTraffic(&h, seed: seed, steps: 300) { pending += $0 }
        #expect(store.commit(pending) == nil)
        #expect(try store.load() == h.core.state)
        // The traffic exercised every kind of write.
        #expect(pending.count > 100)
        for kind in [
            "putNameplate", "putNameplateSide", "deleteNameplate", "putMailbox", "touchMailbox",
            "putMailboxSide", "appendMessage", "deleteMailbox",
        ] {
            #expect(pending.contains { "\($0)".hasPrefix(kind + "(") }, "no \(kind)")
        }
        store.close()
        let reopened = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        #expect(try reopened.load() == h.core.state)
        reopened.close()
    }

    @Test("a restarted relay resumes nameplates, mailboxes and queued messages")
    func restartAndResume() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        try StorageScenarios.restartAndResume { try SQLiteRelayStorage(path: path) }
    }

    @Test("kill safety: committed writes are in the files even if the store is never closed")
    func killSafety() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let store = try SQLiteRelayStorage(path: path)
        var h = CoreHarness()
        var all: [StorageOp] = []
        randomTraffic(&h, seed: 9, steps: 120) { all += $0 }
        #expect(store.commit(all) == nil)

        // What a crash would leave: the database and its WAL as they are now (the shared-memory
        // index is rebuilt on open). Copy them while the store is still open.
        let crash = try TempDir()
        defer { crash.cleanup() }
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(
                atPath: path + suffix, toPath: crash.path("relay.sqlite") + suffix)
        }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "WAL mode")
        let recovered = try SQLiteRelayStorage(path: crash.path("relay.sqlite"))
        #expect(try recovered.load() == h.core.state)
        recovered.close()

        // A second process opening the same file meanwhile sees the same.
        let second = try SQLiteRelayStorage(path: path)
        #expect(try second.load() == h.core.state)
        second.close()
        store.close()
    }

    @Test("group commit: writes queued while the store is busy share one transaction")
    func groupCommit() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let store = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        let key = MailboxKey(app: "a", id: "m")
        let done = Locked(0)
        #expect(
            store.commit([.putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))])
                == nil)
        store.withCommitsPaused {
            for i in 0..<50 {
                let message = StoredMessage(
                    side: "s", phase: Phase("\(i)"), body: "00",
                    serverRX: RelayInstant(secondsSince1970: Double(i)),
                    messageID: .null)
                store.enqueue([.appendMessage(key, message)]) { error in
                    #expect(error == nil)
                    done.withLock { $0 += 1 }
                }
            }
            #expect(done.withLock { $0 } == 0, "nothing is acknowledged before the commit")
        }
        store.flush()
        #expect(done.withLock { $0 } == 50)
        #expect(store.statistics.transactions == 2)
        #expect(store.statistics.batches == 51)
        #expect(try store.load().mailboxes[key]?.messages.map(\.phase.value) == (0..<50).map(String.init))
        store.close()
    }

    @Test(
        "the WAL is copied into the database once it holds 8 MiB, not SQLite's 1,000 pages, and stays bounded"
    )
    func checkpointsAtTheWALBound() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let store = try SQLiteRelayStorage(path: path)
        defer { store.close() }
        let key = MailboxKey(app: "a", id: "m")
        #expect(
            store.commit([.putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))])
                == nil)
        try store.checkpoint()
        let emptyFile = try fileSize(path)
        var seq = 0
        let filler = String(repeating: "5a", count: 1996)
        /// Commits 250 messages of 2,000 bytes (two overflow pages each): about 0.55 MiB of pages.
        func commitMessages() {
            var writes: [StorageOp] = []
            for _ in 0..<250 {
                seq += 1
                writes.append(
                    .appendMessage(
                        key,
                        StoredMessage(
                            side: "s", phase: Phase("\(seq)"), body: String(format: "%08x", seq) + filler,
                            serverRX: RelayInstant(secondsSince1970: Double(seq)), messageID: .null)))
            }
            #expect(store.commit(writes) == nil)
        }
        // About 2.7 MiB of pages: SQLite's automatic checkpoint (1,000 pages) would have copied
        // them into the file; the relay's waits.
        for _ in 0..<5 { commitMessages() }
        #expect(try walSize(path) > 2 << 20)
        #expect(try fileSize(path) == emptyFile, "no checkpoint yet")
        // Past 8 MiB a checkpoint copies them (after the commit that got there), and the next
        // commit starts the WAL over instead of growing it, twice over.
        for _ in 0..<12 { commitMessages() }
        #expect(try fileSize(path) > emptyFile + (6 << 20), "checkpointed")
        for _ in 0..<20 {
            commitMessages()
            #expect(try walSize(path) < (8 << 20) + (1 << 20), "the WAL is reused, not grown")
        }
        #expect(try store.load().mailboxes[key]?.messages.count == seq)
    }

    private func fileSize(_ path: String) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? -1
    }

    /// Commits with `spacing` on a queue of their own: each commit's writes and the time it
    /// started.
    final class SpacedCommits: @unchecked Sendable {
        let queue = DispatchQueue(label: "test.spaced-commits")
        let commits: GroupCommit
        let log = Locked<[(writes: [StorageOp], at: UInt64)]>([])

        /// Each commit takes `commitMicroseconds` (a sync's time).
        let commitMicroseconds: UInt32

        init(spacing: Duration, costFactor: Int? = nil, commitMicroseconds: UInt32 = 0) {
            commits = GroupCommit(queue: queue, spacing: spacing, busyMailboxes: 3, costFactor: costFactor)
            self.commitMicroseconds = commitMicroseconds
        }

        func enqueue(_ writes: [StorageOp], done: DispatchSemaphore) {
            commits.enqueue(
                writes, completion: { _ in done.signal() },
                drain: { [self] in
                    commits.commitPending { writes in
                        log.withLock { $0.append((writes, DispatchTime.now().uptimeNanoseconds)) }
                        if commitMicroseconds > 0 { usleep(commitMicroseconds) }
                    }
                })
        }

        /// One commit touching each of `mailboxes`, waited for.
        func commitTogether(_ mailboxes: [String]) {
            let done = DispatchSemaphore(value: 0)
            queue.suspend()
            for id in mailboxes { enqueue([StorageTests.touch(id)], done: done) }
            queue.resume()
            for _ in mailboxes { done.wait() }
        }

        /// Queues one write for each of `mailboxes` as they come (nothing held back) and waits
        /// for them, at most 30 s each; whether all completed.
        func commitAsTheyCome(_ mailboxes: [String]) -> Bool {
            let done = DispatchSemaphore(value: 0)
            for id in mailboxes { enqueue([StorageTests.touch(id)], done: done) }
            return mailboxes.allSatisfy { _ in done.wait(timeout: .now() + 30) == .success }
        }

        /// How many writes each commit had.
        var counts: [Int] { log.withLock { $0.map(\.writes.count) } }

        /// Nanoseconds from the first commit's start to the second's (0 without a second).
        var secondAfterFirst: UInt64 { log.withLock { $0.count >= 2 ? $0[1].at - $0[0].at : 0 } }
    }

    static func touch(_ id: String) -> StorageOp {
        .touchMailbox(MailboxKey(app: "a", id: MailboxID(id)), updated: RelayInstant(secondsSince1970: 1))
    }

    @Test(
        "after a commit for many mailboxes the next waits its spacing, and what arrives meanwhile shares it")
    func spacingAfterABusyCommit() {
        let spaced = SpacedCommits(spacing: .seconds(2))
        spaced.commitTogether(["m1", "m2", "m3"])
        // The first commit wrote three mailboxes: the next starts two seconds after it, and
        // both of these are in it.
        #expect(spaced.commitAsTheyCome(["m1", "m4"]))
        #expect(spaced.counts == [3, 2])
        #expect(spaced.secondAfterFirst >= 1_900_000_000, "held until the spacing after the busy commit")
    }

    @Test("a commit's mailboxes are counted up to the busy threshold, each once")
    func mailboxCount() {
        let app = AppID("a/b")
        func touch(_ id: String) -> StorageOp {
            .touchMailbox(MailboxKey(app: app, id: MailboxID(id)), updated: RelayInstant(secondsSince1970: 1))
        }
        let nameplate = StorageOp.deleteNameplate(NameplateKey(app: app, name: Nameplate("5")))
        #expect(GroupCommit.mailboxCount([], upTo: 3) == 0)
        #expect(GroupCommit.mailboxCount([nameplate, touch("m1"), touch("m1"), nameplate], upTo: 3) == 1)
        #expect(GroupCommit.mailboxCount([touch("m1"), touch("m2"), touch("m1")], upTo: 3) == 2)
        #expect(GroupCommit.mailboxCount([touch("m1"), touch("m2"), touch("m3"), touch("m4")], upTo: 3) == 3)
        #expect(GroupCommit.mailboxCount([touch("m1"), touch("m2"), touch("m3")], upTo: 9) == 3)
    }

    @Test("with a cost factor the hold is that many times what the busy commit took, within the spacing")
    func spacingScaledToTheCommitsCost() {
        // Commits of 100 ms (a slow sync), held five times that: half a second, not a minute.
        let spaced = SpacedCommits(spacing: .seconds(60), costFactor: 5, commitMicroseconds: 100_000)
        spaced.commitTogether(["m1", "m2", "m3"])
        #expect(spaced.commitAsTheyCome(["m1"]))
        #expect(spaced.counts == [3, 1])
        #expect(spaced.secondAfterFirst >= 450_000_000, "held about five times the 100 ms commit")
    }

    @Test("after a commit for one or two mailboxes the next starts at once")
    func noSpacingAfterAQuietCommit() {
        // A wait would be a minute: the test would fail on its semaphore first.
        let spaced = SpacedCommits(spacing: .seconds(60))
        spaced.commitTogether(["m1", "m2", "m1"])
        #expect(spaced.commitAsTheyCome(["m2"]))
        #expect(spaced.counts == [3, 1])
    }

    @Test("kill safety with held commits: at any moment every acknowledged write is in the files")
    func killSafetyWithHeldCommits() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let path = dir.path("relay.sqlite")
        let store = try SQLiteRelayStorage(path: path)
        defer { store.close() }
        let keys = (0..<6).map { MailboxKey(app: "a", id: MailboxID("m\($0)")) }
        // One commit for six mailboxes: the commits after it are held (a busy relay).
        #expect(
            store.commit(
                keys.map { .putMailbox($0, forNameplate: true, updated: RelayInstant(secondsSince1970: 1)) })
                == nil)
        let acknowledged = Locked<Set<Int>>([])
        for round in 0..<4 {
            for i in 0..<30 {
                let n = round * 30 + i
                let message = StoredMessage(
                    side: "s", phase: Phase("\(n)"), body: "00", serverRX: RelayInstant(secondsSince1970: 2),
                    messageID: .null)
                store.enqueue([.appendMessage(keys[n % keys.count], message)]) { error in
                    if error == nil { acknowledged.withLock { _ = $0.insert(n) } }
                }
            }
            // What a kill -9 now would leave: the files as they are. Whatever was acknowledged
            // before the copy started must be in the copy.
            let acked = acknowledged.withLock { $0 }
            let crash = try TempDir()
            defer { crash.cleanup() }
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
                try FileManager.default.copyItem(
                    atPath: path + suffix, toPath: crash.path("relay.sqlite") + suffix)
            }
            let recovered = try SQLiteRelayStorage(path: crash.path("relay.sqlite"))
            let phases = Set(
                try recovered.load().mailboxes.values.flatMap {
                    $0.messages.map { Int($0.phase.value) ?? -1 }
                })
            recovered.close()
            #expect(
                acked.isSubset(of: phases), "acknowledged but lost: \(acked.subtracting(phases).sorted())")
        }
        store.flush()
        #expect(acknowledged.withLock { $0.count } == 120)
    }

    @Test("writes after close fail instead of vanishing")
    func closed() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let store = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        store.close()
        #expect(store.commit([.deleteMailbox(MailboxKey(app: "a", id: "m"))])?.code == .closed)
        #expect(throws: RelayStorageError.self) { try store.load() }
    }

    @Test("strings SQLite finds awkward survive: empty, NUL, quotes, non-ASCII")
    func awkwardStrings() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        let store = try SQLiteRelayStorage(path: dir.path("relay.sqlite"))
        let key = MailboxKey(app: "ä'\"; DROP TABLE mailboxes;--", id: "")
        let message = StoredMessage(
            side: "\u{0}side", phase: "", body: "", serverRX: RelayInstant(secondsSince1970: 0.1),
            messageID: .object(JSONObject(["k": "\u{0}😀"])))
        let writes: [StorageOp] = [
            .putMailbox(key, forNameplate: true, updated: RelayInstant(secondsSince1970: 5)),
            .putMailboxSide(
                key, "\u{0}side",
                MailboxSideRecord(opened: true, added: RelayInstant(secondsSince1970: 5), mood: "")),
            .appendMessage(key, message),
        ]
        #expect(store.commit(writes) == nil)
        var expected = RelaySnapshot()
        expected.apply(writes)
        #expect(try store.load() == expected)
        store.close()
    }
}
