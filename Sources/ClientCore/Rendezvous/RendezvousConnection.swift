import Foundation
import JoinProtocol
import Net

/// Why talking to the relay failed, as a person should hear it.
public enum RelayConnectionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The first connection could not be made.
    case unreachable(url: String, reason: String)
    /// The rendezvous itself failed (crowded, unwelcome, relay error, protocol violation).
    case rendezvous(RendezvousError)
    /// Nothing happened before the deadline.
    case timedOut(String)

    public var code: String {
        switch self {
        case .unreachable: "relay_unreachable"
        case .rendezvous(let e): e.code
        case .timedOut: "timed_out"
        }
    }

    public var description: String {
        switch self {
        case .unreachable(let url, let reason): "can't reach the relay at \(url): \(reason)"
        case .rendezvous(let e): e.description
        case .timedOut(let what): what
        }
    }
}

/// What the application sees from a rendezvous.
public enum RendezvousEvent: Equatable, Sendable {
    case allocated(Rendezvous.Nameplate)
    case received(phase: Rendezvous.Phase, body: [UInt8])
    case motd(String)
    case closed
}

/// Owns the WebSocket to the relay for one `RendezvousMachine`: connects, performs the machine's
/// actions, and after any connection loss reconnects with back-off (same side) so the machine
/// resumes. Blocking API for command-line use; never call it on an event-loop thread.
public final class RendezvousConnection {
    public let url: String
    public private(set) var machine: RendezvousMachine
    private var socket: WebSocket?
    private var events: [RendezvousEvent] = []
    private let connectTimeout: Duration
    /// Back-off after a lost connection: first delay, growth factor and cap, as Python's client.
    private let backoff: (first: Double, factor: Double, cap: Double) = (0.25, 1.5, 10)
    /// Called with each reconnect attempt's delay, for progress output ("Reconnecting…").
    public var onReconnect: ((Double) -> Void)?
    /// Why the last connection was lost (the socket's error), for diagnostics; nil before any loss.
    public private(set) var lostBecause: String?

    public init(url: String, machine: RendezvousMachine, connectTimeout: Duration = .seconds(10)) {
        self.url = url
        self.machine = machine
        self.connectTimeout = connectTimeout
    }

    /// Opens the first connection. An unreachable relay is an error here; later losses are
    /// retried by `next(timeout:)`.
    public func start() throws(RelayConnectionError) {
        // A flaky network can drop the very first handshake: try a few times, briefly, before
        // telling the person the relay cannot be reached. A malformed URL fails at once.
        var delay = backoff.first
        for attempt in 1...Self.firstConnectAttempts {
            do {
                socket = try WebSocketClient.connect(url: url, timeout: connectTimeout)
                break
            } catch {
                guard attempt < Self.firstConnectAttempts, error.code != .invalidURL else {
                    throw .unreachable(url: url, reason: Self.reason(error))
                }
                Thread.sleep(forTimeInterval: delay)
                delay *= backoff.factor
            }
        }
        try perform(machine.connected())
    }

    /// Checks that the relay at `url` accepts a WebSocket connection (then closes it): tells a
    /// relay that is down from a peer that does not answer.
    public static func probe(url: String, timeout: Duration = .seconds(5)) throws(RelayConnectionError) {
        do {
            let socket = try WebSocketClient.connect(url: url, timeout: timeout)
            socket.close()
        } catch {
            throw .unreachable(url: url, reason: reason(error))
        }
    }

    /// How many times the first connection is tried (about 2 s of back-off in all).
    static let firstConnectAttempts = 5

    /// Queues a message for the peer (sent now, or after the next reconnect).
    public func send(phase: Rendezvous.Phase, body: [UInt8]) throws(RelayConnectionError) {
        do {
            try perform(try machine.send(phase: phase, body: body))
        } catch let error as RelayConnectionError {
            throw error
        } catch let error as RendezvousError {
            throw .rendezvous(error)
        } catch {
            throw .rendezvous(.misuse("\(error)"))
        }
    }

