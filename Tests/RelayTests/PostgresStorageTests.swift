import Foundation
import Mailbox
import Support
import TestSupport
import Testing

@testable import Relay

/// Runs SQL on the cluster directly (outside the store under test).
func postgresExecute(_ url: String, _ sql: String) throws {
    let connection = try PostgresConnection(PostgresURL(url))
    try connection.executeScript(sql, code: .write)
    connection.close()
}

/// Every kind of write, for checks that the traffic covered them.
let allWriteKinds = [
    "putNameplate", "putNameplateSide", "deleteNameplate", "putMailbox", "touchMailbox",
    "putMailboxSide", "appendMessage", "deleteMailbox",
]

@Suite("PostgreSQL storage", .enabled(if: !PostgresCluster.skipped, "ELEVEN_SKIP_POSTGRES=1"))
struct PostgresStorageTests {
    @Test("a new database gets the current schema version; reopening keeps it; a newer one is refused")
    func schemaVersion() throws {
        let cluster = try PostgresCluster()
        let url = PostgresURL(cluster.url)
        let store = try PostgresRelayStorage(url: url)
        #expect(try store.schemaVersion() == PostgresRelayStorage.currentSchemaVersion)
        #expect(PostgresRelayStorage.currentSchemaVersion == 3)
        #expect(try store.load() == .empty)
        // Version 3: feed entries are stored uncompressed.
        let storage = try PostgresConnection(url).execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'relay_changes'::regclass AND attname = 'ops'"
        )
        #expect(storage.text(0, 0) == "e")
        store.close()
        let again = try PostgresRelayStorage(url: url)
        #expect(try again.schemaVersion() == 3)
        again.close()

        try postgresExecute(cluster.url, "UPDATE relay_schema_version SET version = 99")
        do {
            _ = try PostgresRelayStorage(url: url)
            Issue.record("a newer schema was accepted")
        } catch {
            #expect(error.code == .schemaTooNew)
        }
        try postgresExecute(cluster.url, "UPDATE relay_schema_version SET version = 3")
        let fine = try PostgresRelayStorage(url: url)
        #expect(try fine.schemaVersion() == 3, "the refused open changed nothing")
        fine.close()

