import Foundation

extension TestSupport {
    /// Runs blocking test work (child processes, blocking sockets, waits) on a thread of its own
    /// and awaits it. Swift Testing runs test bodies on the cooperative pool, which has one thread
    /// per core (two here): a few long blocking tests in parallel would starve every async test
    /// and async server route in the process. Long blocking tests wrap their body in this.
    public static func offPool<T: Sendable>(
        _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try body() })
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }
}