    /// Closes the mailbox with `mood` and waits (up to `timeout`) for the relay to confirm.
    public func close(mood: Rendezvous.Mood, timeout: Duration = .seconds(5)) {
        _ = try? perform(machine.close(mood: mood))
        let deadline = ContinuousClock.now + timeout
        while !machine.isClosed && ContinuousClock.now < deadline {
            guard let event = try? next(until: deadline) else { break }
            if event == .closed { break }
        }
        socket?.close()
        socket = nil
    }

    /// Drops the connection without closing the mailbox (a process that will resume later).
    public func disconnect() {
        socket?.close()
        socket = nil
        machine.disconnected()
    }

    /// The next event, waiting up to `timeout` and reconnecting as needed.
    public func next(timeout: Duration) throws(RelayConnectionError) -> RendezvousEvent {
        try next(until: ContinuousClock.now + timeout)
    }

    /// Processes the relay's messages until everything we sent is stored (echoed) by the relay.
    /// Events that arrive meanwhile are kept for `next(timeout:)`.
    public func waitUntilEchoed(timeout: Duration) throws(RelayConnectionError) {
        _ = try next(until: ContinuousClock.now + timeout, stopWhen: { $0.machine.allEchoed })
    }

    private func next(until deadline: ContinuousClock.Instant) throws(RelayConnectionError) -> RendezvousEvent
    {
        // Without a stop condition, only an event ends the wait.
        guard let event = try next(until: deadline, stopWhen: nil) else {
            throw .timedOut("the other side did not answer in time")
        }
        return event
    }

    /// Waits for the next event, or (with `stopWhen`) until the condition holds, returning nil.
    private func next(
        until deadline: ContinuousClock.Instant, stopWhen: ((RendezvousConnection) -> Bool)?
    ) throws(RelayConnectionError) -> RendezvousEvent? {
        var delay = backoff.first
        while true {
            if let stopWhen, stopWhen(self) { return nil }
            if stopWhen == nil && !events.isEmpty { return events.removeFirst() }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw .timedOut("the other side did not answer in time") }
            guard let socket else {
                // Reconnect with back-off, bounded by the deadline.
                onReconnect?(delay)
                Thread.sleep(forTimeInterval: min(delay, Self.seconds(remaining)))
                delay = min(delay * backoff.factor, backoff.cap)
                if let fresh = try? WebSocketClient.connect(url: url, timeout: min(connectTimeout, remaining))
                {
                    self.socket = fresh
                    delay = backoff.first
                    try perform(machine.connected())
                }
                continue
            }
            let message: WebSocketMessage
            do {
                message = try socket.receive(timeout: remaining)
            } catch  where error.code == .timedOut {
                continue
            } catch {
                lostBecause = error.message
                socket.close()
                self.socket = nil
                machine.disconnected()
                continue
            }
            let text: String
            switch message {
            case .text(let t): text = t
            case .binary(let b): text = String(decoding: b, as: UTF8.self)
            }
            let decoded: ServerMessage
            do {
                decoded = try ServerMessage(json: text)
            } catch {
                throw .rendezvous(error)
            }
            try perform(machine.received(decoded))
        }
    }

    private func perform(_ actions: [RendezvousAction]) throws(RelayConnectionError) {
        for action in actions {
            switch action {
            case .send(let message):
                socket?.send(text: message.json)
            case .allocated(let nameplate):
                events.append(.allocated(nameplate))
            case .received(let phase, let body):
                events.append(.received(phase: phase, body: body))
            case .motd(let text):
                events.append(.motd(text))
            case .closed:
                events.append(.closed)
            case .failed(let error):
                throw .rendezvous(error)
            }
        }
    }

    private static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private static func reason(_ error: NetError) -> String {
        // NetError's message already names the cause (connection refused, timed out, TLS).
        error.message
    }
}
