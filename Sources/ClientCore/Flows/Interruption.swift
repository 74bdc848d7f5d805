import Foundation
import JoinProtocol
import Net
import Support

/// A person's request to stop (Ctrl-C, SIGTERM), set from a signal watcher and looked at by
/// every long wait of the flows, so an interrupted side can tell the other one it left before the
/// process ends instead of leaving it waiting until its time limit.
public final class Interruption: Sendable {
    private let flag = Locked(false)
    /// Interrupting the parent interrupts this too (one attendant of several stops the others).
    private let parent: Interruption?
    /// Interrupted too whenever this holds (looked at by each wait).
    private let condition: (@Sendable () -> Bool)?
    /// The signal watchers of ``onSignals(grace:)``, alive as long as this.
    private let watchers = Locked<[SignalWatcher]>([])

    public init(parent: Interruption? = nil, when condition: (@Sendable () -> Bool)? = nil) {
        self.parent = parent
        self.condition = condition
    }

    /// Asks every wait that looks at this to stop.
    public func interrupt() { flag.withLock { $0 = true } }

    public var isInterrupted: Bool {
        flag.withLock { $0 } || parent?.isInterrupted == true || condition?() == true
    }

    /// How often a wait looks: short enough that the other side hears at once, long enough that
    /// a waiting process costs nothing.
    static let slice: Duration = .milliseconds(250)
}

extension RendezvousConnection {
    /// The next event by `deadline`, looking at `interruption` every ``Interruption/slice``: nil
    /// once interrupted. Throws `.timedOut` at the deadline, as `next(timeout:)` does.
    func next(until deadline: ContinuousClock.Instant, unless interruption: Interruption?)
        throws(RelayConnectionError) -> RendezvousEvent?
    {
        guard let interruption else { return try next(timeout: deadline - .now) }
        while true {
            if interruption.isInterrupted { return nil }
            let sliceEnd = min(deadline, .now + Interruption.slice)
            do {
                return try next(timeout: sliceEnd - .now)
            } catch {
                guard case .timedOut = error, ContinuousClock.now < deadline else { throw error }
            }
        }
    }
}

extension Interruption {
    /// An interruption set by SIGINT (Ctrl-C) and SIGTERM from now on, for a command whose waits
    /// look at it. A process whose current step does not look (a space server call) still ends:
    /// `grace` seconds after the signal it exits with status 1.
    public static func onSignals(grace: Double = 10) -> Interruption {
        let interruption = Interruption()
        let watchers = [SIGINT, SIGTERM].map {
            SignalWatcher(signal: $0) {
                interruption.interrupt()
                DispatchQueue.global().asyncAfter(deadline: .now() + grace) { _exit(1) }
            }
        }
        interruption.keep(watchers)
        return interruption
    }

    private func keep(_ watchers: [SignalWatcher]) { self.watchers.withLock { $0 += watchers } }
}
