import Support

/// Long-poll bookkeeping: clients waiting for the next message of a thread, woken by the
/// ``SpaceAPI`` observer after a commit.
///
/// Each thread has a version that every new message bumps. A waiter registers only if the
/// version it saw before reading is still current, so a message committed between the read and
/// the registration is never missed.
final class MessageWaits: Sendable {
    private struct State {
        var versions: [String: UInt64] = [:]
        var waiters: [String: [UInt64: @Sendable () -> Void]] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// The key of a thread.
    static func key(space: String, thread: String) -> String { "\(space)/\(thread)" }

    /// The current version of `key`.
    func version(_ key: String) -> UInt64 {
        state.withLock { $0.versions[key] ?? 0 }
    }

    /// Registers `wake` for the next change of `key` if its version is still `seen`. Returns the
    /// waiter's id, or nil when a change already happened (read again instead).
    func register(_ key: String, seen: UInt64, wake: @escaping @Sendable () -> Void) -> UInt64? {
        state.withLock { state in
            guard (state.versions[key] ?? 0) == seen else { return nil }
            state.nextID += 1
            state.waiters[key, default: [:]][state.nextID] = wake
            return state.nextID
        }
    }

    /// Removes a waiter; true if it was still waiting (it has not been woken).
    func cancel(_ key: String, id: UInt64) -> Bool {
        state.withLock { state in
            let removed = state.waiters[key]?.removeValue(forKey: id) != nil
            if state.waiters[key]?.isEmpty == true { state.waiters[key] = nil }
            return removed
        }
    }

    /// Bumps the version of `key` and wakes everyone waiting on it (outside the lock).
    func notify(_ key: String) {
        let woken = state.withLock { state in
            state.versions[key, default: 0] += 1
            return state.waiters.removeValue(forKey: key) ?? [:]
        }
        for wake in woken.values { wake() }
    }

    /// Wakes every waiter (on shutdown, so long-polls answer at once instead of holding the drain).
    func wakeAll() {
        let woken = state.withLock { state in
            defer { state.waiters = [:] }
            return state.waiters.values.flatMap(\.values)
        }
        for wake in woken { wake() }
    }

    /// How many clients are waiting (for tests and logs).
    var waiterCount: Int {
        state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } }
    }
}
