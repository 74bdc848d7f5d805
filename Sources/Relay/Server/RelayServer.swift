import Foundation
import Mailbox
import Net
import Support
import Synchronization

/// The relay on the network: Net's WebSocket server wired to a ``RelayService`` as the seam in
/// `Relay.swift` describes, plus the metrics/health listener, the expiry tick and JSON-lines
/// logs.
///
/// ```swift
/// let server = try RelayServer(configuration: config)   // opens the database (blocking)
/// try server.start()                                    // binds; see webSocketURLs
/// // SIGHUP: try server.reloadCertificates()   SIGTERM: server.shutdown(); exit(0)
/// ```
public final class RelayServer: Sendable {
    public let configuration: RelayServerConfiguration
    /// The protocol engine (metrics, gauges, failure state).
    public let relay: RelayService
    private let storage: any RelayStorage
    private let sqlite: SQLiteRelayStorage?
    private let server: Server
    private let metricsServer: Server?
    /// The transit relay beside the mailbox (`--transit-listen`), if any.
    public let transit: TransitServer?
    private let metricsRouter = HTTPRouter()
    private let table: ConnectionTable
    private let log: RelayLog
    private let timerLoop = Locked<EventLoop?>(nil)
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let startTime = Date()
    /// Error counts at the last statistics line, to log what changed.
    private let lastErrors = Locked<[RelayError.Code: Int]>([:])

    /// Opens the storage (the SQLite file at `configuration.databasePath` unless `storage` is
    /// given) and loads its state. Blocking; call before serving.
    public init(
        configuration: RelayServerConfiguration, storage: (any RelayStorage)? = nil,
        log: RelayLog = RelayLog()
    ) throws(RelayServerError) {
        self.configuration = configuration
        self.log = log
        let table = ConnectionTable()
        self.table = table
        let chosen: any RelayStorage
        if let storage {
            chosen = storage
        } else {
            do throws(RelayStorageError) {
                chosen = try SQLiteRelayStorage(
                    path: configuration.databasePath, options: configuration.storageOptions)
            } catch {
                guard error.code != .foreignDatabase else {
                    throw RelayServerError(.foreignDatabase, error.message)
                }
                throw RelayServerError(.storage, "cannot open \(configuration.databasePath): \(error)")
            }
        }
        self.storage = chosen
        self.sqlite = chosen as? SQLiteRelayStorage
        let relay: RelayService
        do throws(RelayStorageError) {
            relay = try RelayService(config: configuration.relay, storage: chosen, sink: table)
        } catch {
            throw RelayServerError(.storage, "cannot load the relay state: \(error)")
        }
        self.relay = relay

        server = Server(configuration: Self.netConfiguration(configuration), router: Self.mainRouter())
        transit =
            configuration.transitListenAddresses.isEmpty
            ? nil : TransitServer(listen: configuration.transitListenAddresses, config: configuration.transit)
        if let metricsAddress = configuration.metricsAddress {
            var metricsConfig = ServerConfiguration(listenAddresses: [metricsAddress])
            metricsConfig.loopCount = 1
            metricsServer = Server(configuration: metricsConfig, router: metricsRouter)
        } else {
            metricsServer = nil
        }
        table.setFailureHandler { [log] error in
            log.log(.error, "storage_failed", [("code", .string(error.code.rawValue))])
        }
        table.setRecoveryHandler { [log] in log.log(.info, "storage_recovered") }
        installRoutes()
    }

    // MARK: - Wiring

