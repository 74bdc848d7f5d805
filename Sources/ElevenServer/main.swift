import CLISupport
import Foundation
import Net
import SpaceServer

// `eleven-server`: the reference space server. One command, no configuration: SQLite next to
// you, loopback only. Flags and environment variables for production.

let spec = CommandSpec(
    ["eleven-server"],
    summary: "Host Eleven spaces: members, threads, key wraps and end-to-end encrypted messages.",
    options: [
        OptionSpec(
            "listen", value: "HOST:PORT", help: "address to listen on (repeatable)",
            environment: "ELEVEN_SERVER_LISTEN", default: "127.0.0.1:8711", repeatable: true),
        OptionSpec(
            "db", value: "FILE", help: "SQLite database file",
            environment: "ELEVEN_SERVER_DB"),
        OptionSpec(
            "public-url", value: "URL", help: "the URL clients reach this server at",
            environment: "ELEVEN_SERVER_PUBLIC_URL"),
        OptionSpec(
            "tls-cert", value: "FILE", help: "PEM certificate chain; serve HTTPS (reloaded on SIGHUP)",
            environment: "ELEVEN_SERVER_TLS_CERT"),
        OptionSpec(
            "tls-key", value: "FILE", help: "PEM private key for --tls-cert",
            environment: "ELEVEN_SERVER_TLS_KEY"),
        OptionSpec(
            "creation-token", value: "TOKEN",
            help: "require this bearer token to create spaces (default: anyone may)",
            environment: "ELEVEN_SERVER_CREATION_TOKEN"),
        OptionSpec(
            "sync", value: "full|normal",
            help: "fsync policy: full survives power loss, normal survives a crash of the process",
            environment: "ELEVEN_SERVER_SYNC", default: "full"),
        OptionSpec(
            "apple-app-site-association", value: "FILE",
            help: "serve this JSON file at /.well-known/apple-app-site-association (default: 404)",
            environment: "ELEVEN_SERVER_APPLE_APP_SITE_ASSOCIATION"),
        OptionSpec(
            "assetlinks", value: "FILE",
            help: "serve this JSON file at /.well-known/assetlinks.json (default: 404)",
            environment: "ELEVEN_SERVER_ASSETLINKS"),
        OptionSpec(
            "relay", value: "URL",
            help: "the join relay to advertise (GET /api/relay): members' short codes and word links use it",
            environment: "ELEVEN_SERVER_RELAY"),
        OptionSpec("home", help: "also serve the home API: saved-spaces vaults and device linking"),
        OptionSpec(
            "smtp", value: "HOST:PORT", help: "with --home: mail sign-in codes through this mail server",
            environment: "ELEVEN_SERVER_SMTP"),
        OptionSpec(
            "smtp-from", value: "ADDRESS",
            help: "the sender of sign-in codes (default: eleven@ the --smtp host)",
            environment: "ELEVEN_SERVER_SMTP_FROM"),
        OptionSpec(
            "smtp-security", value: "none|starttls|tls",
            help: "how the mail connection is protected (STARTTLS, or TLS from the start)",
            environment: "ELEVEN_SERVER_SMTP_SECURITY", default: "starttls"),
        OptionSpec(
            "smtp-ca-file", value: "FILE", help: "trust these PEM certificates for the mail server's TLS",
            environment: "ELEVEN_SERVER_SMTP_CA_FILE"),
        OptionSpec(
            "smtp-user", value: "NAME", help: "log in to the mail server as NAME",
            environment: "ELEVEN_SERVER_SMTP_USER"),
        OptionSpec(
            "smtp-password-file", value: "FILE", help: "the mail server password, read from FILE",
            environment: "ELEVEN_SERVER_SMTP_PASSWORD_FILE"),
        OptionSpec("quiet", help: "do not log requests"),
    ],
    discussion: """
        The database defaults to $ELEVEN_SERVER_HOME/eleven-server.sqlite, or ./eleven-server.sqlite
        when ELEVEN_SERVER_HOME is not set. Logs are JSON lines on standard error and never contain
        tokens, keys or message bodies. SIGTERM and SIGINT stop gracefully; SIGHUP reloads the
        TLS certificate. GET /invite (and the legacy /join/join) is the welcome page of invite
        links: the browser reads the link's fragment, which never reaches this server.
        """)

/// `HOST:PORT`, `[V6]:PORT` or a bare port (loopback).
func parseListen(_ text: String) throws(CLIError) -> SocketAddress {
    var host = "127.0.0.1"
    var portText = text
    if let colon = text.lastIndex(of: ":") {
        host = String(text[..<colon])
        portText = String(text[text.index(after: colon)...])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    }
    // `:4100` would bind every interface without saying so: the host is written out or not given.
    guard !host.isEmpty else {
        throw .usage(
            "'--listen' needs a host before ':': 127.0.0.1\(text) for this machine only, 0.0.0.0\(text) for "
                + "every interface", help: spec.help)
    }
    guard let port = UInt16(portText), let address = SocketAddress(numericHost: host, port: port) else {
        throw .usage(
            "'--listen' needs a numeric address and port like 127.0.0.1:8711 or [::1]:8711, not '\(text)'",
            help: spec.help)
    }
    return address
}

