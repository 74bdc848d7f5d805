import Foundation
import Net
import TestSupport
import Testing

@testable import Relay

/// An `eleven-relay` started without waiting for it to listen (a standby waits for the
/// database's node lock first). Stopped by process id.
final class PendingRelay {
    let process = Process()
    let port: UInt16
    let logURL: URL

    init(arguments: [String], port: UInt16? = nil) throws {
        self.port = try port ?? TestSupport.freePort()
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent(
            "relay-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = URL(fileURLWithPath: RelayProcess.executable)
        process.arguments = ["--listen", "127.0.0.1:\(self.port)", "--expiry-check", "1s"] + arguments
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var url: String { "ws://127.0.0.1:\(port)/v1" }
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }
    var isListening: Bool { log.contains("eleven-relay listening on ws://127.0.0.1:\(port)/v1") }

    func stop(signal: Int32 = SIGTERM) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: logURL)
    }
}

/// `eleven-relay --postgres`: one serving node per database (a node lock), a standby that takes
/// over when the serving node dies, and the database going away.
@Suite(
    "eleven-relay on PostgreSQL", .serialized,
    .enabled(if: !PostgresCluster.skipped, "ELEVEN_SKIP_POSTGRES=1"))
struct PostgresNodeTests {
    static let app = "example.com/postgres-node-test"

