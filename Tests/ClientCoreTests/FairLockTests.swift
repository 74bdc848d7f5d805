import Foundation
import Testing

@testable import ClientCore

@Suite struct FairLockTests {
    /// Threads that queue for a held lock one after another get it in that order, each once,
    /// also when the thread that just unlocked asks again at once (a plain mutex may hand it to
    /// whichever thread runs first).
    @Test func waitersGetTheLockInTheOrderTheyAsked() {
        let lock = FairLock()
        let order = Mutexed<[Int]>([])
        let group = DispatchGroup()
        lock.lock()
        for n in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                lock.lock()
                order.change { $0.append(n) }
                lock.unlock()
                // Straight back in line: it must come after every thread already waiting.
                lock.lock()
                order.change { $0.append(100 + n) }
                lock.unlock()
                group.leave()
            }
            // Bounded wait until thread n is in line, so the order of asking is known.
            for _ in 0..<5000 where lock.waiting < n + 1 { usleep(1000) }
            #expect(lock.waiting == n + 1)
        }
        lock.unlock()
        #expect(group.wait(timeout: .now() + 30) == .success)
        let seen = order.value
        #expect(Array(seen.prefix(8)) == Array(0..<8))
        #expect(Set(seen.dropFirst(8)) == Set(100..<108))
    }
}

/// A value shared by the test's threads.
private final class Mutexed<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func change(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}
