import Foundation

/// A lock handed to its waiters in the order they asked. With many threads taking turns at one
/// short critical section (a bot admitting joiners one at a time), a plain mutex lets a thread
/// that just unlocked take it again while others keep waiting, so a few waiters wait many turns:
/// the tail of the latency, not its mean. Here each waits at most for those who came before it.
/// Unlocking hands the lock straight to the first waiter and wakes only that one.
public final class FairLock: NSLocking, @unchecked Sendable {
    private let mutex = NSLock()
    /// Whether someone holds the lock (or it was handed to a waiter not yet awake), and who
    /// waits, first in line first (under `mutex`).
    private var held = false
    private var waiters: [DispatchSemaphore] = []
    private var first = 0

    public init() {}

    /// Threads waiting for the lock now (for tests).
    var waiting: Int { mutex.withLock { waiters.count - first } }

    public func lock() {
        mutex.lock()
        guard held else {
            held = true
            mutex.unlock()
            return
        }
        let turn = DispatchSemaphore(value: 0)
        waiters.append(turn)
        mutex.unlock()
        turn.wait()
    }

    public func unlock() {
        mutex.lock()
        defer { mutex.unlock() }
        guard first < waiters.count else {
            held = false
            waiters.removeAll(keepingCapacity: true)
            first = 0
            return
        }
        // Still held: it passes to the first waiter.
        let next = waiters[first]
        first += 1
        // A lock never free for long would keep every semaphore it handed on: drop them.
        if first >= 64 {
            waiters.removeFirst(first)
            first = 0
        }
        next.signal()
    }
}
