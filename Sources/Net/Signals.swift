import Dispatch
import Foundation

/// Runs a handler when the process receives a signal (SIGHUP to reload certificates, SIGTERM
/// to shut down gracefully). The signal's default action is turned off while watched.
public final class SignalWatcher: @unchecked Sendable {
    // Dispatch sources are thread-safe; the type just is not marked Sendable.
    private let source: any DispatchSourceSignal

    /// Starts watching `signal`; `handler` runs on a background queue, never in signal context.
    public init(signal: Int32, handler: @escaping @Sendable () -> Void) {
        Glibc.signal(signal, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
        source.setEventHandler(handler: handler)
        source.resume()
        self.source = source
    }

    /// Stops watching (the signal stays ignored).
    public func cancel() { source.cancel() }
}
