import Foundation

/// A value behind a `pthread_mutex_t`: the one lock type of this package.
///
/// Used instead of `Synchronization.Mutex` wherever code may run under
/// `swift test --sanitize=thread`: ThreadSanitizer on Linux understands pthread mutexes but not
/// the futex under `Mutex`, so a bare `Mutex<[Int]>` appended to from `concurrentPerform` is
/// reported as a race, and such false reports would hide real ones.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
