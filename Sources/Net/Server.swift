import CNet
import Foundation
import Support
import Synchronization

/// Limits that keep one client (or many) from exhausting the server.
public struct ServerLimits: Sendable {
    /// Request line, header and body limits.
    public var http = HTTPParserLimits()
    /// WebSocket frame and message limits, pings.
    public var webSocket = WebSocketOptions()
    /// Open connections in total; further ones are closed at accept.
    public var maxConnections = 16_384
    /// Open connections per source address (trusted proxies are exempt).
    public var maxConnectionsPerAddress = 256
    /// Peers ``maxConnectionsPerAddress`` does not apply to (the operator's own load tests and
    /// health checks); they still count toward ``maxConnections``.
    public var perAddressExempt: [IPNetwork] = []
    /// Unsent output a connection may hold before it is dropped (a peer that does not read).
    public var maxOutputBytesPerConnection = 4 << 20
    /// Unsent output above which a connection's input is no longer read until the peer has read
    /// half of it (back-pressure: a peer that sends but never reads cannot make the server queue
    /// more for it).
    public var outputHighWaterBytes = 1 << 20
    /// A connection whose unsent output has not moved for this long is dropped (a peer that
    /// stopped reading), however little it holds.
    public var outputStallTimeout: Duration = .seconds(30)
    /// Time to finish the TLS handshake and the first request (slowloris).
    public var handshakeTimeout: Duration = .seconds(10)
    /// Time a request may take to arrive once it has started.
    public var requestTimeout: Duration = .seconds(10)
    /// Time a keep-alive HTTP connection may sit idle between requests.
    public var idleTimeout: Duration = .seconds(60)
    public init() {}
}

/// Where and how a server listens.
public struct ServerConfiguration: Sendable {
    /// Addresses to listen on (IPv4 and/or IPv6).
    public var listenAddresses: [SocketAddress]
    public var limits = ServerLimits()
    /// Peers whose `X-Forwarded-For` / `X-Real-IP` headers are believed.
    public var trustedProxies: [IPNetwork] = []
    /// Serve TLS (`https://`, `wss://`) with these files.
    public var tls: TLSServerConfiguration?
    /// Event loops (threads); default one per core.
    public var loopCount = ProcessInfo.processInfo.activeProcessorCount
    /// Busy polling of the loops after they handle events (``BusyPoll``; an idle server
    /// blocks at once). ``BusyPoll/off`` turns it off.
    public var busyPoll = BusyPoll.serverDefault

    /// Listens on one numeric address (`"127.0.0.1"`, `"::1"`, `"0.0.0.0"`, `"::"`); port 0 picks
    /// a free port (see ``Server/localAddresses``).
    public init(host: String = "127.0.0.1", port: UInt16 = 0) {
        listenAddresses = SocketAddress(numericHost: host, port: port).map { [$0] } ?? []
    }

    /// Listens on several addresses.
    public init(listenAddresses: [SocketAddress]) {
        self.listenAddresses = listenAddresses
    }
}

/// Counters since the server started (for `/metrics`).
public struct ServerStatistics: Sendable, Equatable {
    /// Connections accepted and admitted.
    public var connectionsAccepted = 0
    /// Connections closed at accept by a limit (total, per address) or while shutting down.
    public var connectionsRejected = 0
    /// Connections open now.
    public var openConnections = 0
    /// HTTP requests answered by a route or a 404/405 (not counting upgrades).
    public var httpRequests = 0
    /// Malformed or over-limit requests answered with a 4xx/5xx and closed.
    public var badRequests = 0
    /// WebSocket upgrades accepted.
    public var webSocketsOpened = 0
    /// WebSocket connections failed for a protocol violation (1002, 1007, 1009, …).
    public var webSocketProtocolErrors = 0
    /// Connections closed by a deadline (slow handshake or request, idle, unanswered ping).
    public var timeouts = 0
    /// Connections dropped because the peer did not read its output.
    public var slowConsumersDropped = 0
    /// Failed TLS handshakes.
    public var tlsHandshakeFailures = 0
}

