import CLISupport
import Foundation
import Mailbox
import Net
import Relay

// eleven-relay: the blind public relay (Magic Wormhole mailbox protocol v1). Flags and
// environment map onto RelayServerConfiguration; everything else lives in Relay/Server.

let spec = CommandSpec(
    ["eleven-relay"],
    summary: "The blind public relay: a Magic Wormhole mailbox server (protocol v1) on SQLite or PostgreSQL.",
    options: [
        OptionSpec(
            "listen", value: "HOST:PORT",
            help: "WebSocket address (repeatable; [::1]:PORT for IPv6; port 0 picks one)",
            environment: "ELEVEN_RELAY_LISTEN", default: "127.0.0.1:4000", repeatable: true),
        OptionSpec(
            "db", value: "PATH", help: "SQLite database file (WAL; created if missing)",
            environment: "ELEVEN_RELAY_DB", default: "./eleven-relay.sqlite"),
        OptionSpec(
            "postgres", value: "URL",
            help:
                "PostgreSQL instead of SQLite: a libpq URI postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...] "
                + "or key=value string (the password is never logged); every node on one database serves",
            environment: "ELEVEN_RELAY_POSTGRES"),
        OptionSpec(
            "postgres-pool", value: "N", help: "PostgreSQL connections this node may open",
            environment: "ELEVEN_RELAY_POSTGRES_POOL", default: "4"),
        OptionSpec(
            "sync", value: "full|normal",
            help: "fsync policy: full survives power loss, normal survives a crash of the process",
            environment: "ELEVEN_RELAY_SYNC", default: "full"),
        OptionSpec(
            "tls-cert", value: "PATH",
            help: "serve wss:// with this certificate chain (PEM; reloaded on SIGHUP)",
            environment: "ELEVEN_RELAY_TLS_CERT"),
        OptionSpec(
            "tls-key", value: "PATH", help: "private key for --tls-cert (PEM)",
            environment: "ELEVEN_RELAY_TLS_KEY"),
        OptionSpec(
            "trusted-proxy", value: "CIDR",
            help: "believe X-Forwarded-For / X-Real-IP from these peers (repeatable)",
            environment: "ELEVEN_RELAY_TRUSTED_PROXIES", repeatable: true),
        OptionSpec(
            "metrics-listen", value: "HOST:PORT", help: "separate HTTP listener for /metrics and /healthz",
            environment: "ELEVEN_RELAY_METRICS_LISTEN"),
        OptionSpec(
            "motd", value: "TEXT", help: "message of the day sent in the welcome",
            environment: "ELEVEN_RELAY_MOTD"),
        OptionSpec("allow-list", help: "let `list` reveal nameplates (off: an empty list)"),
        OptionSpec(
            "permission", value: "hashcash:BITS[:RESOURCE]",
            help: "require a hashcash stamp before bind (default resource eleven-relay; off by default)",
            environment: "ELEVEN_RELAY_PERMISSION"),
        OptionSpec(
            "expiry", value: "PREFIX=DURATION",
            help: "idle time before unattended mailboxes of AppIDs starting with PREFIX expire (repeatable; "
                + "built in: elevenmessenger.com/=72h)", environment: "ELEVEN_RELAY_EXPIRY", repeatable: true),
        OptionSpec(
            "default-expiry", value: "DURATION", help: "idle expiry for other AppIDs",
            environment: "ELEVEN_RELAY_DEFAULT_EXPIRY", default: "11m"),
        OptionSpec(
            "expiry-check", value: "DURATION", help: "how often expiry runs",
            environment: "ELEVEN_RELAY_EXPIRY_CHECK", default: "60s"),
        OptionSpec(
            "nameplate-reuse-delay", value: "DURATION",
            help: "how long a deleted 1- to 3-digit nameplate is not allocated again (0: at once, as the "
                + "reference)", environment: "ELEVEN_RELAY_NAMEPLATE_REUSE_DELAY", default: "10m"),
        OptionSpec(
            "max-message-bytes", value: "N",
            help: "largest client message (texts travel hex-encoded: about half of it is text)",
            environment: "ELEVEN_RELAY_MAX_MESSAGE_BYTES", default: String(RelayLimits().maximumMessageBytes)),
        OptionSpec(
            "max-mailbox-messages", value: "N", help: "messages one mailbox may hold",
            environment: "ELEVEN_RELAY_MAX_MAILBOX_MESSAGES", default: "256"),
        OptionSpec(
            "max-mailbox-bytes", value: "N", help: "bytes of message bodies one mailbox may hold",
            environment: "ELEVEN_RELAY_MAX_MAILBOX_BYTES", default: "4194304"),
        OptionSpec(
            "max-nameplates-per-address", value: "N", help: "open nameplates one source address may hold",
            environment: "ELEVEN_RELAY_MAX_NAMEPLATES_PER_ADDRESS", default: "100"),
        OptionSpec(
            "max-connections", value: "N", help: "open connections in total",
            environment: "ELEVEN_RELAY_MAX_CONNECTIONS", default: "50000"),
        OptionSpec(
            "max-connections-per-address", value: "N", help: "open connections from one source address",
            environment: "ELEVEN_RELAY_MAX_CONNECTIONS_PER_ADDRESS", default: "256"),
        OptionSpec(
            "connection-rate", value: "BURST/PER_SECOND",
            help: "new connections per source address (token bucket)",
            environment: "ELEVEN_RELAY_CONNECTION_RATE", default: "120/4"),
        OptionSpec(
            "allocation-rate", value: "BURST/PER_SECOND", help: "nameplate allocations per source address",
            environment: "ELEVEN_RELAY_ALLOCATION_RATE", default: "60/1"),
        OptionSpec(
            "claim-rate", value: "BURST/PER_SECOND", help: "claims per source address",
            environment: "ELEVEN_RELAY_CLAIM_RATE", default: "120/2"),
        OptionSpec(
            "exempt-address", value: "IP", help: "source address the per-address limits skip (repeatable)",
            environment: "ELEVEN_RELAY_EXEMPT_ADDRESSES", repeatable: true),
        OptionSpec(
            "write-timeout", value: "DURATION",
            help: "drop a client whose unread output has not moved for this long (it stopped reading)",
            environment: "ELEVEN_RELAY_WRITE_TIMEOUT", default: "20s"),
        OptionSpec(
            "no-limits", help: "lift every abuse limit (benchmarks against the reference, which has none)"),
        OptionSpec(
            "transit-listen", value: "HOST:PORT",
            help: "also run a transit relay for file transfers here: raw TCP (clients' --transit-helper "
                + "tcp:HOST:PORT) and WebSocket (ws://HOST:PORT/) on one port (repeatable; off by default)",
            environment: "ELEVEN_RELAY_TRANSIT_LISTEN", repeatable: true),
        OptionSpec(
            "transit-max-connections-per-address", value: "N",
            help: "open transit connections from one address",
            environment: "ELEVEN_RELAY_TRANSIT_MAX_CONNECTIONS_PER_ADDRESS", default: "32"),
        OptionSpec(
            "transit-bandwidth", value: "BYTES_PER_SECOND",
            help:
                "bytes per second one address may send through the transit relay (bursts of 4 seconds' worth)",
            environment: "ELEVEN_RELAY_TRANSIT_BANDWIDTH", default: "16777216"),
        OptionSpec(
            "transit-handshake-timeout", value: "DURATION",
            help: "close a transit connection that has not sent its whole handshake line by then",
            environment: "ELEVEN_RELAY_TRANSIT_HANDSHAKE_TIMEOUT", default: "30s"),
        OptionSpec(
            "transit-idle-timeout", value: "DURATION",
            help: "close a transit pair that moves nothing this long",
            environment: "ELEVEN_RELAY_TRANSIT_IDLE_TIMEOUT", default: "10m"),
    ],
    discussion: """
        Serves the WebSocket at /v1 (GET / answers "Wormhole Relay"). Prints one line
        "eleven-relay listening on ws://HOST:PORT/v1" per address when ready; logs are JSON lines
        on standard error and never contain message bodies, codes or keys.
        SIGHUP reloads the TLS files; SIGTERM closes connections (1001), commits and exits 0.
        If the database becomes unreachable the relay closes its connections, answers with
        errors (and /healthz with 503) and resumes by itself once the database is back.
        Durations: 90s, 15m, 2h, 3d. Repeatable options take comma-separated lists from the
        environment.
        """)

