import Foundation
import JoinProtocol
import Mailbox
import Net
import Support

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
/// resumes. Blocking API for command-line use; never call it on an event-loop thread. The
/// socket is read and written by the calling thread (``BlockingWebSocket``): every relay
/// message would otherwise wake it from the event loop's thread.
public final class RendezvousConnection {
    public let url: String
    public private(set) var machine: RendezvousMachine
    private var socket: BlockingWebSocket?
    private var events: [RendezvousEvent] = []
    private let connectTimeout: Duration
    /// Back-off after a lost connection: first delay, growth factor and cap, as Python's client.
    static let backoff = Backoff(first: 0.25, factor: 1.5, cap: 10)
    /// The back-off in force: the delay before the next reconnect attempt, and when that attempt
    /// may be made. Kept across waits, so a caller that waits in short slices (an interruptible
    /// wait polls every quarter second) does not turn the back-off into four reconnects a second.
    private var reconnect = RendezvousConnection.backoff
    private var nextReconnect: ContinuousClock.Instant?
    /// Called with each reconnect attempt's delay, for progress output ("Reconnecting…").
    public var onReconnect: ((Double) -> Void)?
    /// Why the last connection was lost (the socket's error), for diagnostics; nil before any loss.
    public private(set) var lostBecause: String?
    /// Called about once a second, once solving a relay's proof of work (its welcome's
    /// `permission-required` hashcash) has taken more than a moment: the bits asked for and
    /// the seconds spent. By default a line on standard error.
    public var onPermissionWork: ((_ bits: Int, _ seconds: Double) -> Void)? = { bits, seconds in
        // One line after the first second, then one every ten: it may take a while.
        let whole = Int(seconds)
        guard whole <= 1 || whole % 10 == 0 else { return }
        let line =
            whole <= 1
            ? "Solving the relay's proof of work (\(bits) bits, about \(1 << bits) tries)…"
            : "Still solving the relay's proof of work: \(whole) s so far…"
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
    /// How long solving one proof of work may take before the connection gives up.
    public var permissionWorkLimit: Duration = .seconds(300)

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
        var retry = Self.backoff
        for attempt in 1...Self.firstConnectAttempts {
            do {
                let fresh = try WebSocketClient.connectBlocking(
                    url: url, options: Self.options, timeout: connectTimeout)
                if try begin(fresh, timeout: connectTimeout) { return }
                throw NetError(.connectionClosed, lostBecause ?? "the relay closed the connection")
            } catch let error as RelayConnectionError {
                throw error
            } catch {
                let error = error as? NetError ?? NetError(.connectFailed, "\(error)")
                guard attempt < Self.firstConnectAttempts, error.code != .invalidURL else {
                    throw .unreachable(url: url, reason: Self.reason(error))
                }
                Thread.sleep(forTimeInterval: retry.delay)
                retry.grow()
            }
        }
    }

    /// Starts a fresh connection: the welcome comes first, and when it asks for a hashcash
    /// stamp (`permission-required`) the stamp goes before anything else, since the relay
    /// refuses `bind` without one and each stamp serves once. Then the machine binds and
    /// resumes, and sees the welcome (its motd, or the error that ends the rendezvous). False
    /// when the connection was lost before the welcome.
    private func begin(_ fresh: BlockingWebSocket, timeout: Duration) throws(RelayConnectionError) -> Bool {
        let first: WebSocketMessage
        do {
            first = try fresh.receive(timeout: timeout)
        } catch {
            lostBecause = error.message
            fresh.close()
            return false
        }
        let decoded: ServerMessage
        do throws(RelayConnectionError) {
            decoded = try Self.decode(first)
        } catch {
            fresh.close()
            throw error
        }
        socket = fresh
        if case .welcome(let welcome) = decoded, welcome.error == nil,
            let request = HashcashRequest(welcome: welcome)
        {
            fresh.send(text: HashcashRequest.submission(stamp: try solve(request)).encoded)
        }
        try perform(machine.connected())
        try perform(machine.received(decoded))
        return true
    }

    /// Finds a stamp for `request`: bounded in bits and in time, progress reported after a
    /// moment.
    private func solve(_ request: HashcashRequest) throws(RelayConnectionError) -> String {
        guard request.bits <= HashcashStamp.maximumBits else {
            throw .rendezvous(
                .unwelcome(
                    "it asks for a proof of work of \(request.bits) bits; eleven does at most "
                        + "\(HashcashStamp.maximumBits)"))
        }
        var generator = SystemRandomNumberGenerator()
        let rand = String((0..<16).map { _ in "0123456789abcdef".randomElement(using: &generator)! })
        let start = ContinuousClock.now
        var reported = start
        let limit = permissionWorkLimit
        let report = onPermissionWork
        let stamp = HashcashStamp.mint(request, date: Date(), rand: rand) { _ in
            let now = ContinuousClock.now
            if now - reported >= .seconds(1) {
                reported = now
                report?(request.bits, Self.seconds(now - start))
            }
            return now - start < limit
        }
        guard let stamp else {
            throw .timedOut("the relay's proof of work (\(request.bits) bits) took longer than \(limit)")
        }
        return stamp
    }

