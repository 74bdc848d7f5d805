import Foundation

/// Where the time of day comes from: seconds since 1970-01-01 UTC, with fractions.
///
/// Time is an input, not something a component looks up: the pure machines get `now` with every
/// event, and whoever drives them reads it from the clock they were given. The programs pass
/// ``SystemClock``; tests pass a ``ManualClock`` and move it (an expiry, a challenge's lifetime, a
/// clock set back) without waiting. One type for every component so that a test moves one clock.
public protocol WallClock: Sendable {
    /// Seconds since 1970-01-01 UTC.
    func now() -> Double
}

extension WallClock {
    /// Whole seconds since 1970 (rounded toward zero, as `Int64(Date().timeIntervalSince1970)`),
    /// the unit of every stored and signed time outside the relay.
    public func seconds() -> Int64 { Int64(now()) }
}

/// The computer's clock.
public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Double { Date().timeIntervalSince1970 }
}

/// A clock that stands still until the test sets or advances it (thread-safe).
public final class ManualClock: WallClock {
    private let time: Locked<Double>

    public init(_ start: Double = 1_800_000_000) { time = Locked(start) }

    public func now() -> Double { time.withLock { $0 } }

    /// Moves the time by `delta` seconds (negative: the clock is set back).
    public func advance(by delta: Double) { time.withLock { $0 += delta } }

    /// Sets the time to `secondsSince1970`.
    public func set(to secondsSince1970: Double) { time.withLock { $0 = secondsSince1970 } }
}