/// A repeatable option: every flag given, else the comma-separated environment value.
func repeated(_ parsed: ParsedArguments, _ name: String) -> [String] {
    parsed.all(name).flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        .filter { !$0.isEmpty }
}

func address(_ text: String, option: String) throws(CLIError) -> SocketAddress {
    // `:4000` would bind every interface without saying so: the host is written out.
    guard !text.hasPrefix(":"), let address = RelayServerConfiguration.parseAddress(text) else {
        throw .usage(
            "'--\(option)' must be a numeric HOST:PORT such as 127.0.0.1:4000 or [::1]:4000, not '\(text)'",
            help: spec.help)
    }
    return address
}

/// Attaches the help text to a usage error from CLISupport's value parsers.
func withHelp<T>(_ body: () throws(CLIError) -> T) throws(CLIError) -> T {
    do { return try body() } catch { throw .usage(error.message, help: spec.help) }
}

func count(_ parsed: ParsedArguments, _ name: String) throws(CLIError) -> Int {
    guard let value = try withHelp({ () throws(CLIError) in try parsed.int(name, in: 1...Int(Int32.max)) })
    else {
        throw .usage("'--\(name)' needs a value", help: spec.help)
    }
    return value
}

func rate(_ parsed: ParsedArguments, _ name: String) throws(CLIError) -> RateLimit {
    let raw = parsed.value(name) ?? ""
    let parts = raw.split(separator: "/")
    guard parts.count == 2, let burst = Double(parts[0]), let perSecond = Double(parts[1]),
        burst >= 1, perSecond > 0, burst.isFinite, perSecond.isFinite
    else {
        throw .usage("'--\(name)' must be BURST/PER_SECOND such as 120/4, not '\(raw)'", help: spec.help)
    }
    return RateLimit(burst: burst, perSecond: perSecond)
}

