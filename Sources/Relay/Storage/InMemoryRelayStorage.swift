import Dispatch
import Support

/// Storage that keeps the snapshot in memory: for unit tests, and for a relay that may lose
/// its state on restart. Honours the same contract as the SQLite store (completions run later
/// on the store's own queue), and can be told to fail commits.
public final class InMemoryRelayStorage: RelayStorage {
    private struct State {
        var snapshot: RelaySnapshot
        var closed = false
        var failure: RelayStorageError?
        var commits = 0
    }

    private let state: Locked<State>
    private let queue = DispatchQueue(label: "eleven.relay.memory-store")

    public init(snapshot: RelaySnapshot = .empty) {
        state = Locked(State(snapshot: snapshot))
    }

    public func load() throws(RelayStorageError) -> RelaySnapshot {
        state.withLock { $0.snapshot }
    }

    public func enqueue(_ writes: [StorageOp], completion: @escaping @Sendable (RelayStorageError?) -> Void) {
        let error: RelayStorageError? = state.withLock { s in
            if s.closed { return RelayStorageError(.closed, "the store is closed") }
            if let failure = s.failure { return failure }
            s.snapshot.apply(writes)
            s.commits += 1
            return nil
        }
        queue.async { completion(error) }
    }

    public func close() {
        queue.sync {}
        state.withLock { $0.closed = true }
    }

    /// What has been committed.
    public var snapshot: RelaySnapshot { state.withLock { $0.snapshot } }

    /// Number of `enqueue` calls committed.
    public var commitCount: Int { state.withLock { $0.commits } }

    /// Makes every later commit fail with `error` (nil to recover).
    public func setFailure(_ error: RelayStorageError?) {
        state.withLock { $0.failure = error }
    }

    /// Waits until every completion queued so far has run.
    public func waitForCompletions() { queue.sync {} }
}
