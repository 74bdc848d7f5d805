/// Exponential back-off between retries: the delay in force, grown by `factor` after each failed
/// try up to `cap`, and back to `first` after a success. A value with no clock and no sleeping of
/// its own: the caller owns time (a machine may hold one; a driver sleeps for ``delay``).
public struct Backoff: Sendable, Equatable {
    public let first: Double
    public let factor: Double
    public let cap: Double
    /// Seconds to wait before the next try.
    public private(set) var delay: Double

    public init(first: Double, factor: Double = 2, cap: Double) {
        self.first = first
        self.factor = factor
        self.cap = cap
        self.delay = first
    }

    /// After a failed try: the next wait is longer, up to the cap.
    public mutating func grow() { delay = min(delay * factor, cap) }

    /// After a success: the next failure waits the first delay again.
    public mutating func reset() { delay = first }
}
