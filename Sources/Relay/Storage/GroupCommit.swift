import Dispatch
import Foundation
import Support

/// Commit counters of a storage back-end, for tests and metrics.
public struct RelayStorageStatistics: Sendable, Equatable {
    /// Transactions committed.
    public var transactions = 0
    /// `enqueue` calls whose writes were committed.
    public var batches = 0
    public var writes = 0
}

/// The group commit both storage back-ends share: writes queued while a transaction is being
/// committed are committed together in the next one, on the back-end's own serial queue, and
/// their completions run after that commit (with its outcome). The back-end supplies only the
/// transaction itself.
///
/// With a `spacing`, a commit that follows a busy one (writes to at least `busyMailboxes`
/// mailboxes: many exchanges at once) starts no sooner than `spacing` after that one started,
/// so what arrives meanwhile shares it. Every commit writes and syncs pages that the next one
/// writes again (the WAL's last, half-written page, the tables' leaves and interior pages):
/// fewer, larger commits write fewer bytes per change. After a commit for one or two
/// mailboxes (an exchange or two at a time, whose two sides wait for each other's messages)
/// the next starts at once: holding it would only add its wait to every round trip, and
/// nothing would share it. Completions still run as soon as their own commit is durable.
final class GroupCommit: Sendable {
    typealias Completion = @Sendable (RelayStorageError?) -> Void

    private struct Pending {
        var items: [(writes: [StorageOp], completion: Completion)] = []
        var drainScheduled = false
        var closed = false
        var statistics = RelayStorageStatistics()
        /// When the last commit started (`DispatchTime` nanoseconds), and how many mailboxes
        /// it wrote to.
        var lastStart: UInt64 = 0
        var lastMailboxes = 0
        /// How long the last commit took (nanoseconds): mostly the disk's sync.
        var lastCost: UInt64 = 0
    }

    private let pending = Locked(Pending())
    private let queue: DispatchQueue
    private let spacingNanos: UInt64
    private let busyMailboxes: Int
    private let costFactor: UInt64?

    /// `queue` is the back-end's serial queue, where every commit runs. With a `costFactor`
    /// the hold is at most that many times what the last commit took: where a sync costs
    /// nothing (tmpfs) a hold would save nothing and only add its wait.
    init(queue: DispatchQueue, spacing: Duration = .zero, busyMailboxes: Int = 3, costFactor: Int? = nil) {
        self.queue = queue
        self.busyMailboxes = busyMailboxes
        self.costFactor = costFactor.map { UInt64(max($0, 0)) }
        let (seconds, attoseconds) = spacing.components
        spacingNanos = UInt64(max(seconds, 0)) * 1_000_000_000 + UInt64(max(attoseconds, 0) / 1_000_000_000)
    }

    /// Queues `writes`; the first call since the last commit schedules `drain` on the queue
    /// (the back-end's method, which calls `commitPending`). After `close()` the completion
    /// gets a `closed` error instead.
    func enqueue(
        _ writes: [StorageOp], completion: @escaping Completion, drain: @escaping @Sendable () -> Void
    ) {
        let accepted: Bool = pending.withLock { p in
            guard !p.closed else { return false }
            p.items.append((writes, completion))
            if !p.drainScheduled {
                p.drainScheduled = true
                queue.async(execute: drain)
            }
            return true
        }
        if !accepted {
            queue.async { completion(RelayStorageError(.closed, "the store is closed")) }
        }
    }

    /// On the queue: commits everything queued so far with `transaction` (all the writes, in
    /// order, in one transaction), counts it, then runs the completions with the outcome.
    func commitPending(_ transaction: ([StorageOp]) throws(RelayStorageError) -> Void) {
        holdAfterBusyCommit()
        let items = pending.withLock { p in
            let items = p.items
            p.items = []
            p.drainScheduled = false
            if !items.isEmpty { p.lastStart = DispatchTime.now().uptimeNanoseconds }
            return items
        }
        guard !items.isEmpty else { return }
        let writes = items.flatMap(\.writes)
        if spacingNanos > 0 {
            let mailboxes = Self.mailboxCount(writes, upTo: busyMailboxes)
            pending.withLock { $0.lastMailboxes = mailboxes }
        }
        var failure: RelayStorageError?
        do {
            try transaction(writes)
        } catch {
            failure = error
        }
        if spacingNanos > 0 {
            let end = DispatchTime.now().uptimeNanoseconds
            pending.withLock { p in p.lastCost = end &- p.lastStart }
        }
        if failure == nil {
            pending.withLock { p in
                p.statistics.transactions += 1
                p.statistics.batches += items.count
                p.statistics.writes += writes.count
            }
        }
        CommitBatch.run { for item in items { item.completion(failure) } }
    }