/// Lock-free counters behind ``ServerStatistics``.
final class ServerCounters: Sendable {
    let accepted = Atomic<Int>(0)
    let rejected = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let badRequests = Atomic<Int>(0)
    let webSockets = Atomic<Int>(0)
    let violations = Atomic<Int>(0)
    let timeouts = Atomic<Int>(0)
    let slowConsumers = Atomic<Int>(0)
    let tlsFailures = Atomic<Int>(0)

    func bump(_ counter: borrowing Atomic<Int>) { counter.add(1, ordering: .relaxed) }
}

/// An HTTP/1.1 + WebSocket server on its own event loops. See the module overview in `Net.swift`.
public final class Server: Sendable {
    let core: ServerCore

    /// Makes a server; nothing listens until ``start()``.
    public init(configuration: ServerConfiguration, router: HTTPRouter = HTTPRouter()) {
        core = ServerCore(configuration: configuration, router: router)
    }

    /// Accepts WebSocket upgrades on `path`. `accept` may refuse an upgrade by returning a
    /// response (e.g. 403, 429); nil accepts. `onOpen` runs on the connection's loop before any
    /// message is read, with the upgrade request (not kept afterwards): set the socket's
    /// handlers there.
    public func webSocket(
        path: String, accept: (@Sendable (HTTPRequest) -> HTTPResponse?)? = nil,
        onOpen: @escaping @Sendable (WebSocket, HTTPRequest) -> Void
    ) {
        core.webSocketRoutes.withLock { $0[path] = WebSocketRoute(accept: accept, onOpen: onOpen) }
    }

    /// Takes connections whose first byte cannot start an HTTP request (one of ours starts
    /// with `G`, for `GET`) as raw byte streams: a protocol of its own on the same port as the
    /// WebSockets (the transit relay's `please relay …`). `onOpen` runs on the connection's
    /// loop before its first bytes are delivered: set the stream's handlers there. The
    /// connection limits apply; the deadlines are the application's.
    public func rawStreams(onOpen: @escaping @Sendable (StreamSocket) -> Void) {
        core.streamRoute.withLock { $0 = onOpen }
    }

    /// Binds and starts accepting.
    public func start() throws(NetError) { try core.start() }

    /// The bound addresses (with the real port when 0 was asked for).
    public var localAddresses: [SocketAddress] { core.boundAddresses.withLock { $0 } }

    /// The first bound port.
    public var port: UInt16 { localAddresses.first?.port ?? 0 }

    /// Open connections right now.
    public var connectionCount: Int { core.totalConnections.load(ordering: .relaxed) }

    /// Counters since start.
    public var statistics: ServerStatistics {
        let c = core.counters
        var s = ServerStatistics()
        s.connectionsAccepted = c.accepted.load(ordering: .relaxed)
        s.connectionsRejected = c.rejected.load(ordering: .relaxed)
        s.openConnections = core.totalConnections.load(ordering: .relaxed)
        s.httpRequests = c.requests.load(ordering: .relaxed)
        s.badRequests = c.badRequests.load(ordering: .relaxed)
        s.webSocketsOpened = c.webSockets.load(ordering: .relaxed)
        s.webSocketProtocolErrors = c.violations.load(ordering: .relaxed)
        s.timeouts = c.timeouts.load(ordering: .relaxed)
        s.slowConsumersDropped = c.slowConsumers.load(ordering: .relaxed)
        s.tlsHandshakeFailures = c.tlsFailures.load(ordering: .relaxed)
        return s
    }

    /// Reloads the TLS certificate and key files: new connections use them, open ones keep
    /// theirs. Call it from the executable's SIGHUP handler. Throws (and keeps the old ones) if
    /// the files are bad.
    public func reloadCertificates() throws(NetError) { try core.reloadCertificates() }

    /// Graceful shutdown: stop accepting, close WebSockets with 1001, let requests in flight
    /// finish, wait up to `timeout` for connections to drain, drop the rest, stop the loops.
    public func shutdown(timeout: Duration = .seconds(5)) { core.shutdown(timeout: timeout) }
}

