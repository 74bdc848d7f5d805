import CPostgres
import Dispatch
import Foundation
import Support

/// How a node follows the other nodes' commits in PostgreSQL (`relay_changes`), and which
/// node runs expiry. Everything runs on the feed's own serial queue on one dedicated
/// connection, never on a network loop:
///
/// - `LISTEN eleven_relay_changes`; after its commits each node sends a `NOTIFY` whose payload
///   is its feed name (``PostgresNotifier``: one per run of commits, not one per transaction),
///   and the connection's socket is watched with a dispatch read source, so another node's
///   message arrives within milliseconds. A node's own notifications are ignored.
/// - On another node's notification, and every `interval` whatever happens, the feed reads
///   the entries after the position the follower has applied (catch-up by cursor): a
///   notification lost while a connection was down loses nothing. Every commit takes a
///   transaction lock before it appends to the feed and holds it to its end, so positions
///   become visible in order and a cursor never skips one.
/// - The node whose feed connection holds the session lock `expiryLockKey` is the expiry
///   leader; it also prunes feed entries older than `retention` (a node cut off longer than
///   that reloads its state) and rows orphaned by cross-node races.
/// - A broken connection is dropped (leadership with it) and reopened on the next tick.
final class PostgresChangeFeed: @unchecked Sendable {
    private final class WeakFollower: @unchecked Sendable {
        weak var value: (any RelayChangeFollower)?
    }

    static let channel = "eleven_relay_changes"

    private let url: PostgresURL
    private let nodeID: String
    private let interval: DispatchTimeInterval
    private let retentionSeconds: Int
    private let queue = DispatchQueue(label: "eleven.relay.postgres-feed")
    private let queueKey = DispatchSpecificKey<Void>()
    private let leader = Locked(false)
    private let follower = WeakFollower()

    // Touched only on `queue`.
    private var connection: PostgresConnection?
    private var readSource: DispatchSourceRead?
    private var timer: DispatchSourceTimer?
    private var lastPrune = Date.distantPast
    private var stopped = false

    init(
        url: PostgresURL, nodeID: String, interval: DispatchTimeInterval = .seconds(1),
        retentionSeconds: Int = 600
    ) {
        self.url = url
        self.nodeID = nodeID
        self.interval = interval
        self.retentionSeconds = retentionSeconds
        queue.setSpecific(key: queueKey, value: ())
    }

    var isLeader: Bool { leader.withLock { $0 } }