func duration(_ parsed: ParsedArguments, _ name: String) throws(CLIError) -> Double {
    guard let value = try withHelp({ () throws(CLIError) in try parsed.duration(name, max: 30 * 86_400) })
    else {
        throw .usage("'--\(name)' needs a value", help: spec.help)
    }
    return value
}

func configuration(_ parsed: ParsedArguments) throws(CLIError) -> RelayServerConfiguration {
    var listen: [SocketAddress] = []
    for text in repeated(parsed, "listen") { listen.append(try address(text, option: "listen")) }
    var config = RelayServerConfiguration(listenAddresses: listen, databasePath: parsed.value("db") ?? "")
    if config.databasePath.isEmpty { throw .usage("'--db' must name a file", help: spec.help) }
    switch parsed.value("sync") {
    case "full": config.storageOptions.synchronous = .full
    case "normal": config.storageOptions.synchronous = .normal
    case let other: throw .usage("'--sync' must be full or normal, not '\(other ?? "")'", help: spec.help)
    }
    if let metrics = parsed.value("metrics-listen") {
        config.metricsAddress = try address(metrics, option: "metrics-listen")
    }
    switch (parsed.value("tls-cert"), parsed.value("tls-key")) {
    case (nil, nil): break
    case (let cert?, let key?):
        config.tls = TLSServerConfiguration(certificateChainFile: cert, privateKeyFile: key)
    default: throw .usage("'--tls-cert' and '--tls-key' go together", help: spec.help)
    }
    for text in repeated(parsed, "trusted-proxy") {
        guard let network = IPNetwork(text) else {
            throw .usage(
                "'--trusted-proxy' must be an address or CIDR such as 10.0.0.0/8, not '\(text)'",
                help: spec.help)
        }
        config.trustedProxies.append(network)
    }

    var relay = RelayConfig()
    relay.welcome.motd = parsed.value("motd")
    relay.allowList = parsed.flag("allow-list")
    if let permission = parsed.value("permission") {
        let parts = permission.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count >= 2, parts[0] == "hashcash", let bits = Int(parts[1]), (1...40).contains(bits)
        else {
            throw .usage(
                "'--permission' must be hashcash:BITS[:RESOURCE] with BITS from 1 to 40, not '\(permission)'",
                help: spec.help)
        }
        relay.permission = .hashcash(bits: bits, resource: parts.count > 2 ? parts[2] : "eleven-relay")
    }
    var rules = relay.expiry.rules
    for text in repeated(parsed, "expiry") {
        guard let eq = text.lastIndex(of: "="),
            let seconds = CLISupport.Duration.parse(String(text[text.index(after: eq)...])),
            seconds > 0, seconds <= 365 * 86_400
        else {
            throw .usage(
                "'--expiry' must be PREFIX=DURATION such as example.com/=2h, not '\(text)'", help: spec.help)
        }
        let prefix = String(text[..<eq])
        rules.removeAll { $0.appIDPrefix == prefix }
        rules.append(ExpiryPolicy.Rule(appIDPrefix: prefix, idleSeconds: seconds))
    }
    relay.expiry = ExpiryPolicy(
        rules: rules, defaultIdleSeconds: try duration(parsed, "default-expiry"),
        checkIntervalSeconds: try duration(parsed, "expiry-check"))
    // 0 (in any unit) turns the rest off; anything else is a positive duration.
    relay.nameplateReuseDelay =
        parsed.value("nameplate-reuse-delay").flatMap(CLISupport.Duration.parse) == 0
        ? 0 : try duration(parsed, "nameplate-reuse-delay")

    if parsed.flag("no-limits") {
        relay.limits = .unlimited
        config.maximumConnectionsPerAddress = 1 << 20
    } else {
        relay.limits.maximumMessageBytes = try count(parsed, "max-message-bytes")
        relay.limits.maximumMailboxMessages = try count(parsed, "max-mailbox-messages")
        relay.limits.maximumMailboxBytes = try count(parsed, "max-mailbox-bytes")
        relay.limits.maximumNameplatesPerAddress = try count(parsed, "max-nameplates-per-address")
        relay.limits.maximumConnections = try count(parsed, "max-connections")
        config.maximumConnectionsPerAddress = try count(parsed, "max-connections-per-address")
        relay.limits.connectionRate = try rate(parsed, "connection-rate")
        relay.limits.allocationRate = try rate(parsed, "allocation-rate")
        relay.limits.claimRate = try rate(parsed, "claim-rate")
    }
    for text in repeated(parsed, "exempt-address") {
        guard let ip = IPAddress(text) else {
            throw .usage("'--exempt-address' must be a numeric IP address, not '\(text)'", help: spec.help)
        }
        // What the per-address limits count against: the host, or an IPv6 host's /64.
        let family: ClientAddress.Family = ip.isIPv6 ? .ipv6 : .ipv4
        relay.limits.exemptAddresses.insert(
            ClientAddress(family: family, host: ip.description, port: 0).source)
    }
    for text in repeated(parsed, "transit-listen") {
        guard let address = RelayServerConfiguration.parseAddress(text) else {
            throw .usage(
                "'--transit-listen' must be HOST:PORT with a numeric host, not '\(text)'", help: spec.help)
        }
        config.transitListenAddresses.append(address)
    }
    if parsed.flag("no-limits") {
        config.transit = .unlimited
    } else {
        config.transit.maximumConnectionsPerAddress = try count(parsed, "transit-max-connections-per-address")
        let bandwidth = Double(try count(parsed, "transit-bandwidth"))
        config.transit.bandwidthPerAddress = RateLimit(burst: 4 * bandwidth, perSecond: bandwidth)
    }
    config.transit.idleTimeout = try duration(parsed, "transit-idle-timeout")
    config.transit.handshakeTimeout = try duration(parsed, "transit-handshake-timeout")
    config.transit.exemptAddresses = relay.limits.exemptAddresses
    config.relay = relay
    config.writeTimeout = .milliseconds(Int64(try duration(parsed, "write-timeout") * 1000))
    return config
}