    static func netConfiguration(_ c: RelayServerConfiguration) -> ServerConfiguration {
        var net = ServerConfiguration(listenAddresses: c.listenAddresses)
        net.trustedProxies = c.trustedProxies
        net.tls = c.tls
        net.loopCount = max(1, c.loopCount)
        let limits = c.relay.limits
        // Net holds no message over the relay's limit: it reads past it and reports it, and the
        // relay answers with its `message_too_large` error, which stock clients show and stop
        // on. A close (1009) would make them reconnect and send it again, forever.
        let frameCap = limits.maximumMessageBytes > (1 << 40) ? 64 << 20 : max(limits.maximumMessageBytes, 1)
        net.limits.webSocket.maxFrameBytes = frameCap
        net.limits.webSocket.maxMessageBytes = frameCap
        net.limits.webSocket.skipOversizedMessages = true
        net.limits.webSocket.pingInterval = c.pingInterval
        net.limits.webSocket.pingTimeout = c.pingTimeout
        // Above the relay's connection limit, so the relay can answer the extra ones with an
        // explicit `error` before closing them.
        net.limits.maxConnections = min(limits.maximumConnections, 1 << 20) + 1024
        net.limits.maxConnectionsPerAddress = max(1, c.maximumConnectionsPerAddress)
        // `--exempt-address` skips every per-address limit, this one at accept included.
        net.limits.perAddressExempt = limits.exemptAddresses.compactMap { IPNetwork($0.rawValue) }
        // A reconnecting client gets its whole mailbox replayed at once.
        let replay = min(max(limits.maximumMailboxBytes, 0), 256 << 20)
        net.limits.maxOutputBytesPerConnection = max(4 << 20, 2 * replay + 2 * frameCap)
        // A client that sends but never reads: its frames are no longer read once a megabyte of
        // answers waits for it, and it is dropped when they have not moved for the timeout.
        net.limits.outputHighWaterBytes = 1 << 20
        net.limits.outputStallTimeout = c.writeTimeout
        return net
    }

    static func mainRouter() -> HTTPRouter {
        let router = HTTPRouter()
        // What the reference server answers, so health checks written for it keep working.
        router.get("/") { _ in
            var response = HTTPResponse.text("Wormhole Relay\n")
            response.headers.set("Content-Type", "text/plain")
            return response
        }
        return router
    }

    private func installRoutes() {
        let relay = self.relay
        let table = self.table
        server.webSocket(path: "/v1") { socket, _ in
            let id = ConnectionID(socket.id)
            let arrivals = table.add(id, socket)
            // Opened before the message handler is set: frames already queued are then
            // delivered in order after the welcome.
            relay.connectionOpened(id: id, remote: Self.clientAddress(of: socket))
            socket.onOversizedMessage { _, size in
                arrivals.stamp()
                relay.receivedOversized(size: size, from: id)
            }
            socket.onMessage { _, message in
                arrivals.stamp()
                switch message {
                case .text(let text): relay.received(text: text, from: id)
                case .binary(let bytes): relay.received(bytes: bytes, from: id)
                }
            }
            socket.onClose { _, _, _ in
                table.remove(id)
                relay.connectionClosed(id: id)
            }
        }
        metricsRouter.get("/metrics") { [weak self] _ in
            guard let self else { return .text("", status: .serviceUnavailable) }
            var response = HTTPResponse.text(self.renderMetrics())
            response.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            return response
        }
        metricsRouter.get("/healthz") { [weak self] _ in
            self?.health() ?? .json(["status": "stopped"], status: .serviceUnavailable)
        }
    }

    /// The client's address: the TCP peer, or what a trusted proxy says.
    static func clientAddress(of socket: WebSocket) -> ClientAddress? {
        let peer = socket.remoteAddress
        guard let ip = socket.clientAddress ?? peer?.ip else { return nil }
        let port = peer.map { $0.ip == ip ? Int($0.port) : 0 } ?? 0
        return ClientAddress(family: ip.isIPv6 ? .ipv6 : .ipv4, host: ip.description, port: port)
    }

    // MARK: - Lifecycle

    /// Binds every listener and starts the expiry tick. Throws if an address cannot be bound.
    public func start() throws(RelayServerError) {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do throws(NetError) {
            try server.start()
        } catch {
            throw RelayServerError(
                error.code == .tlsError ? .tls : .listen, "cannot listen: \(error.message)")
        }
        if let metricsServer {
            do throws(NetError) {
                try metricsServer.start()
            } catch {
                server.shutdown(timeout: .seconds(1))
                throw RelayServerError(.listen, "cannot listen for metrics: \(error.message)")
            }
        }
        if let transit {
            do throws(NetError) {
                try transit.start()
            } catch {
                metricsServer?.shutdown(timeout: .seconds(1))
                server.shutdown(timeout: .seconds(1))
                throw RelayServerError(.listen, "cannot listen for transit: \(error.message)")
            }
        }
        startTimers()
        log.log(
            .info, "started",
            [
                ("listen", .string(webSocketURLs.joined(separator: " "))),
                ("metrics", .string(metricsURL ?? "")),
                ("transit", .string(transitURLs.joined(separator: " "))),
                ("database", .string(configuration.databasePath)),
                ("nameplates", .int(relay.gauges.nameplates)),
                ("mailboxes", .int(relay.gauges.mailboxes)),
            ])
    }