    /// On the queue, before taking the pending writes: waits until `spacing` after the start of
    /// the last commit if that one was busy. Blocking the queue (not rescheduling) keeps
    /// `flush` and `close`, which wait for the queue, behind the commit.
    private func holdAfterBusyCommit() {
        guard spacingNanos > 0 else { return }
        let wait: UInt64 = pending.withLock { p in
            guard p.lastMailboxes >= busyMailboxes, !p.items.isEmpty else { return 0 }
            let hold = costFactor.map { min(spacingNanos, $0 &* p.lastCost) } ?? spacingNanos
            let due = p.lastStart &+ hold
            let now = DispatchTime.now().uptimeNanoseconds
            return due > now ? min(due - now, spacingNanos) : 0
        }
        if wait > 0 { usleep(UInt32(wait / 1000)) }
    }

    /// How many distinct mailboxes `writes` change, counted up to `limit` (all the hold needs
    /// to know): a few comparisons, where a `Set` of every commit's keys hashed each key's
    /// strings.
    static func mailboxCount(_ writes: [StorageOp], upTo limit: Int) -> Int {
        var seen: [MailboxKey] = []
        for write in writes {
            guard let key = write.mailbox, !seen.contains(key) else { continue }
            seen.append(key)
            if seen.count >= limit { break }
        }
        return seen.count
    }

    /// Refuses further writes (already queued ones are still committed).
    func close() {
        pending.withLock { $0.closed = true }
    }

    var statistics: RelayStorageStatistics { pending.withLock { $0.statistics } }
}

extension StorageOp {
    /// The mailbox the write changes; nil for a nameplate's.
    var mailbox: MailboxKey? {
        switch self {
        case .putNameplate, .putNameplateSide, .deleteNameplate: nil
        case .putMailbox(let key, _, _), .touchMailbox(let key, _), .putMailboxSide(let key, _, _),
            .appendMessage(let key, _), .deleteMailbox(let key):
            key
        }
    }
}

/// The completions of one commit, run as one batch on the storage's thread: what a completion
/// defers with ``afterBatch(_:_:)`` runs once, after all of them. The relay service reveals
/// the frames a commit released once for the whole commit (one hand-off to each connection
/// thread) instead of once per completion: handed over one completion at a time, a loop woke
/// for the first hand-off and sent it while the next was being encoded, one `send` each.
enum CommitBatch {
    private final class Deferred {
        var actions: [(owner: ObjectIdentifier, action: () -> Void)] = []
    }

    /// The batch running on this thread (a pthread key: Foundation's `threadDictionary` cost
    /// about 1% of the relay's CPU, its string key hashed through `NSString`).
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Runs `body`, then what it deferred.
    static func run(_ body: () -> Void) {
        let deferred = Deferred()
        let outer = pthread_getspecific(key)
        withExtendedLifetime(deferred) {
            pthread_setspecific(key, Unmanaged.passUnretained(deferred).toOpaque())
            body()
            pthread_setspecific(key, outer)
        }
        for (_, action) in deferred.actions { action() }
    }

    /// Runs `action` when the batch running on this thread ends, once per `owner` however
    /// often it is asked; at once when no batch runs here.
    static func afterBatch(_ owner: AnyObject, _ action: @escaping () -> Void) {
        guard let raw = pthread_getspecific(key) else {
            action()
            return
        }
        let deferred = Unmanaged<Deferred>.fromOpaque(raw).takeUnretainedValue()
        let id = ObjectIdentifier(owner)
        guard !deferred.actions.contains(where: { $0.owner == id }) else { return }
        deferred.actions.append((id, action))
    }
}
