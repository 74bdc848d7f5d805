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
final class GroupCommit: Sendable {
    typealias Completion = @Sendable (RelayStorageError?) -> Void

    private struct Pending {
        var items: [(writes: [StorageOp], completion: Completion)] = []
        var drainScheduled = false
        var closed = false
        var statistics = RelayStorageStatistics()
    }

    private let pending = Locked(Pending())
    private let queue: DispatchQueue

    /// `queue` is the back-end's serial queue, where every commit runs.
    init(queue: DispatchQueue) {
        self.queue = queue
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
        let items = pending.withLock { p in
            let items = p.items
            p.items = []
            p.drainScheduled = false
            return items
        }
        guard !items.isEmpty else { return }
        let writes = items.flatMap(\.writes)
        var failure: RelayStorageError?
        do {
            try transaction(writes)
        } catch {
            failure = error
        }
        if failure == nil {
            pending.withLock { p in
                p.statistics.transactions += 1
                p.statistics.batches += items.count
                p.statistics.writes += writes.count
            }
        }
        for item in items { item.completion(failure) }
    }

    /// Refuses further writes (already queued ones are still committed).
    func close() {
        pending.withLock { $0.closed = true }
    }

    var statistics: RelayStorageStatistics { pending.withLock { $0.statistics } }
}