    @Test("a second store on the same database is refused; a standby takes over when the first closes")
    func nodeLock() throws {
        let cluster = try PostgresCluster()
        let url = PostgresURL(cluster.url)
        let first = try PostgresRelayStorage(url: url)
        do {
            _ = try PostgresRelayStorage(url: url)
            Issue.record("two stores served one database")
        } catch {
            #expect(error.code == .locked)
            #expect(error.message.contains("--postgres-standby"))
        }
        let key = MailboxKey(app: "a", id: "m")
        #expect(
            first.commit([.putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))])
                == nil)
        let standby = Locked<Result<PostgresRelayStorage, RelayStorageError>?>(nil)
        Thread.detachNewThread {
            do throws(RelayStorageError) {
                let store = try PostgresRelayStorage(url: url, options: .init(exclusivity: .wait))
                standby.withLock { $0 = .success(store) }
            } catch {
                standby.withLock { $0 = .failure(error) }
            }
        }
        usleep(500_000)
        #expect(standby.withLock { $0 } == nil, "the standby waits while the first store serves")
        first.close()
        #expect(eventually(timeout: 10) { standby.withLock { $0 } != nil })
        let second = try #require(try standby.withLock { $0 }?.get())
        #expect(try second.load().mailboxes[key] != nil, "the standby loads what the first committed")
        second.close()
    }

    @Test(
        "fencing: once a standby took over, the replaced store's commits fail; what it committed before is kept"
    )
    func fencing() throws {
        let cluster = try PostgresCluster()
        let url = PostgresURL(cluster.url)
        let first = try PostgresRelayStorage(url: url)
        defer { first.close() }
        let kept = MailboxKey(app: "a", id: "kept")
        let late = MailboxKey(app: "a", id: "late")
        #expect(
            first.commit([.putMailbox(kept, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))])
                == nil)

        // The operators' query from docs/deployment.md finds the serving session.
        let admin = try PostgresConnection(url)
        defer { admin.close() }
        let serving = try admin.execute(
            """
            SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
            WHERE l.locktype = 'advisory' AND l.granted
              AND (l.classid::bigint << 32 | l.objid::bigint) = 7308604897068015219
            """)
        #expect(serving.rowCount == 1)
        #expect(serving.text(0, 0) == first.nodeLockBackendPID)

        let standby = Locked<Result<PostgresRelayStorage, RelayStorageError>?>(nil)
        Thread.detachNewThread {
            do throws(RelayStorageError) {
                let store = try PostgresRelayStorage(url: url, options: .init(exclusivity: .wait))
                standby.withLock { $0 = .success(store) }
            } catch {
                standby.withLock { $0 = .failure(error) }
            }
        }
        // The first relay's lock session vanishes (as when its host drops off the network),
        // while its pool still reaches the database.
        try admin.execute("SELECT pg_terminate_backend($1)", [first.nodeLockBackendPID])
        #expect(eventually(timeout: 10) { standby.withLock { $0 } != nil })
        let second = try #require(try standby.withLock { $0 }?.get())
        defer { second.close() }
        let refused = first.commit([
            .putMailbox(late, forNameplate: false, updated: RelayInstant(secondsSince1970: 2))
        ])
        #expect(refused?.code == .locked)
        let loaded = try second.load()
        #expect(loaded.mailboxes[kept] != nil)
        #expect(loaded.mailboxes[late] == nil)
        #expect(
            second.commit([.putMailbox(late, forNameplate: false, updated: RelayInstant(secondsSince1970: 3))]
            ) == nil)
    }

    @Test("kill -9 the serving relay mid-exchange: the standby takes over and the clients finish there")
    func failover() throws {
        let cluster = try PostgresCluster()
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let postgres = ["--postgres", cluster.url]
        let active = try RelayProcess(databasePath: dir.path("unused.sqlite"), arguments: postgres)
        defer { active.stop() }
        #expect(active.log.contains("postgresql: "), "the log names the database, not the unused file")
        #expect(!active.log.contains("unused.sqlite"))
        // A full exchange on the PostgreSQL store.
        _ = try RelayWireTests.exchange(active.url, bodies: ("0a0a", "0b0b"))

        // Half an exchange: A allocates, claims, opens and adds; B claims and reads it.
        let a = try WireClient(active.url)
        try a.send(["type": "bind", "appid": Self.app, "side": "aaaaaaaaaa"])
        try a.send(["type": "allocate"])
        let nameplate = try #require(try a.next(type: "allocated")["nameplate"] as? String)
        try a.send(["type": "claim", "nameplate": nameplate])
        let mailbox = try #require(try a.next(type: "claimed")["mailbox"] as? String)
        try a.send(["type": "open", "mailbox": mailbox])
        try a.send(["type": "add", "phase": "pake", "body": "a1a1"])
        #expect(try a.next(type: "message")["body"] as? String == "a1a1", "acknowledged: committed")
        let b = try WireClient(active.url)
        try b.send(["type": "bind", "appid": Self.app, "side": "bbbbbbbbbb"])
        try b.send(["type": "claim", "nameplate": nameplate])
        #expect(try b.next(type: "claimed")["mailbox"] as? String == mailbox)

        // A second serving node is refused; a standby waits.
        let refused = try TestSupport.run(
            RelayProcess.executable,
            ["--listen", "127.0.0.1:\(try TestSupport.freePort())", "--db", dir.path("x.sqlite")] + postgres,
            timeout: 20)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("already serves from this database"), "\(refused.stderr)")
        let standby = try PendingRelay(
            arguments: ["--db", dir.path("standby.sqlite"), "--postgres-standby"] + postgres)
        defer { standby.stop() }
        usleep(500_000)
        #expect(standby.process.isRunning && !standby.isListening, "\(standby.log)")

        active.stop(signal: SIGKILL)
        a.close()
        b.close()
        #expect(eventually(timeout: 15) { standby.isListening }, "\(standby.log)")

        // Both sides reconnect to the standby and finish.
        let b2 = try WireClient(standby.url)
        defer { b2.close() }
        try b2.send(["type": "bind", "appid": Self.app, "side": "bbbbbbbbbb"])
        try b2.send(["type": "claim", "nameplate": nameplate])
        #expect(try b2.next(type: "claimed")["mailbox"] as? String == mailbox, "the claim survived")
        try b2.send(["type": "open", "mailbox": mailbox])
        #expect(
            try b2.next(type: "message")["body"] as? String == "a1a1", "the acknowledged message survived")
        let a2 = try WireClient(standby.url)
        defer { a2.close() }
        try a2.send(["type": "bind", "appid": Self.app, "side": "aaaaaaaaaa"])
        try a2.send(["type": "open", "mailbox": mailbox])
        #expect(try a2.next(type: "message")["body"] as? String == "a1a1")
        try b2.send(["type": "add", "phase": "pake", "body": "b2b2"])
        #expect(try a2.next(type: "message")["body"] as? String == "b2b2")
        #expect(try b2.next(type: "message")["body"] as? String == "b2b2")
    }

    @Test(
        "PostgreSQL stopping stops the relay (connections closed, exit 1); a restart resumes once it is back")
    func databaseOutage() throws {
        let cluster = try PostgresCluster()
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let postgres = ["--postgres", cluster.url]
        let relay = try RelayProcess(
            databasePath: dir.path("unused.sqlite"), metrics: true, arguments: postgres)
        defer { relay.stop() }
        let a = try WireClient(relay.url)
        defer { a.close() }
        try a.send(["type": "bind", "appid": Self.app, "side": "aaaaaaaaaa"])
        try a.send(["type": "claim", "nameplate": "7"])
        let mailbox = try #require(try a.next(type: "claimed")["mailbox"] as? String)
        try a.send(["type": "open", "mailbox": mailbox])
        try a.send(["type": "add", "phase": "pake", "body": "a1a1"])
        #expect(try a.next(type: "message")["body"] as? String == "a1a1")

        cluster.stop()
        #expect(eventually(timeout: 10) { !relay.server.process.isRunning }, "\(relay.log)")
        #expect(relay.server.process.terminationStatus == 1)
        #expect(!a.isAlive(), "the connection was closed")
        // While the database is down the relay cannot start (a supervisor keeps retrying).
        let down = try TestSupport.run(
            RelayProcess.executable,
            ["--listen", "127.0.0.1:\(try TestSupport.freePort())", "--db", dir.path("x.sqlite")] + postgres,
            timeout: 20)
        #expect(down.status != 0)
        #expect(down.stderr.contains("cannot connect"), "\(down.stderr)")
        #expect(!down.stderr.contains("password"))

        try cluster.start()
        let again = try RelayProcess(databasePath: dir.path("unused.sqlite"), arguments: postgres)
        defer { again.stop() }
        let b = try WireClient(again.url)
        defer { b.close() }
        try b.send(["type": "bind", "appid": Self.app, "side": "bbbbbbbbbb"])
        try b.send(["type": "claim", "nameplate": "7"])
        #expect(try b.next(type: "claimed")["mailbox"] as? String == mailbox)
        try b.send(["type": "open", "mailbox": mailbox])
        #expect(try b.next(type: "message")["body"] as? String == "a1a1")
    }

    /// The real `wormhole` CLI: the sender gets its code from the serving node, which is then
    /// killed; the standby takes over on the same address (what a load balancer gives clients)
    /// and the receiver and the reconnecting sender finish there.
    @Test(
        "wormhole send/receive across a kill -9 of the serving node and a standby takeover",
        .enabled(if: RelayWormholeCLITests.interop))
    func wormholeAcrossFailover() throws {
        let cluster = try PostgresCluster()
        let dir = try ScratchDirectory()
        defer { dir.remove() }
        let postgres = ["--postgres", cluster.url]
        let active = try RelayProcess(databasePath: dir.path("a.sqlite"), arguments: postgres)
        defer { active.stop() }
        let standby = try PendingRelay(
            arguments: ["--db", dir.path("b.sqlite"), "--postgres-standby"] + postgres, port: active.port)
        defer { standby.stop() }
        let message = RelayWormholeCLITests.text("failover")
        let sender = try RelayWormholeCLITests.Wormhole(
            home: dir.path(""), relayURL: active.url, ["send", "--text", message])
        let code = try sender.code()
        #expect(!standby.isListening)
        active.stop(signal: SIGKILL)
        #expect(eventually(timeout: 15) { standby.isListening }, "\(standby.log)")
        let receiver = try RelayWormholeCLITests.Wormhole(
            home: dir.path(""), relayURL: active.url, ["receive", code])
        _ = try receiver.waitForLine(timeout: 90) { $0 == message }
        #expect(receiver.finish() == 0)
        #expect(sender.finish() == 0)
    }
}
