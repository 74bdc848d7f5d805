import CLISupport
import ClientCore
import Foundation
import Net
import SidecarBot
import Support

// `eleven-bot`: the sidecar bot that attends short-code joins for one space. Thin: arguments,
// the key, wiring and exit statuses; the logic lives in the Bot module.

private let stateOption = OptionSpec(
    "state", value: "DIR", help: "the bot's state directory (one SQLite file)",
    environment: "ELEVEN_BOT_STATE")
private let keyOption = OptionSpec(
    "key-file", value: "FILE",
    help: "the key that seals the bot's private keys (default $ELEVEN_BOT_KEY_FILE, else "
        + "$CREDENTIALS_DIRECTORY/eleven-bot.key)")
private let relayOption = OptionSpec(
    "relay", value: "URL", help: "the join relay", environment: "ELEVEN_RELAY",
    default: "ws://127.0.0.1:4000/v1")
private let jsonOption = OptionSpec("json", help: "print JSON for scripts")

private func stateDirectory(_ arguments: ParsedArguments) throws -> String {
    guard let state = arguments.value("state"), !state.isEmpty else {
        throw CLIError.usage("missing --state DIR (or ELEVEN_BOT_STATE)", help: nil)
    }
    return state
}

/// Where the bot's key lives. Not saying is a usage error for every command alike; a key file
/// that is named but cannot be read is local state (5), as `BotSealingKey.load` reports it.
private func keyPath(_ arguments: ParsedArguments) throws -> String {
    guard
        let path = BotSealingKey.location(
            explicit: arguments.value("key-file"), environment: ProcessInfo.processInfo.environment)
    else {
        throw CLIError(
            code: .keyMissing,
            message: "Say where the bot's key lives: --key-file FILE, ELEVEN_BOT_KEY_FILE, or "
                + "$CREDENTIALS_DIRECTORY/eleven-bot.key under systemd.",
            status: .usage)
    }
    return path
}

private func cliError(_ error: BotError) -> CLIError {
    let status: ExitStatus =
        switch error.kind {
        case .key, .state: .localState
        case .unavailable: .unavailable
        case .usage: .usage
        }
    return CLIError(reporting: error.code, message: error.message, status: status)
}

private func withBotErrors<T>(_ body: () throws(BotError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw cliError(error)
    }
}

private func openStore(_ arguments: ParsedArguments) throws -> BotStore {
    let directory = try stateDirectory(arguments)
    let path = try keyPath(arguments)
    return try withBotErrors { () throws(BotError) in
        try BotStore(directory: directory, key: try BotSealingKey.load(path: path))
    }
}

/// Takes `DIR/bot.lock` for the life of the process: two bots on one state would both claim the
/// same invites, and the loser would refuse joiners and leave nameplates behind.
private func lockState(_ directory: String) throws -> StateLock {
    let path = (directory as NSString).appendingPathComponent("bot.lock")
    do throws(StateLock.Failure) {
        return try StateLock.acquire(path: path, wait: false, recordPID: true)
    } catch {
        switch error {
        case .held(let pid):
            throw CLIError(
                code: .stateLocked,
                message: "another eleven-bot is running with this state"
                    + (pid.map { " (pid \($0))" } ?? "")
                    + ": stop it first, or give this one its own --state.",
                status: .localState)
        case .system(let err):
            throw CLIError(
                code: .stateUnreadable,
                message: "can't lock \(path): \(String(cString: strerror(err)).lowercased()).",
                status: .localState)
        }
    }
}

private func relayURL(_ arguments: ParsedArguments) throws -> String {
    let relay = arguments.value("relay") ?? "ws://127.0.0.1:4000/v1"
    // Parsed as the connection will parse it: a bad port is a usage error now, not a reconnect loop.
    guard (try? NetURL(relay)).map({ $0.scheme == "ws" || $0.scheme == "wss" }) == true else {
        throw CLIError.usage(
            "'--relay' must be a ws:// or wss:// URL such as ws://127.0.0.1:4000/v1, not '\(relay)'",
            help: nil)
    }
    return relay
}