struct WebSocketRoute: Sendable {
    let accept: (@Sendable (HTTPRequest) -> HTTPResponse?)?
    let onOpen: @Sendable (WebSocket, HTTPRequest) -> Void
}

/// Per-loop server state: listeners and connections (loop-confined).
final class ServerShard: @unchecked Sendable {
    let loop: EventLoop
    var listeners: [Listener] = []
    var connections: [ObjectIdentifier: ServerConnection] = [:]
    init(loop: EventLoop) { self.loop = loop }

    func tick() {
        let now = monotonicNanos()
        for connection in Array(connections.values) { connection.tick(now: now) }
    }
}

final class ServerCore: @unchecked Sendable {
    let configuration: ServerConfiguration
    let router: HTTPRouter
    let webSocketRoutes = Locked<[String: WebSocketRoute]>([:])
    let streamRoute = Locked<(@Sendable (StreamSocket) -> Void)?>(nil)
    let boundAddresses = Locked<[SocketAddress]>([])
    let totalConnections = Atomic<Int>(0)
    let perAddress = Locked<[IPAddress: Int]>([:])
    let tlsContext = Locked<TLSContext?>(nil)
    let draining = Atomic<Bool>(false)
    let counters = ServerCounters()
    private let started = Atomic<Bool>(false)
    private(set) var group: EventLoopGroup?
    private(set) var shards: [ServerShard] = []

    init(configuration: ServerConfiguration, router: HTTPRouter) {
        self.configuration = configuration
        self.router = router
    }

    func start() throws(NetError) {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else {
            throw NetError(.invalidState, "Server already started")
        }
        guard !configuration.listenAddresses.isEmpty else {
            throw NetError(.listenFailed, "No valid listen address")
        }
        if let tls = configuration.tls {
            let context = try TLSContext.server(tls)
            tlsContext.withLock { $0 = context }
        }
        // One listening socket per loop and address (SO_REUSEPORT): the kernel spreads
        // connections over the loops with no hand-off between threads.
        let loopCount = max(1, configuration.loopCount)
        var fds: [[Int32]] = Array(repeating: [], count: loopCount)
        var bound: [SocketAddress] = []
        do throws(NetError) {
            for address in configuration.listenAddresses {
                var actual = address
                for i in 0..<loopCount {
                    let fd = try Sockets.listen(
                        on: actual, backlog: 1024, reusePort: true, firstOfGroup: i == 0)
                    if i == 0, let local = Sockets.localAddress(fd) { actual = local }
                    fds[i].append(fd)
                }
                bound.append(actual)
            }
        } catch {
            for list in fds { for fd in list { Glibc.close(fd) } }
            throw error
        }
        boundAddresses.withLock { $0 = bound }
        let group = EventLoopGroup(
            loopCount: loopCount, name: "net-server", busyPoll: configuration.busyPoll)
        self.group = group
        shards = group.loops.map { ServerShard(loop: $0) }
        for (i, shard) in shards.enumerated() {
            let listenFDs = fds[i]
            shard.loop.execute { [self] in
                for fd in listenFDs {
                    let listener = Listener(fd: fd, shard: shard, core: self)
                    if shard.loop.register(fd, listener, events: EPOLLIN.rawValue) {
                        shard.listeners.append(listener)
                    }
                }
                shard.loop.addTick(shard) { shard.tick() }
            }
        }
    }

    func reloadCertificates() throws(NetError) {
        guard let tls = configuration.tls else {
            throw NetError(.invalidState, "Server has no TLS configuration")
        }
        let context = try TLSContext.server(tls)
        tlsContext.withLock { $0 = context }
    }

    /// Accounting at accept; false when a limit says no.
    func admit(_ address: IPAddress) -> Bool {
        if draining.load(ordering: .relaxed) { return false }
        let limits = configuration.limits
        if totalConnections.add(1, ordering: .relaxed).newValue > limits.maxConnections {
            totalConnections.subtract(1, ordering: .relaxed)
            return false
        }
        if skipsPerAddressLimit(address) { return true }
        let ok = perAddress.withLock { table -> Bool in
            let n = table[address, default: 0]
            if n >= limits.maxConnectionsPerAddress { return false }
            table[address] = n + 1
            return true
        }
        if !ok { totalConnections.subtract(1, ordering: .relaxed) }
        return ok
    }

