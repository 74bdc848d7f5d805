import Foundation

/// A lock handed to its waiters in the order they asked (a ticket lock). With many threads
/// taking turns at one short critical section (a bot admitting joiners one at a time), a plain
/// mutex lets a thread that just unlocked take it again while others keep waiting, so a few
/// waiters wait many turns: the tail of the latency, not its mean. Here each waits at most for
/// those who came before it.
public final class FairLock: NSLocking, @unchecked Sendable {
    private let condition = NSCondition()
    /// The next ticket to hand out and the ticket that holds the lock (under `condition`).
    private var issued: UInt64 = 0
    private var serving: UInt64 = 0

    public init() {}

    /// Threads waiting for the lock now (for tests).
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return Int(issued &- serving) - (issued == serving ? 0 : 1)
    }

    public func lock() {
        condition.lock()
        let ticket = issued
        issued &+= 1
        while serving != ticket { condition.wait() }
        condition.unlock()
    }

    public func unlock() {
        condition.lock()
        serving &+= 1
        condition.broadcast()
        condition.unlock()
    }
}
