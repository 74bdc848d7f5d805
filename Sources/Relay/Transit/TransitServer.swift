import Foundation
import Mailbox
import Net
import Support
import Synchronization

/// The transit relay on the network: a Net server on one port taking raw TCP streams (`please
/// relay …`) and WebSockets (at `/`), driven by ``TransitRules``. It runs on one event loop,
/// so joined connections always share a thread: bytes go from one socket's read buffer
/// straight to the other's write, blind, with back-pressure (a partner that reads slowly
/// stops the sender being read) and the per-address bandwidth limit applied by pausing reads.
public final class TransitServer: Sendable {
    /// One end: a raw stream or a WebSocket (everything on the loop thread).
    private enum Endpoint: @unchecked Sendable {
        case stream(StreamSocket)
        case webSocket(WebSocket)

        var loop: EventLoop {
            switch self {
            case .stream(let s): s.loop
            case .webSocket(let w): w.loop
            }
        }

        func send(_ bytes: UnsafeRawBufferPointer) {
            switch self {
            case .stream(let s): s.send(bytes)
            case .webSocket(let w): w.send(binary: Array(bytes))
            }
        }

        var pendingOutputBytes: Int {
            switch self {
            case .stream(let s): s.pendingOutputBytes
            case .webSocket(let w): w.pendingOutputBytes
            }
        }

        func pause() {
            switch self {
            case .stream(let s): s.pauseReading()
            case .webSocket(let w): w.pauseReading()
            }
        }

        func resume() {
            switch self {
            case .stream(let s): s.resumeReading()
            case .webSocket(let w): w.resumeReading()
            }
        }

        func close() {
            switch self {
            case .stream(let s): s.close()
            case .webSocket(let w): w.close()
            }
        }
    }

    private struct Link {
        let endpoint: Endpoint
        var partner: ConnectionID?
        /// Reading stopped because the partner's output is over the high-water mark.
        var blockedOnPartner = false
        /// Reading stopped until then (the address is over its bandwidth).
        var pausedUntil: Double?
    }

    private struct State {
        var rules: TransitRules
        var links: [ConnectionID: Link] = [:]
        var nextID: UInt64 = 1
    }

    private let server: Server
    private let state: Locked<State>
    private let timer = Locked<EventLoop?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// Partner output above which the sender is no longer read until the partner drains.
    static let highWaterBytes = 1 << 20

    public init(listen: [SocketAddress], config: TransitRules.Config) {
        var net = ServerConfiguration(listenAddresses: listen)
        // One loop: joined connections share its thread (see the type's comment).
        net.loopCount = 1
        net.limits.maxConnections = min(config.maximumConnections, 1 << 20) + 64
        // The rules count per address (with exemptions); Net only guards its own tables.
        net.limits.maxConnectionsPerAddress = 1 << 20
        net.limits.maxOutputBytesPerConnection = 8 * Self.highWaterBytes
        net.limits.outputHighWaterBytes = Int.max
        net.limits.webSocket.maxFrameBytes = 1 << 20
        net.limits.webSocket.maxMessageBytes = 1 << 20
        // The handshake line is due within the rules' time; Net's own deadline for the first
        // byte stays (a client that never sends anything is dropped by it).
        net.limits.handshakeTimeout = .seconds(Int64(max(1, config.handshakeTimeout)))
        server = Server(configuration: net)
        state = Locked(State(rules: TransitRules(config: config)))
        installHandlers()
    }

    /// `tcp:HOST:PORT` hints and `ws://HOST:PORT/` for every bound address.
    public var localAddresses: [SocketAddress] { server.localAddresses }

    public var metrics: TransitRules.Metrics { state.withLock { $0.rules.metrics } }
    public var gauges: (connections: Int, pairs: Int, waiting: Int) { state.withLock { $0.rules.gauges } }

    public func start() throws(NetError) {
        try server.start()
        let loop = EventLoop(name: "transit-timer")
        timer.withLock { $0 = loop }
        scheduleTick(loop)
    }

