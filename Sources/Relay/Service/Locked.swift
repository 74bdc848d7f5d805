import Foundation

/// A value guarded by a pthread mutex (`NSLock`).
///
/// Used instead of `Synchronization.Mutex` because ThreadSanitizer on Linux does not see that
/// type's futex and reports false races (checked: a bare `Mutex<[Int]>` appended to from
/// `concurrentPerform` is flagged), which would hide real ones in `swift test --sanitize=thread`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
