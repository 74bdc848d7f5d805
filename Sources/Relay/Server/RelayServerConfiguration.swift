import Foundation
import Net

/// Everything the network glue needs: where to listen, TLS, proxies, the database, and the
/// protocol settings (``RelayConfig``). `eleven-relay` maps its flags onto this.
public struct RelayServerConfiguration: Sendable {
    /// WebSocket listen addresses (`/v1`, and `GET /`).
    public var listenAddresses: [SocketAddress]
    /// A separate plain-HTTP listener for `/metrics` and `/healthz`; nil: none.
    public var metricsAddress: SocketAddress?
    /// Serve `wss://` directly with these files (reloaded by ``RelayServer/reloadCertificates()``).
    public var tls: TLSServerConfiguration?
    /// Proxies whose `X-Forwarded-For` / `X-Real-IP` headers name the client.
    public var trustedProxies: [IPNetwork]
    /// The SQLite file.
    public var databasePath: String
    public var storageOptions: SQLiteRelayStorage.Options
    public var relay: RelayConfig
    /// Open connections one source address may hold at the socket layer (the relay's own
    /// per-address limits come on top).
    public var maximumConnectionsPerAddress: Int
    /// WebSocket keep-alive: ping after this much silence, drop if no answer within the timeout.
    public var pingInterval: Duration
    public var pingTimeout: Duration
    /// A client whose unread output has not moved for this long is dropped (it stopped reading).
    public var writeTimeout: Duration
    /// How often a statistics line is logged.
    public var statisticsLogInterval: Duration
    /// Event loop threads (default: one per core).
    public var loopCount: Int
    /// Transit relay addresses (raw TCP and WebSocket on each); empty: no transit relay.
    public var transitListenAddresses: [SocketAddress] = []
    public var transit = TransitRules.Config()

    public init(
        listenAddresses: [SocketAddress], databasePath: String, relay: RelayConfig = RelayConfig()
    ) {
        self.listenAddresses = listenAddresses
        self.metricsAddress = nil
        self.tls = nil
        self.trustedProxies = []
        self.databasePath = databasePath
        self.storageOptions = SQLiteRelayStorage.Options()
        self.relay = relay
        self.maximumConnectionsPerAddress = 256
        self.pingInterval = .seconds(30)
        self.pingTimeout = .seconds(20)
        self.writeTimeout = .seconds(20)
        self.statisticsLogInterval = .seconds(60)
        self.loopCount = ProcessInfo.processInfo.activeProcessorCount
    }

    /// Parses `HOST:PORT`, `[V6]:PORT` or `:PORT` (all interfaces, IPv4) with a numeric host.
    public static func parseAddress(_ text: String) -> SocketAddress? {
        var host: Substring
        var port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            port = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            if host.contains(":") { return nil }
        }
        if host.isEmpty { host = "0.0.0.0" }
        if host == "localhost" { host = "127.0.0.1" }
        guard let number = UInt16(port) else { return nil }
        return SocketAddress(numericHost: String(host), port: number)
    }
}

/// Why the relay could not start.
public struct RelayServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case storage
        /// The SQLite file belongs to another program (or to none of ours): local state.
        case foreignDatabase = "foreign_database"
        case listen
        case tls
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