        // A database of the previous release (version 2) is brought up to date.
        try postgresExecute(cluster.url, "UPDATE relay_schema_version SET version = 2")
        let upgraded = try PostgresRelayStorage(url: url)
        #expect(try upgraded.schemaVersion() == 3)
        upgraded.close()
    }

    @Test("four relays starting at once on an empty database migrate it once and all serve")
    func concurrentMigration() throws {
        let cluster = try PostgresCluster()
        let stores = Locked<[PostgresRelayStorage]>([])
        let errors = Locked<[RelayStorageError]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do throws(RelayStorageError) {
                let store = try PostgresRelayStorage(url: PostgresURL(cluster.url))
                stores.withLock { $0.append(store) }
            } catch {
                errors.withLock { $0.append(error) }
            }
        }
        #expect(errors.withLock { $0 } == [])
        let all = stores.withLock { $0 }
        #expect(all.count == 4)
        for (i, store) in all.enumerated() {
            let key = MailboxKey(app: "a", id: MailboxID("m\(i)"))
            #expect(
                store.commit([
                    .putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))
                ]) == nil)
        }
        #expect(try all[0].load().mailboxes.count == 4, "every node commits to the one database")
        #expect(try all[0].schemaVersion() == PostgresRelayStorage.currentSchemaVersion)
        for store in all { store.close() }
    }

    @Test("random traffic: what PostgreSQL loads back equals the core's state, also after a restart")
    func consistencyAndRestart() throws {
        let cluster = try PostgresCluster()
        let url = PostgresURL(cluster.url)
        for seed: UInt64 in [1, 2, 3] {
            try postgresExecute(
                cluster.url,
                "DROP TABLE IF EXISTS nameplates, nameplate_sides, mailboxes, mailbox_sides, messages, "
                    + "relay_changes, relay_feed, relay_schema_version")
            let store = try PostgresRelayStorage(url: url)
            var h = CoreHarness(config: RelayConfig(limits: .unlimited), seed: seed)
            var pending: [StorageOp] = []
            randomTraffic(&h, seed: seed, steps: 300) { pending += $0 }
            #expect(store.commit(pending) == nil)
            #expect(try store.load() == h.core.state)
            for kind in allWriteKinds {
                #expect(pending.contains { "\($0)".hasPrefix(kind + "(") }, "no \(kind)")
            }
            store.close()
        }
        // The last seed's state survives a restart of PostgreSQL itself.
        let before = try PostgresRelayStorage(url: url)
        let state = try before.load()
        #expect(state != .empty)
        before.close()
        cluster.stop()
        try cluster.start()
        let after = try PostgresRelayStorage(url: url)
        #expect(try after.load() == state)
        after.close()
    }

    @Test("a restarted relay resumes nameplates, mailboxes and queued messages")
    func restartAndResume() throws {
        let cluster = try PostgresCluster()
        let url = PostgresURL(cluster.url)
        try StorageScenarios.restartAndResume { try PostgresRelayStorage(url: url) }
    }

    @Test("group commit: writes queued while the store is busy share one transaction")
    func groupCommit() throws {
        let cluster = try PostgresCluster()
        let store = try PostgresRelayStorage(url: PostgresURL(cluster.url))
        let key = MailboxKey(app: "a", id: "m")
        let done = Locked(0)
        #expect(
            store.commit([.putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))])
                == nil)
        store.withCommitsPaused {
            for i in 0..<50 {
                let message = StoredMessage(
                    side: "s", phase: Phase("\(i)"), body: "00",
                    serverRX: RelayInstant(secondsSince1970: Double(i)), messageID: .null)
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
        #expect(store.openConnections <= 4, "the pool stays bounded")
        store.close()
    }

    @Test("strings PostgreSQL finds awkward survive: empty, NUL, backslashes, quotes, non-ASCII")
    func awkwardStrings() throws {
        let cluster = try PostgresCluster()
        let store = try PostgresRelayStorage(url: PostgresURL(cluster.url))
        let key = MailboxKey(app: "ä'\"; DROP TABLE mailboxes;--\\0", id: "")
        let message = StoredMessage(
            side: "\u{0}side\\", phase: "\\\\0", body: "", serverRX: RelayInstant(secondsSince1970: 0.1),
            messageID: .object(JSONObject(["k": "\u{0}😀\\"])))
        let writes: [StorageOp] = [
            .putMailbox(
                key, forNameplate: true, updated: RelayInstant(secondsSince1970: 1_764_000_000.123456)),
            .putMailboxSide(
                key, "\u{0}side\\",
                MailboxSideRecord(opened: true, added: RelayInstant(secondsSince1970: 5), mood: "\u{0}")),
            .appendMessage(key, message),
        ]
        #expect(store.commit(writes) == nil)
        var expected = RelaySnapshot()
        expected.apply(writes)
        #expect(try store.load() == expected)
        store.close()
    }

    @Test("writes after close fail instead of vanishing")
    func closed() throws {
        let cluster = try PostgresCluster()
        let store = try PostgresRelayStorage(url: PostgresURL(cluster.url))
        store.close()
        #expect(store.commit([.deleteMailbox(MailboxKey(app: "a", id: "m"))])?.code == .closed)
        #expect(throws: RelayStorageError.self) { try store.load() }
    }

    @Test("the database going away fails commits with an error; the same store commits again once it is back")
    func databaseOutage() throws {
        let cluster = try PostgresCluster()
        let url = PostgresURL(cluster.url)
        let store = try PostgresRelayStorage(url: url)
        let key = MailboxKey(app: "a", id: "m")
        #expect(
            store.commit([.putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))])
                == nil)
        #expect(store.ping() == nil)
        cluster.stop()
        let failed = store.commit([.touchMailbox(key, updated: RelayInstant(secondsSince1970: 2))])
        #expect(failed != nil, "a commit while the database is down reports an error")
        #expect(store.ping() != nil)
        try cluster.start()
        #expect(store.ping() == nil, "the pool reconnected")
        #expect(try store.load().mailboxes[key]?.updated == RelayInstant(secondsSince1970: 1))
        #expect(store.commit([.touchMailbox(key, updated: RelayInstant(secondsSince1970: 4))]) == nil)
        #expect(try store.load().mailboxes[key]?.updated == RelayInstant(secondsSince1970: 4))
        store.close()
    }

    @Test("connections time out instead of hanging unless the connection string says otherwise")
    func connectionDefaults() throws {
        let cluster = try PostgresCluster()
        let plain = try PostgresConnection(
            PostgresURL("postgresql://eleven@127.0.0.1:\(cluster.port)/postgres"))
        #expect(plain.option("connect_timeout") == "5")
        #expect(plain.option("keepalives_idle") == "10")
        #expect(plain.option("tcp_user_timeout") == "15000")
        #expect(plain.option("port") == "\(cluster.port)")
        plain.close()
        let custom = try PostgresConnection(PostgresURL(cluster.url + "&keepalives_idle=30"))
        #expect(custom.option("connect_timeout") == "3")
        #expect(custom.option("keepalives_idle") == "30")
        custom.close()
        let keywords = try PostgresConnection(
            PostgresURL("host=127.0.0.1 port=\(cluster.port) user=eleven dbname=postgres connect_timeout=2"))
        #expect(keywords.option("connect_timeout") == "2")
        #expect(keywords.option("dbname") == "postgres")
        keywords.close()
    }

    @Test("an unreachable database is a clear error, and the password never shows")
    func unreachable() throws {
        let port = try TestSupport.freePort()
        let url = PostgresURL("postgresql://eleven:s3cret@127.0.0.1:\(port)/x?connect_timeout=2")
        #expect(!url.description.contains("s3cret"))
        #expect(url.description.contains("password=***"))
        #expect(url.description.contains("port=\(port)"))
        #expect(!PostgresURL("host=h password=s3cret dbname=x").description.contains("s3cret"))
        #expect(
            !PostgresURL("postgres://u@h/x?sslmode=require&password=s3cret").description.contains("s3cret"))
        #expect(!PostgresURL("host=h password = 's3 cret'").description.contains("cret"))
        #expect(
            PostgresURL("postgres://h:5432/x?nonsense='s3cret").description
                == "(unparsable connection string)")
        do {
            _ = try PostgresRelayStorage(url: url)
            Issue.record("connected to nothing")
        } catch {
            #expect(error.code == .open)
            #expect(!error.message.contains("s3cret"))
        }
    }
}
