import Foundation
import Mailbox
import Support
import TestSupport
import Testing

@testable import Relay

/// A follower that records what a shared store delivers.
final class RecordingFollower: RelayChangeFollower {
    private struct State {
        var position: Int64? = 0
        var changes: [(position: Int64, ops: [StorageOp])] = []
        var failures: [RelayStorageError] = []
    }

    private let state = Locked(State())

    var appliedPosition: Int64? { state.withLock { $0.position } }
    var ops: [StorageOp] { state.withLock { $0.changes.flatMap(\.ops) } }
    var positions: [Int64] { state.withLock { $0.changes.map(\.position) } }
    var failures: [RelayStorageError] { state.withLock { $0.failures } }

    /// nil: not serving (the store must fetch nothing).
    func setPosition(_ position: Int64?) { state.withLock { $0.position = position } }

    func applyChanges(_ changes: [(position: Int64, ops: [StorageOp])], through position: Int64) {
        state.withLock { s in
            s.changes += changes
            s.position = position
        }
    }

    func feedFailed(_ error: RelayStorageError) {
        state.withLock { $0.failures.append(error) }
    }
}

@Suite("Change feed encoding")
struct StorageOpCodingTests {
    @Test("every write survives the feed's JSON, awkward strings included; garbage is refused")
    func roundTrip() {
        for seed: UInt64 in [1, 2, 3] {
            var h = CoreHarness(config: RelayConfig(limits: .unlimited), seed: seed)
            var writes: [StorageOp] = []
            randomTraffic(&h, seed: seed, steps: 200) { writes += $0 }
            #expect(StorageOpCoding.decode(StorageOpCoding.encode(writes)) == writes)
        }
        let key = MailboxKey(app: "ä'\"\u{0}\\", id: "\n")
        let awkward: [StorageOp] = [
            .putMailboxSide(
                key, "\u{0}", MailboxSideRecord(opened: false, added: RelayInstant(secondsSince1970: 0.1))),
            .appendMessage(
                key,
                StoredMessage(
                    side: "s", phase: "\\0", body: "😀",
                    serverRX: RelayInstant(secondsSince1970: 1_764_000_000.123456),
                    messageID: .object(JSONObject(["k": .array([.null, .bool(true)])])))),
            .putNameplateSide(
                NameplateKey(app: "a", name: Nameplate(number: 7)), "b",
                NameplateSideRecord(claimed: true, added: RelayInstant(secondsSince1970: 3))),
        ]
        #expect(StorageOpCoding.decode(StorageOpCoding.encode(awkward)) == awkward)
        for garbage in [
            "", "{}", "[1]", "[[\"np\"]]", "[[\"np\",\"a\",\"1\"]]", "[[\"zz\",\"a\",\"b\"]]",
            "[[\"mbt\",\"a\",\"b\",\"x\"]]",
        ] {
            #expect(StorageOpCoding.decode(garbage) == nil, "\(garbage)")
        }
    }
}