    func release(_ address: IPAddress) {
        totalConnections.subtract(1, ordering: .relaxed)
        if skipsPerAddressLimit(address) { return }
        perAddress.withLock { table in
            let n = table[address, default: 1] - 1
            if n <= 0 { table[address] = nil } else { table[address] = n }
        }
    }

    /// Trusted proxies (many clients behind one address) and exempt peers.
    func skipsPerAddressLimit(_ address: IPAddress) -> Bool {
        isTrustedProxy(address) || configuration.limits.perAddressExempt.contains { $0.contains(address) }
    }

    func isTrustedProxy(_ address: IPAddress) -> Bool {
        configuration.trustedProxies.contains { $0.contains(address) }
    }

    /// The client address: the TCP peer, or what a trusted proxy says it forwarded.
    func clientAddress(peer: IPAddress, headers: HTTPHeaders) -> IPAddress {
        guard isTrustedProxy(peer) else { return peer }
        let forwarded = headers.values("X-Forwarded-For").flatMap { $0.split(separator: ",") }.map {
            $0.trimmingWhitespace()
        }
        if !forwarded.isEmpty {
            // Walk from the nearest hop outwards, skipping our own proxies.
            for entry in forwarded.reversed() {
                guard let ip = IPAddress(entry) else { return peer }
                if !isTrustedProxy(ip) { return ip }
            }
            return IPAddress(forwarded[0]) ?? peer
        }
        if let real = headers["X-Real-IP"], let ip = IPAddress(real.trimmingWhitespace()) {
            return ip
        }
        return peer
    }

    func shutdown(timeout: Duration) {
        guard started.load(ordering: .relaxed), let group else { return }
        if draining.exchange(true, ordering: .acquiringAndReleasing) { return }
        for shard in shards {
            shard.loop.execute {
                for listener in shard.listeners { listener.close() }
                shard.listeners = []
                for connection in Array(shard.connections.values) { connection.beginShutdown() }
            }
        }
        let deadline = monotonicNanos() &+ timeout.nanoseconds
        while totalConnections.load(ordering: .relaxed) > 0 && monotonicNanos() < deadline {
            usleep(10_000)
        }
        let done = DispatchSemaphore(value: 0)
        for shard in shards {
            shard.loop.execute {
                for connection in Array(shard.connections.values) {
                    connection.abort(NetError(.connectionClosed, "Server shut down"))
                }
                shard.loop.removeTick(shard)
                done.signal()
            }
        }
        for _ in shards { done.wait() }
        group.shutdown()
    }
}

/// A listening socket on one loop.
final class Listener: LoopHandler {
    let fd: Int32
    unowned let shard: ServerShard
    unowned let core: ServerCore
    private var closed = false

    init(fd: Int32, shard: ServerShard, core: ServerCore) {
        self.fd = fd
        self.shard = shard
        self.core = core
    }

    func close() {
        guard !closed else { return }
        closed = true
        shard.loop.deregister(fd)
        Glibc.close(fd)
    }

    func handleEvents(_ events: UInt32) {
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(fd, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if client < 0 {
                let e = errno
                if e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM {
                    // Out of descriptors: stop accepting for a moment instead of spinning.
                    shard.loop.deregister(fd)
                    _ = shard.loop.scheduleInLoop(after: 100_000_000) { [self] in
                        if !closed { _ = shard.loop.register(fd, self, events: EPOLLIN.rawValue) }
                    }
                }
                return
            }
            let peer = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress(sockaddr: $0) }
            }
            guard let peer, core.admit(peer.ip) else {
                core.counters.bump(core.counters.rejected)
                Glibc.close(client)
                continue
            }
            core.counters.bump(core.counters.accepted)
            Sockets.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            var tls: TLSStream?
            if let context = core.tlsContext.withLock({ $0 }) {
                tls = try? TLSStream(context: context, fd: client, hostName: nil)
                if tls == nil {
                    Glibc.close(client)
                    core.release(peer.ip)
                    continue
                }
            }
            let connection = ServerConnection(fd: client, shard: shard, core: core, peer: peer, tls: tls)
            shard.connections[ObjectIdentifier(connection)] = connection
            _ = connection.start()
        }
    }
}