    /// `ws://HOST:PORT/v1` (or `wss://`) for every bound address.
    public var webSocketURLs: [String] {
        let scheme = configuration.tls == nil ? "ws" : "wss"
        return server.localAddresses.map { "\(scheme)://\($0)/v1" }
    }

    /// `tcp:HOST:PORT` (what clients take as `--transit-helper`) for every transit address;
    /// WebSocket clients use `ws://HOST:PORT/` on the same ports.
    public var transitURLs: [String] { transit?.localAddresses.map { "tcp:\($0)" } ?? [] }

    /// `http://HOST:PORT` of the metrics listener, once started.
    public var metricsURL: String? {
        metricsServer?.localAddresses.first.map { "http://\($0)" }
    }

    /// Connections open at the socket layer.
    public var statistics: ServerStatistics { server.statistics }

    /// Runs `handler` (on a storage thread) when a commit fails: every connection is closed and
    /// the relay answers with errors until the storage is back, then reloads by itself.
    public func onStorageFailure(_ handler: @escaping @Sendable (RelayStorageError) -> Void) {
        let log = self.log
        table.setFailureHandler { error in
            log.log(.error, "storage_failed", [("code", .string(error.code.rawValue))])
            handler(error)
        }
    }

    /// Reloads the TLS certificate and key (new connections use them).
    public func reloadCertificates() throws(RelayServerError) {
        do throws(NetError) {
            try server.reloadCertificates()
            log.log(.info, "certificates_reloaded")
        } catch {
            log.log(.error, "certificates_reload_failed", [("reason", .string(error.code.rawValue))])
            throw RelayServerError(.tls, "cannot reload certificates: \(error.message)")
        }
    }