let program = CommandGroup(
    program: "eleven-bot",
    summary:
        "The sidecar bot: a member of one space that attends short-code joins, so nobody has to be online.",
    entries: [
        .init(
            CommandSpec(
                ["eleven-bot", "init"], summary: "Create the bot's identity and state.",
                options: [stateOption, keyOption, jsonOption],
                discussion: """
                    Creates DIR/bot.sqlite with a new identity whose private keys are sealed under the key \
                    file; the key file is created (mode 0600) when it does not exist yet. Next, have a \
                    member run `eleven invite --short --yes` and run `eleven-bot join CODE`.
                    """)
        ) { arguments in
            let directory = try stateDirectory(arguments)
            let path = try keyPath(arguments)
            let (key, created) = try withBotErrors { () throws(BotError) in
                try BotSealingKey.loadOrCreate(path: path)
            }
            let store = try withBotErrors { () throws(BotError) in
                try BotStore(directory: directory, key: key, create: true)
            }
            let identity = try withBotErrors { () throws(BotError) in try store.identity(create: true) }
            if arguments.flag("json") {
                Terminal.json([
                    "state": store.path, "keyFile": path, "keyCreated": created,
                    "publicKeys": identity.publicKeys.text,
                ])
            } else {
                Terminal.out("Bot state: \(store.path)")
                Terminal.out(
                    created
                        ? "Created the key file \(path) (keep it safe; the state is useless without it)."
                        : "Key file: \(path)")
                Terminal.out("Public keys: \(identity.publicKeys.text)")
                // The next command as it must be typed: the key given on this command line has to
                // be given to the next one too (the environment carries over by itself).
                var next = "eleven-bot join CODE --state \(shellQuoted(directory))"
                if arguments.wasGiven("key-file") { next += " --key-file \(shellQuoted(path))" }
                Terminal.out(
                    "Next: a member runs `eleven invite --short --yes`; then `\(next)` with the code it printed."
                )
            }
        },
        .init(
            CommandSpec(
                ["eleven-bot", "join"], summary: "Join the space with a short code from one of its members.",
                options: [
                    stateOption, keyOption, relayOption,
                    OptionSpec("name", value: "NAME", help: "the bot's name in the space", default: "Bot"),
                    jsonOption,
                ],
                positionals: [
                    PositionalSpec("CODE", help: "the code a member read out, e.g. coral-piano-42")
                ],
                discussion:
                    "Then the space's owner runs `eleven bot enable --member NAME` to let it attend invites.")
        ) { arguments in
            let relay = try relayURL(arguments)
            let store = try openStore(arguments)
            guard let code = arguments.positional(0) else { throw CLIError.usage("missing CODE", help: nil) }
            let name = arguments.value("name") ?? "Bot"
            let saved = try withBotErrors { () throws(BotError) in
                try BotProvisioning.join(store: store, code: code, relay: relay, name: name)
            }
            if arguments.flag("json") {
                Terminal.json([
                    "event": "joined", "space": saved.space.base64URL, "name": saved.name,
                    "member": saved.member.base64URL,
                ])
            } else {
                Terminal.out("The bot joined \(saved.name) as \(name) (member \(saved.member)).")
                Terminal.out(
                    "Next: the owner runs `eleven bot enable --member \(name)`, then start `eleven-bot run`.")
            }
        },
        .init(
            CommandSpec(
                ["eleven-bot", "run"],
                summary: "Attend invites: read the inbox, serve joiners, until stopped.",
                options: [
                    stateOption, keyOption, relayOption,
                    OptionSpec(
                        "joins-per-minute", value: "N",
                        help: "admissions per minute across the space (0: no limit)",
                        environment: "ELEVEN_BOT_JOINS_PER_MINUTE", default: "600"),
                    OptionSpec(
                        "step-timeout", value: "DURATION", help: "longest wait for a joiner's next message",
                        default: "30s"),
                    OptionSpec(
                        "max-request-age", value: "DURATION",
                        help: "drop invite requests older than this (their inviter attends them instead)",
                        default: "30s"),
                ],
                discussion: """
                    Logs one JSON object per line on standard output (never words, keys or tokens). Kill it \
                    at any time: on restart it resumes every open invite from its state. SIGTERM and SIGINT \
                    stop it at once.
                    """)
        ) { arguments in
            var configuration = BotConfiguration(relay: try relayURL(arguments))
            let store = try openStore(arguments)
            let lock = try lockState(try stateDirectory(arguments))
            defer { withExtendedLifetime(lock) {} }
            configuration.joinsPerMinute = try arguments.int("joins-per-minute", in: 0...1_000_000) ?? 600
            configuration.stepTimeout = .seconds(try arguments.duration("step-timeout", max: 3600) ?? 30)
            configuration.maxRequestAge = Int64(try arguments.duration("max-request-age", max: 86_400) ?? 30)
            let runner = try withBotErrors { () throws(BotError) in
                try BotRunner(store: store, configuration: configuration) { line in Terminal.json(line) }
            }
            // Every step is saved before the next, so stopping at once loses nothing.
            let watchers = [SIGTERM, SIGINT].map { SignalWatcher(signal: $0) { _exit(0) } }
            runner.run()
            for watcher in watchers { watcher.cancel() }
        },
        .init(
            CommandSpec(
                ["eleven-bot", "status"], summary: "Show the space, open invites, recent joins and refusals.",
                options: [stateOption, keyOption, jsonOption])
        ) { arguments in
            let store = try openStore(arguments)
            let status = try withBotErrors { () throws(BotError) in try BotStatus(store: store) }
            if arguments.flag("json") {
                Terminal.json(status.json)
                return
            }
            if let space = status.space {
                Terminal.out(
                    "Space: \(space.name) (\(space.space)) on \(space.server); the bot is member \(status.member)."
                )
            } else {
                Terminal.out("Not in a space yet (run `eleven-bot join CODE`).")
            }
            Terminal.out("Open invites: \(status.openInvites.count)")
            for invite in status.openInvites {
                let expires = Date(timeIntervalSince1970: TimeInterval(invite.expiresAt))
                Terminal.out(
                    "  nameplate \(invite.nameplate ?? "-")  \(invite.state)  \(invite.usesLeft) use(s) left  expires \(expires)"
                )
            }
            let counters = status.counters.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            Terminal.out("Counters: \(counters.isEmpty ? "none" : counters.joined(separator: ", "))")
            if !status.recent.isEmpty {
                Terminal.out("Recent:")
                for entry in status.recent {
                    let at = Date(timeIntervalSince1970: TimeInterval(entry.at))
                    Terminal.out(
                        "  \(at)  \(entry.kind)  \(entry.nameplate.map { "nameplate \($0)  " } ?? "")\(entry.detail)"
                    )
                }
            }
        },
    ])

let arguments = Array(CommandLine.arguments.dropFirst())
runProgram(name: "eleven-bot", json: arguments.contains("--json")) {
    try program.run(arguments)
}