/// A server-side connection: HTTP/1.1 until it upgrades to WebSocket.
final class ServerConnection: Connection, @unchecked Sendable {
    unowned let shard: ServerShard
    unowned let core: ServerCore
    let peer: SocketAddress
    private var busy = false
    private var requestStarted: UInt64?
    private var continueSent = false
    private var closeAfterResponse = false
    /// Set when the connection turned out to be a raw stream (``Server/rawStreams(onOpen:)``).
    private var stream: StreamSocket?
    /// Whether any byte has been looked at (only the first decides HTTP or raw).
    private var sawInput = false

    init(fd: Int32, shard: ServerShard, core: ServerCore, peer: SocketAddress, tls: TLSStream?) {
        self.shard = shard
        self.core = core
        self.peer = peer
        super.init(
            fd: fd, loop: shard.loop, tls: tls,
            maxOutboundBytes: core.configuration.limits.maxOutputBytesPerConnection)
        outputHighWater = core.configuration.limits.outputHighWaterBytes
        outputStallNanos = core.configuration.limits.outputStallTimeout.nanoseconds
        deadline = monotonicNanos() &+ core.configuration.limits.handshakeTimeout.nanoseconds
    }

    override func didClose(error: NetError?) {
        stream?.closed()
        shard.connections[ObjectIdentifier(self)] = nil
        core.release(peer.ip)
        let counters = core.counters
        switch error?.code {
        case .timedOut?: counters.bump(counters.timeouts)
        case .messageTooLarge?: counters.bump(counters.slowConsumers)
        default:
            if closedDuringTLSHandshake { counters.bump(counters.tlsFailures) }
        }
    }

    override func webSocketViolation() {
        core.counters.bump(core.counters.violations)
    }

    override func deadlineExpired() {
        if webSocket == nil && !busy && bufferedInputCount > 0 && pendingOutputCount == 0 {
            write(
                HTTPResponse.error(.requestTimeout, code: "request_timeout", message: "Request took too long")
                    .serialized(keepAlive: false))
        }
        abort(NetError(.timedOut, "Connection deadline passed"))
    }

    /// Part of a graceful shutdown.
    func beginShutdown() {
        if let ws = webSocket {
            if ws.session.state == .open {
                startWebSocketClose(.goingAway, "Server is shutting down")
            }
        } else if busy {
            closeAfterResponse = true
        } else {
            closeAfterFlush()
        }
    }

    override func outputDrained() {
        stream?.drained()
        webSocket?.socket.drained()
    }

    override func processBytes(_ bytes: UnsafeRawBufferPointer) -> Int {
        if let stream {
            stream.deliver(bytes)
            return bytes.count
        }
        if !sawInput, let first = bytes.first {
            sawInput = true
            if first != UInt8(ascii: "G"), let onOpen = core.streamRoute.withLock({ $0 }) {
                let socket = StreamSocket(connection: self)
                stream = socket
                deadline = .max
                onOpen(socket)
                socket.deliver(bytes)
                return bytes.count
            }
        }
        if busy { return 0 }
        let limits = core.configuration.limits
        do throws(HTTPParseError) {
            guard let (request, used) = try HTTPRequestParser.parse(bytes, limits: limits.http) else {
                if !continueSent, let (head, _) = try HTTPRequestParser.parseHead(bytes, limits: limits.http),
                    head.headers.containsToken("Expect", "100-continue"), head.minorVersion == 1
                {
                    continueSent = true
                    write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
                }
                if requestStarted == nil {
                    let now = monotonicNanos()
                    requestStarted = now
                    deadline = min(deadline, now &+ limits.requestTimeout.nanoseconds)
                }
                return 0
            }
            requestStarted = nil
            continueSent = false
            handle(request)
            return used
        } catch {
            core.counters.bump(core.counters.badRequests)
            var response = HTTPResponse.error(error.status, code: "bad_request", message: error.message)
            response.headers.set("Connection", "close")
            write(response.serialized(keepAlive: false))
            closeAfterFlush()
            return bytes.count
        }
    }