    public func shutdown() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        timer.withLock { $0 }?.stop()
        server.shutdown(timeout: .seconds(2))
    }

    // MARK: Wiring

    private func installHandlers() {
        server.rawStreams { [weak self] socket in
            guard let self else { return }
            let id = self.open(.stream(socket), address: socket.remoteAddress?.ip, framing: .tcp)
            socket.onData { [weak self] socket, bytes in self?.received(id, bytes, from: .stream(socket)) }
            socket.onDrained { [weak self] _ in self?.partnerDrained(id) }
            socket.onClose { [weak self] _ in self?.closed(id) }
        }
        server.webSocket(path: "/") { [weak self] socket, _ in
            guard let self else { return }
            let address = socket.clientAddress ?? socket.remoteAddress?.ip
            let id = self.open(.webSocket(socket), address: address, framing: .webSocket)
            socket.onMessage { [weak self] socket, message in
                guard case .binary(let bytes) = message else {
                    // The protocol is binary messages only (as the reference).
                    socket.close(code: .unsupportedData, reason: "binary messages only")
                    return
                }
                bytes.withUnsafeBytes { self?.received(id, $0, from: .webSocket(socket)) }
            }
            socket.onDrained { [weak self] _ in self?.partnerDrained(id) }
            socket.onClose { [weak self] _, _, _ in self?.closed(id) }
        }
    }

    private func open(_ endpoint: Endpoint, address: IPAddress?, framing: TransitRules.Framing)
        -> ConnectionID
    {
        // What the per-address limits count against, as for the mailbox: the host, or an IPv6
        // host's /64.
        let source =
            address.map { ip in
                ClientAddress(family: ip.isIPv6 ? .ipv6 : .ipv4, host: ip.description, port: 0).source
            } ?? SourceAddress("unknown")
        let (id, actions) = state.withLock { s -> (ConnectionID, [TransitRules.Action]) in
            let id = ConnectionID(s.nextID)
            s.nextID += 1
            s.links[id] = Link(endpoint: endpoint)
            return (id, s.rules.opened(id, source: source, framing: framing, now: Self.now()))
        }
        perform(actions)
        return id
    }

    /// Bytes from `id`: forwarded when joined, else the handshake.
    private func received(_ id: ConnectionID, _ bytes: UnsafeRawBufferPointer, from source: Endpoint) {
        let now = Self.now()
        enum Next {
            case forward(Endpoint, pause: Double?)
            case rules([TransitRules.Action])
        }
        let next = state.withLock { s -> Next in
            if let partner = s.links[id]?.partner, let target = s.links[partner]?.endpoint {
                return .forward(target, pause: s.rules.forwarded(id, bytes: bytes.count, now: now))
            }
            return .rules(s.rules.received(id, Array(bytes), now: now))
        }
        switch next {
        case .rules(let actions):
            perform(actions)
        case .forward(let target, let pause):
            target.send(bytes)
            let blocked = target.pendingOutputBytes > Self.highWaterBytes
            guard blocked || pause != nil else { return }
            state.withLock { s in
                if blocked { s.links[id]?.blockedOnPartner = true }
                if let pause { s.links[id]?.pausedUntil = now + pause }
            }
            source.pause()
            if let pause {
                _ = source.loop.schedule(after: .milliseconds(Int64(max(1, pause * 1000)))) { [weak self] in
                    self?.unpause(id, bandwidth: true)
                }
            }
        }
    }

    /// `id`'s output drained: its partner may be read again.
    private func partnerDrained(_ id: ConnectionID) {
        guard let partner = state.withLock({ $0.links[id]?.partner }) else { return }
        unpause(partner, bandwidth: false)
    }

    private func unpause(_ id: ConnectionID, bandwidth: Bool) {
        let now = Self.now()
        let endpoint = state.withLock { s -> Endpoint? in
            guard var link = s.links[id] else { return nil }
            let wasPaused = link.blockedOnPartner || link.pausedUntil != nil
            if bandwidth, let until = link.pausedUntil, until <= now + 0.001 { link.pausedUntil = nil }
            if !bandwidth { link.blockedOnPartner = false }
            s.links[id] = link
            return wasPaused && !link.blockedOnPartner && link.pausedUntil == nil ? link.endpoint : nil
        }
        endpoint?.resume()
    }

    private func closed(_ id: ConnectionID) {
        let actions = state.withLock { s -> [TransitRules.Action] in
            s.links[id] = nil
            return s.rules.closed(id)
        }
        perform(actions)
    }

    private func perform(_ actions: [TransitRules.Action]) {
        for action in actions {
            switch action {
            case .send(let id, let bytes):
                guard let endpoint = state.withLock({ $0.links[id]?.endpoint }) else { continue }
                onLoop(endpoint) { bytes.withUnsafeBytes { endpoint.send($0) } }
            case .close(let id):
                guard let endpoint = state.withLock({ $0.links[id]?.endpoint }) else { continue }
                onLoop(endpoint) { endpoint.close() }
            case .join(let a, let b):
                state.withLock { s in
                    s.links[a]?.partner = b
                    s.links[b]?.partner = a
                }
            }
        }
    }

    private func onLoop(_ endpoint: Endpoint, _ body: @escaping @Sendable () -> Void) {
        if endpoint.loop.inLoop { body() } else { endpoint.loop.execute(body) }
    }

    private func scheduleTick(_ loop: EventLoop) {
        _ = loop.schedule(after: .seconds(1)) { [weak self] in
            guard let self, !self.stopped.load(ordering: .relaxed) else { return }
            let actions = self.state.withLock { $0.rules.tick(now: Self.now()) }
            self.perform(actions)
            self.scheduleTick(loop)
        }
    }

    private static func now() -> Double { Date().timeIntervalSince1970 }

    // MARK: Metrics

    /// The transit relay's part of `/metrics`.
    public func renderMetrics() -> String {
        let (metrics, gauges) = state.withLock { ($0.rules.metrics, $0.rules.gauges) }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ value: Int? = nil) {
            let full = "eleven_relay_transit_\(name)"
            out += "# HELP \(full) \(help)\n# TYPE \(full) \(type)\n"
            if let value { out += "\(full) \(value)\n" }
        }
        family(
            "connections_opened_total", "counter", "Transit connections accepted.", metrics.connectionsOpened)
        family("sessions_total", "counter", "Transit pairs joined.", metrics.sessionsJoined)
        family(
            "bytes_total", "counter", "Bytes relayed between joined transit connections.",
            metrics.bytesRelayed)
        family("refusals_total", "counter", "Transit connections closed before or instead of relaying.")
        for reason in TransitRules.Refusal.allCases {
            out += "eleven_relay_transit_refusals_total{reason=\"\(reason.rawValue)\"} "
            out += "\(metrics.refusals[reason, default: 0])\n"
        }
        family("connections", "gauge", "Open transit connections.", gauges.connections)
        family("sessions", "gauge", "Joined transit pairs.", gauges.pairs)
        family("waiting", "gauge", "Transit connections waiting for their partner.", gauges.waiting)
        return out
    }
}
