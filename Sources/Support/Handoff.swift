import Foundation

/// A value handed from one thread to another: `put` it once (a later put replaces it), `take`
/// waits for it with a time limit. For blocking callers such as the CLI, the bot and tests.
public final class Handoff<Value>: @unchecked Sendable {
    private let value = Locked<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    public init() {}

    public func put(_ newValue: Value) {
        value.withLock { $0 = newValue }
        ready.signal()
    }

    /// The value, or nil when none was put within `timeout` seconds.
    public func take(timeout: TimeInterval = 30) -> Value? {
        guard ready.wait(timeout: .now() + timeout) == .success else { return nil }
        return value.withLock { $0 }
    }
}