    func start(_ follower: any RelayChangeFollower) {
        queue.async { [self] in
            guard !stopped, timer == nil else { return }
            self.follower.value = follower
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: interval)
            timer.setEventHandler { [weak self] in self?.tick() }
            self.timer = timer
            timer.resume()
        }
    }

    /// Reads the feed now (after this node's own reservation, say).
    func wake() {
        queue.async { [self] in catchUp() }
    }

    /// This node's own entries at `positions` are committed (see
    /// ``RelayChangeFollower/ownChangesCommitted(_:)``).
    func ownChangesCommitted(_ positions: [Int64]) {
        guard !positions.isEmpty else { return }
        follower.value?.ownChangesCommitted(positions)
    }

    /// Whether the follower has applied the feed through `position`.
    func hasApplied(_ position: Int64) -> Bool {
        (follower.value?.appliedPosition ?? 0) >= position
    }

    func stop() {
        let body = { [self] in
            stopped = true
            timer?.cancel()
            timer = nil
            dropConnection()
        }
        if DispatchQueue.getSpecific(key: queueKey) == nil { queue.sync(execute: body) } else { body() }
    }

    // MARK: - On the queue

    private func tick() {
        guard !stopped else { return }
        if connection == nil { connect() }
        guard let connection else { return }
        do throws(RelayStorageError) {
            if !isLeader {
                let won = try connection.execute(
                    "SELECT pg_try_advisory_lock(\(PostgresRelaySchema.expiryLockKey))", code: .read)
                if won.text(0, 0) == "t" { leader.withLock { $0 = true } }
            }
            if isLeader, Date().timeIntervalSince(lastPrune) >= 60 {
                lastPrune = Date()
                try prune(connection)
            }
        } catch {
            reconnect()
            return
        }
        catchUp()
    }

    /// Opens the feed connection; if the database cannot be reached the follower is told
    /// (it stops serving until the database answers again).
    private func connect() {
        do throws(RelayStorageError) {
            let connection = try PostgresConnection(url)
            try connection.execute("LISTEN \(Self.channel)", code: .read)
            let source = DispatchSource.makeReadSource(fileDescriptor: connection.socket, queue: queue)
            source.setEventHandler { [weak self] in self?.readable() }
            source.setCancelHandler { connection.close() }
            self.connection = connection
            readSource = source
            source.resume()
        } catch {
            // Retried on the next tick.
            follower.value?.feedFailed(error)
        }
    }

    /// A broken connection: dropped and reopened at once, so an unreachable database is
    /// noticed now; the next tick catches up whatever was missed.
    private func reconnect() {
        dropConnection()
        guard !stopped else { return }
        connect()
    }

    private func dropConnection() {
        leader.withLock { $0 = false }
        if let readSource {
            // The source's cancel handler closes the connection once the source lets go of
            // its descriptor.
            readSource.cancel()
        } else {
            connection?.close()
        }
        readSource = nil
        connection = nil
    }

    private func readable() {
        guard let connection else { return }
        guard connection.consumeInput() else {
            reconnect()
            return
        }
        if connection.takeNotifications(ignoring: nodeID) > 0 { catchUp() }
    }

    private static let readSQL = """
        SELECT f.pruned_through, c.seq, c.node, c.ops FROM relay_feed f LEFT JOIN LATERAL (
            SELECT seq, node, CASE WHEN node = $2 THEN NULL ELSE ops END AS ops
            FROM relay_changes WHERE seq > $1 ORDER BY seq LIMIT 500
        ) c ON true
        """

    /// Delivers every entry after the follower's position, then again if notifications came
    /// in meanwhile.
    private func catchUp() {
        guard !stopped, let connection, let follower = follower.value else { return }
        do throws(RelayStorageError) {
            repeat {
                guard var position = follower.appliedPosition else { return }
                while true {
                    // One round trip: how far the feed was pruned, and the entries after us
                    // (this node's own without their ops: it has applied them already).
                    // Not pipelined: a pipeline's last read may leave a notification that arrived
                    // with it unparsed in libpq's buffer, where the socket's read source never
                    // sees it (it then waited for the next tick).
                    let rows = try connection.execute(
                        Self.readSQL, [String(position), nodeID], code: .read)
                    if position < Int64(rows.text(0, 0) ?? "") ?? 0 {
                        follower.feedFailed(
                            RelayStorageError(.read, "fell behind the change feed; reloading"))
                        return
                    }
                    guard rows.text(0, 1) != nil else { break }
                    var changes: [(position: Int64, ops: [StorageOp])] = []
                    for r in 0..<rows.rowCount {
                        position = Int64(rows.text(r, 1) ?? "") ?? position
                        guard rows.text(r, 2) != nodeID else { continue }
                        guard let ops = StorageOpCoding.decode(PostgresText.decode(rows.text(r, 3) ?? ""))
                        else {
                            follower.feedFailed(
                                RelayStorageError(.read, "a change feed entry this relay cannot read"))
                            return
                        }
                        changes.append((position, ops))
                    }
                    follower.applyChanges(changes, through: position)
                    if rows.rowCount < 500 { break }
                }
            } while connection.takeNotifications(ignoring: nodeID) > 0
        } catch {
            reconnect()
        }
    }

    /// Leader only: forgets feed entries older than the retention (a prefix, by position),
    /// and rows another node's late write left without their mailbox or nameplate.
    private func prune(_ connection: PostgresConnection) throws(RelayStorageError) {
        try connection.executeScript(
            """
            WITH gone AS (
                DELETE FROM relay_changes WHERE seq <= (
                    SELECT max(seq) FROM relay_changes
                    WHERE created < now() - interval '\(retentionSeconds) seconds')
                RETURNING seq)
            UPDATE relay_feed SET pruned_through = GREATEST(
                pruned_through, (SELECT coalesce(max(seq), 0) FROM gone));
            DELETE FROM messages m WHERE NOT EXISTS (
                SELECT 1 FROM mailboxes b WHERE b.app_id = m.app_id AND b.id = m.mailbox_id);
            DELETE FROM mailbox_sides s WHERE NOT EXISTS (
                SELECT 1 FROM mailboxes b WHERE b.app_id = s.app_id AND b.id = s.mailbox_id);
            DELETE FROM nameplate_sides s WHERE NOT EXISTS (
                SELECT 1 FROM nameplates n WHERE n.app_id = s.app_id AND n.name = s.name);
            """, code: .write)
    }
}