    private func handle(_ incoming: HTTPRequest) {
        var request = incoming
        request.remoteAddress = peer
        request.clientAddress = core.clientAddress(peer: peer.ip, headers: request.headers)
        let keepAlive = request.keepAlive && !core.draining.load(ordering: .relaxed)

        if request.headers.containsToken("Upgrade", "websocket") {
            let route = core.webSocketRoutes.withLock { $0[request.path] }
            guard let route else {
                core.counters.bump(core.counters.badRequests)
                finish(
                    .error(.notFound, code: "not_found", message: "No WebSocket endpoint at this path"),
                    request, false)
                return
            }
            switch WebSocketHandshake.validate(request) {
            case .refuse(let response):
                core.counters.bump(core.counters.badRequests)
                finish(response, request, false)
            case .accept(let accept):
                if let refusal = route.accept?(request) {
                    finish(refusal, request, false)
                    return
                }
                write(WebSocketHandshake.response(accept: accept))
                let socket = WebSocket(
                    loop: loop, path: request.path, remoteAddress: peer, clientAddress: request.clientAddress)
                socket.connection = self
                core.counters.bump(core.counters.webSockets)
                becomeWebSocket(role: .server, socket: socket, options: core.configuration.limits.webSocket)
                if core.draining.load(ordering: .relaxed) {
                    startWebSocketClose(.goingAway, "Server is shutting down")
                }
                route.onOpen(socket, request)
            }
            return
        }

        core.counters.bump(core.counters.requests)
        switch core.router.match(method: request.method, path: request.path) {
        case .notFound:
            finish(.error(.notFound, code: "not_found", message: "No such resource"), request, keepAlive)
        case .methodNotAllowed(let allowed):
            var response = HTTPResponse.error(
                .methodNotAllowed, code: "method_not_allowed", message: "Method not allowed")
            response.headers.set("Allow", allowed.map(\.rawValue).joined(separator: ", "))
            finish(response, request, keepAlive)
        case .found(let handler, let parameters):
            request.pathParameters = parameters
            switch handler {
            case .immediate(let body):
                finish(body(request), request, keepAlive)
            case .deferred(let body):
                startBusy()
                let loop = self.loop
                let sendableRequest = request
                let responder = HTTPResponder { [self] response in
                    if loop.inLoop {
                        self.finishBusy(response, sendableRequest, keepAlive)
                    } else {
                        loop.execute { self.finishBusy(response, sendableRequest, keepAlive) }
                    }
                }
                body(request, responder)
            case .async(let body):
                startBusy()
                let loop = self.loop
                let sendableRequest = request
                Task { [self] in
                    let response = await body(sendableRequest)
                    loop.execute { self.finishBusy(response, sendableRequest, keepAlive) }
                }
            }
        }
    }

    private func startBusy() {
        busy = true
        deadline = .max
        pauseReading()
    }

    private func finishBusy(_ response: HTTPResponse, _ request: HTTPRequest, _ keepAlive: Bool) {
        guard !isClosed else { return }
        busy = false
        finish(response, request, keepAlive && !closeAfterResponse)
        resumeReading()
    }

    private func finish(_ response: HTTPResponse, _ request: HTTPRequest, _ keepAlive: Bool) {
        var response = response
        // HTTP/1.0 closes by default; say so when we keep it open.
        if keepAlive && request.minorVersion == 0 { response.headers.set("Connection", "keep-alive") }
        write(response.serialized(keepAlive: keepAlive, includeBody: request.method != .head))
        if keepAlive {
            deadline = monotonicNanos() &+ core.configuration.limits.idleTimeout.nanoseconds
        } else {
            closeAfterFlush()
        }
    }
}