    /// Graceful stop: no new connections, WebSockets closed with 1001 (clients reconnect and
    /// resume), queued writes committed, storage closed. Blocking; not on a loop thread.
    public func shutdown(timeout: Duration = .seconds(5)) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        log.log(.info, "stopping", [("connections", .int(server.connectionCount))])
        if let loop = timerLoop.withLock({ $0 }) {
            loop.stop()
        }
        server.shutdown(timeout: timeout)
        transit?.shutdown()
        relay.shutdown()
        metricsServer?.shutdown(timeout: .seconds(1))
        logStatistics(event: "stopped")
    }

    // MARK: - Timers

    private func startTimers() {
        let loop = EventLoop(name: "relay-timer")
        timerLoop.withLock { $0 = loop }
        let interval = max(0.05, configuration.relay.expiry.checkIntervalSeconds)
        let tick = Duration.milliseconds(Int64(interval * 1000))
        scheduleRepeating(loop, every: tick) { [relay] in relay.tick() }
        scheduleRepeating(loop, every: configuration.statisticsLogInterval) { [weak self] in
            self?.logStatistics(event: "stats")
        }
    }

    private func scheduleRepeating(
        _ loop: EventLoop, every interval: Duration, _ body: @escaping @Sendable () -> Void
    ) {
        guard interval > .zero else { return }
        loop.schedule(after: interval) { [weak self] in
            guard let self, !self.stopped.load(ordering: .relaxed) else { return }
            body()
            self.scheduleRepeating(loop, every: interval, body)
        }
    }

    /// One line of counts: connections, state sizes, and the error replies since the last line
    /// by reason. Only numbers and fixed labels.
    func logStatistics(event: String) {
        let gauges = relay.gauges
        let metrics = relay.metrics
        let net = server.statistics
        var fields: [(String, RelayLogValue)] = [
            ("connections", .int(gauges.connections)),
            ("connections_opened_total", .int(metrics.connectionsOpened)),
            ("connections_rejected_total", .int(metrics.connectionsRejected + net.connectionsRejected)),
            ("nameplates", .int(gauges.nameplates)),
            ("mailboxes", .int(gauges.mailboxes)),
            ("messages", .int(gauges.messages)),
            ("protocol_violations_total", .int(net.webSocketProtocolErrors)),
            ("timeouts_total", .int(net.timeouts)),
        ]
        let errors = metrics.errors
        let previous = lastErrors.withLock { old in
            defer { old = errors }
            return old
        }
        for code in RelayError.relayCodes {
            let delta = errors[code, default: 0] - previous[code, default: 0]
            if delta > 0 { fields.append(("errors_\(code.rawValue)", .int(delta))) }
        }
        log.log(.info, event, fields)
    }

    // MARK: - Metrics

    /// The Prometheus text for `/metrics`.
    public func renderMetrics() -> String {
        var out = MetricsExposition.render(
            metrics: relay.metrics, gauges: relay.gauges,
            storage: sqlite?.statistics ?? (storage as? PostgresRelayStorage)?.statistics)
        out += table.latency.render(
            name: "eleven_relay_reply_latency_seconds",
            help: "Seconds from a client frame's arrival to the relay's answer (ack or error).")
        let net = server.statistics
        let netCounters: [(String, String, Int)] = [
            ("net_connections_accepted_total", "TCP connections accepted.", net.connectionsAccepted),
            ("net_connections_rejected_total", "TCP connections refused at accept.", net.connectionsRejected),
            ("net_http_requests_total", "Plain HTTP requests answered.", net.httpRequests),
            ("net_bad_requests_total", "Malformed or refused HTTP requests.", net.badRequests),
            ("net_websockets_opened_total", "WebSocket upgrades accepted.", net.webSocketsOpened),
            (
                "net_websocket_protocol_errors_total", "WebSockets failed for a protocol violation.",
                net.webSocketProtocolErrors
            ),
            ("net_timeouts_total", "Connections closed by a deadline.", net.timeouts),
            ("net_slow_consumers_total", "Connections dropped for not reading.", net.slowConsumersDropped),
            ("net_tls_handshake_failures_total", "Failed TLS handshakes.", net.tlsHandshakeFailures),
        ]
        for (name, help, value) in netCounters {
            out += "# HELP eleven_relay_\(name) \(help)\n# TYPE eleven_relay_\(name) counter\n"
            out += "eleven_relay_\(name) \(value)\n"
        }
        let gauges: [(String, String, Double)] = [
            ("net_open_connections", "Open TCP connections.", Double(net.openConnections)),
            (
                "storage_failed", "1 while the storage is unavailable (the relay answers with errors).",
                relay.failure == nil ? 0 : 1
            ),
            (
                "storage_recoveries", "Times the relay reloaded its state after the storage came back.",
                Double(relay.recoveries)
            ),
            (
                "feed_position", "Shared change-feed position applied (multi-node; 0 on one node).",
                Double(relay.feedPosition)
            ),
            (
                "expiry_leader", "1 when this node runs expiry (multi-node: exactly one node).",
                storage.isExpiryLeader ? 1 : 0
            ),
            ("uptime_seconds", "Seconds since start.", Date().timeIntervalSince(startTime).rounded()),
            ("resident_memory_bytes", "Resident memory of the process.", Double(Self.residentBytes())),
        ]
        for (name, help, value) in gauges {
            out += "# HELP eleven_relay_\(name) \(help)\n# TYPE eleven_relay_\(name) gauge\n"
            out += "eleven_relay_\(name) \(Int(value))\n"
        }
        out += transit?.renderMetrics() ?? ""
        return out
    }

    /// `/healthz`: 200 while serving, 503 while the storage is unavailable.
    public func health() -> HTTPResponse {
        if let failure = relay.failure {
            return .json(
                ["status": "storage_unavailable", "error": failure.code.rawValue], status: .serviceUnavailable
            )
        }
        return .json(["status": "ok"])
    }

    private static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