/// `--smtp` and its companions; nil when no mail server is named.
func mailConfiguration(_ parsed: ParsedArguments) throws(CLIError) -> HomeMailConfiguration? {
    guard let server = parsed.value("smtp") else { return nil }
    guard parsed.flag("home") else { throw .usage("'--smtp' needs '--home'", help: nil) }
    guard let colon = server.lastIndex(of: ":"), UInt16(server[server.index(after: colon)...]) != nil,
        colon != server.startIndex
    else {
        throw .usage("'--smtp' must be HOST:PORT, like mail.example.com:587, not '\(server)'", help: nil)
    }
    let security = parsed.value("smtp-security") ?? "starttls"
    guard let mode = HomeMailConfiguration.Security(rawValue: security) else {
        throw .usage("'--smtp-security' must be none, starttls or tls, not '\(security)'", help: nil)
    }
    var password: String?
    if let file = parsed.value("smtp-password-file") {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw .usage("'--smtp-password-file' must name a readable file, not '\(file)'", help: nil)
        }
        password = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
    let host = server[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    var mail = HomeMailConfiguration(
        server: server, sender: parsed.value("smtp-from") ?? "eleven@\(host)", security: mode,
        username: parsed.value("smtp-user"), password: password)
    mail.caFile = parsed.value("smtp-ca-file")
    return mail
}

let arguments = Array(CommandLine.arguments.dropFirst())
runProgram(name: "eleven-server", json: false) {
    let parsed = try spec.parse(arguments)
    let environment = ProcessInfo.processInfo.environment
    let database: String
    if let db = parsed.value("db") {
        database = db
    } else if let home = environment["ELEVEN_SERVER_HOME"], !home.isEmpty {
        try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        database = (home as NSString).appendingPathComponent("eleven-server.sqlite")
    } else {
        database = "eleven-server.sqlite"
    }
    var configuration = SpaceHTTPConfiguration(databasePath: database)
    configuration.listenAddresses = try parsed.all("listen").map { text throws(CLIError) in
        try parseListen(text)
    }
    if let url = parsed.value("public-url") {
        // Parsed as clients will parse it: links and the welcome page are built on it.
        guard let parsedURL = try? NetURL(url), parsedURL.scheme == "http" || parsedURL.scheme == "https"
        else {
            throw CLIError.usage(
                "'--public-url' must be an http:// or https:// URL such as https://eleven.example.org, not '\(url)'",
                help: spec.help)
        }
        configuration.publicURL = url
    }
    configuration.api.spaceCreationToken = parsed.value("creation-token")
    if let relay = parsed.value("relay") {
        guard relay.hasPrefix("ws://") || relay.hasPrefix("wss://") else {
            throw CLIError.usage("'--relay' must be a ws:// or wss:// URL, not '\(relay)'", help: nil)
        }
        configuration.api.relayURL = relay
    }
    configuration.api.homeEnabled = parsed.flag("home")
    if configuration.api.homeEnabled { configuration.api.maximumBodyBytes = 8 << 20 }
    configuration.api.homeMail = try mailConfiguration(parsed)
    switch (parsed.value("tls-cert"), parsed.value("tls-key")) {
    case (let cert?, let key?):
        configuration.tls = TLSServerConfiguration(certificateChainFile: cert, privateKeyFile: key)
    case (nil, nil):
        break
    default:
        throw CLIError.usage("'--tls-cert' and '--tls-key' go together", help: spec.help)
    }
    switch parsed.value("sync") {
    case "full": configuration.api.syncEveryCommit = true
    case "normal": configuration.api.syncEveryCommit = false
    case let other:
        throw CLIError.usage("'--sync' must be full or normal, not '\(other ?? "")'", help: spec.help)
    }
    for (option, keyPath) in [
        ("apple-app-site-association", \SpaceHTTPConfiguration.appleAppSiteAssociation),
        ("assetlinks", \SpaceHTTPConfiguration.assetLinks),
    ] {
        guard let file = parsed.value(option) else { continue }
        guard let data = FileManager.default.contents(atPath: file),
            (try? JSONSerialization.jsonObject(with: data)) != nil
        else {
            throw CLIError.usage(
                "'--\(option)' must name a readable JSON file, not '\(file)'", help: spec.help)
        }
        configuration[keyPath: keyPath] = Array(data)
    }
    let quiet = parsed.flag("quiet")
    configuration.log = ServerLog(skipping: quiet ? ["request"] : []) { line in Terminal.err(line) }

    let server: SpaceHTTPServer
    do {
        server = try SpaceHTTPServer(configuration: configuration)
    } catch {
        // Another program's file: say whose, under its own code.
        if let refusal = error as? SpaceStoreError, case .foreignDatabase(let foreign) = refusal {
            throw CLIError(reporting: refusal.code, message: foreign.message, status: .localState)
        }
        throw CLIError(
            code: .databaseUnavailable, message: "can't open the database \(database): \(error)",
            status: .localState)
    }
    do throws(NetError) {
        try server.start()
    } catch {
        throw CLIError(reporting: error.code.rawValue, message: error.message, status: .unavailable)
    }
    Terminal.out("eleven-server listening on \(configuration.publicURL ?? server.baseURL)")

    let log = configuration.log
    let hangUp = SignalWatcher(signal: SIGHUP) {
        do throws(NetError) {
            try server.reloadCertificates()
        } catch {
            log.log("certificates_reload_failed", ["message": error.message])
        }
    }
    let stop: @Sendable () -> Void = {
        server.shutdown()
        exit(ExitStatus.success.rawValue)
    }
    let terminate = SignalWatcher(signal: SIGTERM, handler: stop)
    let interrupt = SignalWatcher(signal: SIGINT, handler: stop)
    withExtendedLifetime((hangUp, terminate, interrupt)) {
        while true { sleep(3600) }
    }
}
