import Dispatch
import Foundation
import Support

/// Tells the other nodes that this node has committed something to the change feed, with as
/// few `NOTIFY`s as possible.
///
/// Every notification costs the database a queue entry and a wake-up of every listening
/// node, and costs each of those a catch-up read; one per transaction would make all of that
/// grow with the commit rate. So a node sends at most one notification per `spacing`:
///
/// - A transaction that commits after a quiet spell (nothing sent for `spacing`, nothing
///   waiting) notifies in itself (``notifyInline()`` says so and the store adds
///   `pg_notify`): delivered at its commit, as early as possible.
/// - Any other transaction does not notify; after it commits the store calls
///   ``committed()``, and this notifier sends one `pg_notify` on its own connection and queue
///   `spacing` after the last notification, covering every commit made meanwhile.
///
/// The payload is the node's random feed name (nothing secret), so a node's own feed
/// connection ignores its own notifications.
///
/// A notification that cannot be sent (the database is away) is dropped with its
/// connection, and reopened on the next commit: the other nodes' periodic catch-up read
/// finds the entries anyway, so nothing is lost, only delayed by up to the poll interval.
final class PostgresNotifier: @unchecked Sendable {
    private struct State {
        var pending = false
        var scheduled = false
        var closed = false
        var lastSent = DispatchTime(uptimeNanoseconds: 0)
    }

    private let url: PostgresURL
    private let payload: String
    private let spacing: DispatchTimeInterval
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "eleven.relay.postgres-notify")
    /// Touched only on `queue`.
    private var connection: PostgresConnection?

    init(url: PostgresURL, payload: String, spacing: DispatchTimeInterval = .milliseconds(2)) {
        self.url = url
        self.payload = payload
        self.spacing = spacing
    }

    /// Whether the transaction about to commit should notify in itself (it then counts as
    /// this node's latest notification); if not, call ``committed()`` after it commits.
    func notifyInline() -> Bool {
        state.withLock { s in
            let now = DispatchTime.now()
            guard !s.closed, !s.scheduled, now >= s.lastSent + spacing else { return false }
            s.lastSent = now
            return true
        }
    }

    /// Something was committed to the feed without a notification: the other nodes hear of
    /// it soon.
    func committed() {
        let schedule: DispatchTime? = state.withLock { s in
            guard !s.closed else { return nil }
            s.pending = true
            guard !s.scheduled else { return nil }
            s.scheduled = true
            return s.lastSent + spacing
        }
        guard let schedule else { return }
        queue.asyncAfter(deadline: schedule) { [self] in send() }
    }

    /// Stops notifying and closes the connection.
    func close() {
        state.withLock { $0.closed = true }
        queue.sync {
            connection?.close()
            connection = nil
        }
    }

    /// On the queue: one notification for everything committed so far, then again (spaced) if
    /// more was committed while it was on its way.
    private func send() {
        guard
            state.withLock({ s in
                s.pending = false
                return !s.closed
            })
        else { return }
        do throws(RelayStorageError) {
            if connection == nil { connection = try PostgresConnection(url) }
            try connection?.execute(
                "SELECT pg_notify($1, $2)", [PostgresChangeFeed.channel, payload], code: .write)
        } catch {
            connection?.close()
            connection = nil
        }
        let again: DispatchTime? = state.withLock { s in
            s.lastSent = .now()
            guard s.pending, !s.closed else {
                s.scheduled = false
                return nil
            }
            return s.lastSent + spacing
        }
        if let again { queue.asyncAfter(deadline: again) { [self] in send() } }
    }
}
