import Foundation
import Mailbox
import TestSupport
import Testing

@testable import Relay

/// `PostgresWriteBatch`: a group commit's writes as their net effect in a few set-based
/// statements must leave PostgreSQL exactly as running the writes one by one would.
@Suite("PostgreSQL write batches", .enabled(if: !PostgresCluster.skipped, "ELEVEN_SKIP_POSTGRES=1"))
struct PostgresWriteBatchTests {
    @Test(
        "random traffic in random batches: after every batch the database holds what the writes in order make"
    )
    func randomBatches() throws {
        let cluster = try PostgresCluster()
        for seed: UInt64 in [11, 12, 13] {
            try postgresExecute(
                cluster.url,
                "DROP TABLE IF EXISTS nameplates, nameplate_sides, mailboxes, mailbox_sides, messages, "
                    + "relay_changes, relay_feed, relay_schema_version")
            let store = try PostgresRelayStorage(url: PostgresURL(cluster.url))
            var h = CoreHarness(config: RelayConfig(limits: .unlimited), seed: seed)
            var events: [[StorageOp]] = []
            randomTraffic(&h, seed: seed, steps: 400) { if !$0.isEmpty { events.append($0) } }
            var random = SeededRandom(seed: seed)
            var expected = RelaySnapshot()
            var sawReuse = false
            var index = 0
            while index < events.count {
                let count = Int.random(in: 1...25, using: &random)
                let batch = Array(events[index..<min(events.count, index + count)].joined())
                index += count
                sawReuse = sawReuse || Self.deletesThenWritesAgain(batch)
                #expect(store.commit(batch) == nil)
                expected.apply(batch)
                #expect(try store.load() == expected, "seed \(seed), after event \(index)")
            }
            #expect(expected == h.core.state)
            #expect(sawReuse, "some batch deleted a row and wrote it again")
            store.close()
        }
    }

    @Test("one batch: delete and re-create, touches before and after a delete, a put then touches")
    func edgeCases() throws {
        let cluster = try PostgresCluster()
        let store = try PostgresRelayStorage(url: PostgresURL(cluster.url))
        func at(_ seconds: Double) -> RelayInstant { RelayInstant(secondsSince1970: seconds) }
        let app = AppID("a\"p{p},\\")
        let box = MailboxKey(app: app, id: "m,1")
        let other = MailboxKey(app: app, id: "NULL")
        let plate = NameplateKey(app: app, name: Nameplate("7"))
        func message(_ phase: String) -> StoredMessage {
            StoredMessage(
                side: "s\"", phase: Phase(phase), body: "{\"b\":\"\\\\\"}", serverRX: at(3), messageID: .null)
        }
        let first: [StorageOp] = [
            .putMailbox(box, forNameplate: true, updated: at(1)),
            .putMailbox(other, forNameplate: false, updated: at(1)),
            .putMailboxSide(box, "x", MailboxSideRecord(opened: true, added: at(1), mood: nil)),
            .appendMessage(box, message("old")),
            .putNameplate(plate, mailbox: box.id),
            .putNameplateSide(plate, "x", NameplateSideRecord(claimed: true, added: at(1))),
        ]
        #expect(store.commit(first) == nil)
        let second: [StorageOp] = [
            .touchMailbox(box, updated: at(2)),
            .appendMessage(box, message("gone")),
            .deleteMailbox(box),
            .touchMailbox(box, updated: at(4)),
            .putMailbox(box, forNameplate: false, updated: at(5)),
            .touchMailbox(box, updated: at(6)),
            .appendMessage(box, message("new1")),
            .appendMessage(other, message("o")),
            .appendMessage(box, message("new2")),
            .touchMailbox(other, updated: at(7)),
            .touchMailbox(other, updated: at(8)),
            .putMailboxSide(other, "y", MailboxSideRecord(opened: false, added: at(2), mood: "NULL")),
            .deleteNameplate(plate),
            .putNameplate(plate, mailbox: other.id),
            .putNameplateSide(plate, "y", NameplateSideRecord(claimed: false, added: at(9))),
            .putNameplateSide(plate, "y", NameplateSideRecord(claimed: true, added: at(10))),
        ]
        #expect(store.commit(second) == nil)
        var expected = RelaySnapshot()
        expected.apply(first + second)
        let loaded = try store.load()
        #expect(loaded == expected)
        #expect(loaded.mailboxes[box]?.messages.map(\.phase.value) == ["new1", "new2"])
        #expect(loaded.mailboxes[box]?.updated == at(6))
        #expect(loaded.mailboxes[other]?.updated == at(8))
        #expect(loaded.nameplates[plate]?.sides.keys.map(\.value) == ["y"])
        store.close()
    }

    /// Whether some row is deleted and then written again within `ops`.
    private static func deletesThenWritesAgain(_ ops: [StorageOp]) -> Bool {
        var deletedNameplates: Set<NameplateKey> = []
        var deletedMailboxes: Set<MailboxKey> = []
        for op in ops {
            switch op {
            case .deleteNameplate(let key): deletedNameplates.insert(key)
            case .deleteMailbox(let key): deletedMailboxes.insert(key)
            case .putNameplate(let key, _), .putNameplateSide(let key, _, _):
                if deletedNameplates.contains(key) { return true }
            case .putMailbox(let key, _, _), .putMailboxSide(let key, _, _), .appendMessage(let key, _),
                .touchMailbox(let key, _):
                if deletedMailboxes.contains(key) { return true }
            }
        }
        return false
    }
}