    /// Checks that the relay at `url` accepts a WebSocket connection (then closes it): tells a
    /// relay that is down from a peer that does not answer.
    public static func probe(url: String, timeout: Duration = .seconds(5)) throws(RelayConnectionError) {
        do {
            let socket = try WebSocketClient.connectBlocking(url: url, options: options, timeout: timeout)
            socket.close()
        } catch {
            throw .unreachable(url: url, reason: reason(error))
        }
    }

    /// Accepts the relay's `message` carrying the largest body the relay takes from a client.
    static let options: WebSocketOptions = {
        var options = WebSocketOptions()
        options.maxFrameBytes = WormholeLimits.maximumRelayMessageBytes
        options.maxMessageBytes = WormholeLimits.maximumRelayMessageBytes
        return options
    }()

    static let tooLargeReason =
        "a message was too large for the relay connection (WebSocket close 1009); "
        + "eleven sends at most \(WormholeLimits.maximumMessageBytes) bytes per message"

    /// How many times the first connection is tried (about 2 s of back-off in all).
    static let firstConnectAttempts = 5

    /// Queues a message for the peer (sent now, or after the next reconnect). `echo` false asks
    /// the relay for no copy back: for a message the peer answers, whose answer is its receipt
    /// (``RendezvousMachine/send(phase:body:echo:)``); ``waitUntilEchoed(timeout:)`` does not
    /// wait for it.
    public func send(phase: Rendezvous.Phase, body: [UInt8], echo: Bool = true) throws(RelayConnectionError) {
        do {
            try perform(try machine.send(phase: phase, body: body, echo: echo))
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

    /// Processes the relay's messages until everything we sent asking for an echo is stored
    /// (echoed) by the relay. Events that arrive meanwhile are kept for `next(timeout:)`.
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
        while true {
            if let stopWhen, stopWhen(self) { return nil }
            if stopWhen == nil && !events.isEmpty { return events.removeFirst() }
            let now = ContinuousClock.now
            let remaining = deadline - now
            guard remaining > .zero else { throw .timedOut("the other side did not answer in time") }
            guard let socket else {
                // Reconnect with back-off, bounded by the deadline: wait out the delay in force
                // (perhaps across several calls), then try once and grow it.
                let at = nextReconnect ?? now
                if at > now {
                    Thread.sleep(forTimeInterval: Self.seconds(min(at, deadline) - now))
                    continue
                }
                onReconnect?(reconnect.delay)
                reconnect.grow()
                nextReconnect = now + .milliseconds(Int(reconnect.delay * 1000))
                if let fresh = try? WebSocketClient.connectBlocking(
                    url: url, options: Self.options, timeout: min(connectTimeout, remaining)),
                    try begin(fresh, timeout: min(connectTimeout, remaining))
                {
                    reconnect.reset()
                    nextReconnect = nil
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
                if socket.closeStatus?.code == .messageTooBig {
                    // A message too large for the relay (or the relay's for us) would be too
                    // large again after a reconnect: resending it would loop forever.
                    socket.close()
                    self.socket = nil
                    throw .rendezvous(.server(Self.tooLargeReason))
                }
                socket.close()
                self.socket = nil
                machine.disconnected()
                // The first attempt waits the first delay, as before.
                nextReconnect = ContinuousClock.now + .milliseconds(Int(reconnect.delay * 1000))
                continue
            }
            try perform(machine.received(try Self.decode(message)))
        }
    }

    /// The message a relay frame carries.
    private static func decode(_ message: WebSocketMessage) throws(RelayConnectionError) -> ServerMessage {
        let text: String
        switch message {
        case .text(let t): text = t
        case .binary(let b): text = String(decoding: b, as: UTF8.self)
        }
        do {
            return try ServerMessage(decoding: text)
        } catch {
            throw .rendezvous(.protocolViolation(error.description))
        }
    }

    private func perform(_ actions: [RendezvousAction]) throws(RelayConnectionError) {
        // The commands of one step (`bind`, `claim`, `open` and an `add` on a fresh connection;
        // `release` and the next `add` on the peer's first message) go out in one write, before
        // this returns or throws: one system call here, one read and one turn at the relay.
        var commands: [String] = []
        defer { if !commands.isEmpty { socket?.send(texts: commands) } }
        for action in actions {
            switch action {
            case .send(let message):
                // `bind` asks an Eleven relay for no `ack`s (`ClientMessage.acksKey`): the
                // machine ignores them, and what it waits for has its own reply (`claimed`,
                // `released`, the echo of an `add`, `closed`). Other servers ignore the key.
                commands.append(message.encoded(acks: false))
            case .sendWithoutEcho(let message):
                // An `add` the peer answers asks for no echo (`ClientMessage.echoKey`).
                commands.append(message.encoded(acks: false, echo: false))
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