@Suite("PostgreSQL shared by several nodes", .enabled(if: !PostgresCluster.skipped, "ELEVEN_SKIP_POSTGRES=1"))
struct SharedStorageTests {
    static func reserve(_ store: PostgresRelayStorage, _ request: NameplateRequest) throws
        -> NameplateReservation
    {
        let result = Locked<Result<NameplateReservation, RelayStorageError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        store.reserveNameplate(request) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 20) == .success)
        return try #require(result.withLock { $0 }).get()
    }

    @Test(
        "allocations on three stores at once never hand out one nameplate twice; a name claimed on two leads to one mailbox"
    )
    func nameplatesUniqueAcrossNodes() throws {
        let cluster = try PostgresCluster()
        let stores = try (0..<3).map { _ in try PostgresRelayStorage(url: PostgresURL(cluster.url)) }
        defer { for store in stores { store.close() } }
        let candidates = (1..<10).map { Nameplate(number: $0) } + (10..<100).map { Nameplate(number: $0) }
        let granted = Locked<[Nameplate?]>([])
        DispatchQueue.concurrentPerform(iterations: 60) { i in
            // Every node offers the same short names first, as nodes with the same view do.
            let request = NameplateRequest(
                app: "example.com/unique", candidates: candidates, isAllocation: true,
                mailbox: MailboxID("m\(i)"))
            let grant = try? Self.reserve(stores[i % 3], request).grant
            granted.withLock { $0.append(grant?.created == true ? grant?.name : nil) }
        }
        let names = granted.withLock { $0 }
        #expect(names.count == 60 && !names.contains(nil))
        #expect(Set(names).count == 60, "every allocation got its own nameplate")
        #expect(
            Set(names.compactMap { $0 }).isSuperset(of: candidates.prefix(9)), "the shortest names went first"
        )

        for round in 0..<10 {
            let mailboxes = Locked<[(MailboxID, Bool)]>([])
            DispatchQueue.concurrentPerform(iterations: 3) { i in
                let request = NameplateRequest(
                    app: "example.com/unique", candidates: [Nameplate(number: 5000 + round)],
                    isAllocation: false,
                    mailbox: MailboxID("r\(round)-\(i)"))
                if let grant = try? Self.reserve(stores[i], request).grant {
                    mailboxes.withLock { $0.append((grant.mailbox, grant.created)) }
                }
            }
            let seen = mailboxes.withLock { $0 }
            #expect(seen.count == 3)
            #expect(Set(seen.map(\.0)).count == 1, "one mailbox behind the name")
            #expect(seen.filter(\.1).count == 1, "created exactly once")
        }
        // An allocation whose every candidate is taken gets no name.
        let full = try Self.reserve(
            stores[0],
            NameplateRequest(
                app: "example.com/unique", candidates: [Nameplate(number: 1)], isAllocation: true,
                mailbox: "x"))
        #expect(full.grant.name == nil && !full.grant.created)
    }

    @Test(
        "a claim of a name every side released (on two nodes, neither deleting it) makes a new nameplate and mailbox"
    )
    func claimReplacesReleasedNameplate() throws {
        let cluster = try PostgresCluster()
        let stores = try (0..<2).map { _ in try PostgresRelayStorage(url: PostgresURL(cluster.url)) }
        defer { for store in stores { store.close() } }
        let recorder = RecordingFollower()
        recorder.setPosition(try stores[0].loadForServing().position)
        stores[0].follow(recorder)
        let app = AppID("example.com/reuse")
        let key = NameplateKey(app: app, name: Nameplate(number: 77))
        func claim(_ store: Int, _ mailbox: MailboxID) throws -> NameplateGrant {
            try Self.reserve(
                stores[store],
                NameplateRequest(app: app, candidates: [key.name], isAllocation: false, mailbox: mailbox)
            ).grant
        }
        func side(_ side: Side, claimed: Bool) -> StorageOp {
            .putNameplateSide(
                key, side, NameplateSideRecord(claimed: claimed, added: RelayInstant(secondsSince1970: 1)))
        }
        #expect(try claim(0, "old").created)
        #expect(stores[0].commit([side("a", claimed: true), side("b", claimed: true)]) == nil)
        #expect(stores[0].commit([side("a", claimed: false)]) == nil)
        let found = try claim(1, "unused")
        #expect(!found.created && found.mailbox == "old", "one side still claims it")
        #expect(stores[1].commit([side("b", claimed: false)]) == nil)
        let made = try claim(1, "new")
        #expect(made.created && made.mailbox == "new", "released by every side: made anew")
        let again = try claim(0, "unused")
        #expect(!again.created && again.mailbox == "new")
        // The other node learns of the deletion, then of the new nameplate.
        #expect(
            eventually(timeout: 5) {
                recorder.ops.suffix(2) == [.deleteNameplate(key), .putNameplate(key, mailbox: "new")]
            }, "\(recorder.ops)")
    }

    @Test("another node's commits reach a follower promptly by NOTIFY, in order, without its own")
    func feedDeliversPromptly() throws {
        let cluster = try PostgresCluster()
        // Polling once a minute: only a notification can deliver within the test's deadline.
        let follower = try PostgresRelayStorage(
            url: PostgresURL(cluster.url), options: .init(feedPollMilliseconds: 60_000))
        defer { follower.close() }
        let writer = try PostgresRelayStorage(url: PostgresURL(cluster.url))
        defer { writer.close() }
        let recorder = RecordingFollower()
        recorder.setPosition(try follower.loadForServing().position)
        follower.follow(recorder)
        usleep(300_000)  // the feed connection LISTENs
        let key = MailboxKey(app: "a", id: "m")
        #expect(
            follower.commit([
                .putMailbox(key, forNameplate: false, updated: RelayInstant(secondsSince1970: 1))
            ]) == nil)
        var expected: [StorageOp] = []
        for i in 0..<20 {
            let op = StorageOp.appendMessage(
                key,
                StoredMessage(
                    side: "w", phase: Phase("\(i)"), body: "0\(i)",
                    serverRX: RelayInstant(secondsSince1970: Double(i)), messageID: .null))
            expected.append(op)
            #expect(writer.commit([op]) == nil)
        }
        #expect(eventually(timeout: 5) { recorder.ops.count == 20 })
        #expect(recorder.ops == expected, "the writer's ops, in order, and none of the follower's own")
        #expect(recorder.positions == recorder.positions.sorted())
    }

    @Test("a follower that was not serving catches up by position; a pruned feed makes it reload")
    func catchUpAndPrunedFeed() throws {
        let cluster = try PostgresCluster()
        let follower = try PostgresRelayStorage(
            url: PostgresURL(cluster.url), options: .init(feedPollMilliseconds: 100))
        defer { follower.close() }
        let writer = try PostgresRelayStorage(url: PostgresURL(cluster.url))
        defer { writer.close() }
        let recorder = RecordingFollower()
        let start = try follower.loadForServing().position
        recorder.setPosition(nil)
        follower.follow(recorder)
        let key = MailboxKey(app: "a", id: "gone-while-away")
        #expect(
            writer.commit([.putMailbox(key, forNameplate: true, updated: RelayInstant(secondsSince1970: 1))])
                == nil)
        #expect(writer.commit([.touchMailbox(key, updated: RelayInstant(secondsSince1970: 2))]) == nil)
        usleep(400_000)
        #expect(recorder.ops.isEmpty, "nothing is fetched while the follower does not serve")
        recorder.setPosition(start)
        #expect(
            eventually(timeout: 5) { recorder.ops.count == 2 },
            "the notification was missed; the cursor finds it")

        try postgresExecute(cluster.url, "UPDATE relay_feed SET pruned_through = 1000000")
        #expect(eventually(timeout: 5) { !recorder.failures.isEmpty })
        // A reload starts after the pruned part.
        #expect(try follower.loadForServing().position >= 1_000_000)
    }

    @Test("exactly one node runs expiry; when its connection dies another takes over")
    func oneExpiryLeader() throws {
        let cluster = try PostgresCluster()
        let options = PostgresRelayStorage.Options(feedPollMilliseconds: 100)
        let stores = try (0..<3).map { _ in
            try PostgresRelayStorage(url: PostgresURL(cluster.url), options: options)
        }
        let followers = stores.map { _ in RecordingFollower() }
        for (store, follower) in zip(stores, followers) { store.follow(follower) }
        #expect(eventually(timeout: 5) { stores.filter(\.isExpiryLeader).count == 1 })
        usleep(300_000)
        #expect(stores.filter(\.isExpiryLeader).count == 1)
        // The operators' query from docs/deployment.md finds the leader's session.
        let admin = try PostgresConnection(PostgresURL(cluster.url))
        defer { admin.close() }
        let sessions = try admin.execute(
            """
            SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
            WHERE l.locktype = 'advisory' AND l.granted
              AND (l.classid::bigint << 32 | l.objid::bigint) = 7308604897068015224
            """)
        #expect(sessions.rowCount == 1)
        let leader = try #require(stores.firstIndex { $0.isExpiryLeader })
        stores[leader].close()
        let rest = stores.indices.filter { $0 != leader }.map { stores[$0] }
        #expect(eventually(timeout: 5) { rest.filter(\.isExpiryLeader).count == 1 })
        for store in rest { store.close() }
    }
}