runProgram(name: "eleven-relay", json: false) {
    let parsed = try spec.parse(Array(CommandLine.arguments.dropFirst()))
    var configured = try configuration(parsed)
    var storage: (any RelayStorage)?
    if let text = parsed.value("postgres"), !text.isEmpty {
        let url = PostgresURL(text)
        guard url.isPlausible else {
            throw CLIError.usage(
                "'--postgres' must be a postgres:// URI or a key=value connection string", help: spec.help)
        }
        let pool = try count(parsed, "postgres-pool")
        do {
            storage = try PostgresRelayStorage(url: url, options: .init(maximumConnections: pool))
            // What the start-up log names as the database (password redacted).
            configured.databasePath = "postgresql: \(url)"
        } catch {
            throw CLIError(code: .storage, message: "cannot open \(url): \(error)", status: .unavailable)
        }
    }
    let config = configured
    let server: RelayServer
    do {
        server = try RelayServer(configuration: config, storage: storage)
        try server.start()
    } catch let error as RelayServerError {
        // A database file that cannot be opened is local state, as eleven-server reports it; a
        // PostgreSQL server that cannot be reached is unavailable.
        let status: ExitStatus =
            switch error.code {
            case .foreignDatabase: .localState
            case .storage: storage == nil ? .localState : .unavailable
            case .listen, .tls: .unavailable
            }
        throw CLIError(reporting: error.code.rawValue, message: error.message, status: status)
    }
    let hup = SignalWatcher(signal: SIGHUP) {
        if config.tls != nil { try? server.reloadCertificates() }
    }
    let stop: @Sendable () -> Void = {
        server.shutdown()
        exit(ExitStatus.success.rawValue)
    }
    let term = SignalWatcher(signal: SIGTERM, handler: stop)
    let interrupt = SignalWatcher(signal: SIGINT, handler: stop)
    for url in server.webSocketURLs { Terminal.out("eleven-relay listening on \(url)") }
    for url in server.transitURLs { Terminal.out("eleven-relay transit listening on \(url)") }
    if let metrics = server.metricsURL { Terminal.out("eleven-relay metrics on \(metrics)/metrics") }
    withExtendedLifetime((hup, term, interrupt)) {
        while true { pause() }
    }
}
