import CLISupport
import ClientCore
import Foundation
import JoinProtocol
import PAKE

// `eleven send --text` / `eleven receive`: Magic Wormhole text transfers with any stock client
// (Python `wormhole`, wormhole-william, …) through any Wormhole relay.

/// The public Magic Wormhole relay, which the other clients use by default.
let wormholeDefaultRelay = "ws://relay.magic-wormhole.io:4000/v1"
/// The AppID of the stock file/text transfer clients.
let wormholeDefaultAppID = "lothar.com/wormhole/text-or-file-xfer"

let wormholeCommonOptions: [OptionSpec] = [
    OptionSpec("verify", help: "show the verifier and ask before going on"),
    OptionSpec(
        "relay", value: "URL", help: "the Magic Wormhole relay", environment: "ELEVEN_WORMHOLE_RELAY",
        default: wormholeDefaultRelay),
    OptionSpec(
        "appid", value: "APPID", help: "the application id both sides use", default: wormholeDefaultAppID),
    OptionSpec("timeout", value: "DURATION", help: "how long to wait for the other side", default: "30m"),
    OptionSpec("json", help: "print JSON lines instead of text"),
]

let wormholeSendOptions: [OptionSpec] =
    [
        OptionSpec("text", value: "TEXT", help: "the text to send (default: read standard input)"),
        OptionSpec(
            "code", value: "CODE", help: "use this code (like 7-guitarist-revenge) instead of a new one"),
        OptionSpec("code-length", value: "N", help: "how many words a new code has", default: "2"),
    ] + wormholeCommonOptions

let wormholeReceiveOptions: [OptionSpec] = wormholeCommonOptions

/// `eleven send` does two things: a message to a space thread (`eleven send TEXT…`), or a text
/// to any Magic Wormhole client (`--text TEXT`, or standard input, with no TEXT argument).
let sendSpec = CommandSpec(
    ["eleven", "send"],
    summary: "Send a message to a space thread, or a text through Magic Wormhole (--text).",
    options: spaceSendOptions + wormholeSendOptions,
    positionals: [
        PositionalSpec(
            "TEXT", help: "a message for a thread of a saved space", optional: true, variadic: true)
    ],
    discussion: """
        With TEXT: sends it, end-to-end encrypted, to a thread of one of your spaces (--space, \
        --thread).
        Without TEXT: Magic Wormhole. Prints a code such as 7-guitarist-revenge and waits for the \
        other side (`wormhole receive` or `eleven receive`) to type it. The text is --text, or else \
        all of standard input, sent byte for byte (a final newline included).
        """)

let wormholeReceiveSpec = CommandSpec(
    ["eleven", "receive"], summary: "Receive a text through Magic Wormhole (from `wormhole send --text`).",
    options: wormholeReceiveOptions,
    positionals: [
        PositionalSpec("CODE", help: "the code the sender shows; asked for when omitted", optional: true)
    ],
    discussion: """
        The text goes to standard output exactly as sent. Only when standard output is a terminal \
        and the text does not end with a newline is one added, so the prompt starts on its own line. \
        File and directory offers are refused (the sender is told to use --text).
        """)

let wormholeCommands: [CommandGroup.Entry] = [
    .init(sendSpec) { arguments in
        if arguments.positionals.isEmpty {
            let spaceOnly = ["space", "thread"].filter { arguments.wasGiven($0) }
            if let option = spaceOnly.first {
                throw CLIError.usage(
                    "'--\(option)' goes with a message: eleven send TEXT --\(option) …", help: nil)
            }
            try runWormholeSend(arguments)
        } else {
            let wormholeOnly = ["text", "code", "code-length", "verify", "relay", "appid", "timeout"].filter {
                arguments.wasGiven($0)
            }
            if let option = wormholeOnly.first {
                throw CLIError.usage(
                    "'--\(option)' is for Magic Wormhole, which takes no TEXT argument "
                        + "(eleven send --text TEXT)", help: nil)
            }
            try runSpaceSend(arguments)
        }
    },
    .init(wormholeReceiveSpec) { try runWormholeReceive($0) },
]

/// `eleven send --text TEXT | --code CODE | …`.
func runWormholeSend(_ arguments: ParsedArguments) throws {
    let settings = try WormholeSettings(arguments)
    let textFromStdin = arguments.value("text") == nil
    let text: String
    if let given = arguments.value("text") {
        text = given
    } else {
        guard isatty(0) != 1 else {
            throw CLIError.usage(
                "give the text with --text TEXT, or pipe it in (echo hello | eleven send)",
                help: sendSpec.help)
        }
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard !data.isEmpty else {
            throw CLIError.usage(
                "standard input was empty: give the text with --text TEXT (--text \"\" sends an empty one)",
                help: nil)
        }
        guard let decoded = String(validating: data, as: UTF8.self) else {
            throw CLIError(code: .notText, message: "standard input is not UTF-8 text", status: .usage)
        }
        text = decoded
    }
    // The relay's limit, checked before any traffic: a text it would refuse never leaves.
    guard WormholeMessage.offer(text: text).count <= WormholeMessage.maximumPlaintextBytes else {
        throw CLIError(
            code: .textTooLong,
            message:
                "the text is \(text.utf8.count) bytes; a Wormhole text may be at most "
                + "\(WormholeMessage.maximumTextBytes) bytes (texts travel hex-encoded, at twice "
                + "their size, and the relay takes messages of a bounded size)",
            status: .usage)
    }
    var g = SystemRandomNumberGenerator()
    let side = Rendezvous.Side.random(using: &g)
    let transfer: WormholeTransfer
    if let given = arguments.value("code") {
        let code = try wormholeCode(given)
        transfer = WormholeTransfer(
            role: .sender(text: text), code: code, appID: settings.appID, side: side, verify: settings.verify)
        announce(code, json: settings.json)
    } else {
        let words = try arguments.int("code-length", in: 2...16) ?? 2
        transfer = WormholeTransfer(
            sendingText: text, wordCount: words, appID: settings.appID, side: side, verify: settings.verify)
    }
    let (outcome, verifier) = try runWormhole(
        transfer, settings: settings, answersFromTerminal: textFromStdin)
    guard case .sent = outcome else { throw wormholeFailure(outcome) }
    if settings.json {
        Terminal.json(["event": "sent", "verifier": verifier ?? ""])
    } else {
        Terminal.err("text message sent")
    }
}

/// `eleven receive [CODE]`.
func runWormholeReceive(_ arguments: ParsedArguments) throws {
    let settings = try WormholeSettings(arguments)
    let typed: String
    if let given = arguments.positional(0) {
        typed = given
    } else {
        guard isatty(0) == 1 else {
            throw CLIError.usage(
                "give the code as an argument (eleven receive 7-guitarist-revenge): standard input is "
                    + "not a terminal to ask for it", help: wormholeReceiveSpec.help)
        }
        typed = try promptForCode(
            "Enter the Wormhole code (Tab completes words): ", candidates: wormholeCompletions)
    }
    let code = try wormholeCode(typed)
    var g = SystemRandomNumberGenerator()
    let transfer = WormholeTransfer(
        role: .receiver, code: code, appID: settings.appID, side: .random(using: &g), verify: settings.verify)
    let (outcome, verifier) = try runWormhole(transfer, settings: settings, answersFromTerminal: false)
    guard case .received(let text) = outcome else { throw wormholeFailure(outcome) }
    if settings.json {
        Terminal.json(["event": "received", "text": text, "verifier": verifier ?? ""])
    } else {
        var bytes = Array(text.utf8)
        if isatty(1) == 1 && bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
        writeAll(1, bytes)
    }
}

/// What both commands take from their options.
struct WormholeSettings {
    let relay: String
    let appID: String
    let timeout: TimeInterval
    let verify: Bool
    let json: Bool

    init(_ arguments: ParsedArguments) throws {
        relay = try checkedRelayURL(arguments.value("relay") ?? wormholeDefaultRelay)
        appID = arguments.value("appid") ?? wormholeDefaultAppID
        guard !appID.isEmpty else { throw CLIError.usage("'--appid' must not be empty", help: nil) }
        timeout = try arguments.duration("timeout", max: 7 * 86_400) ?? 1800
        verify = arguments.flag("verify")
        json = arguments.flag("json")
    }
}

/// Runs one transfer to its end: connects, feeds rendezvous events to the machine, performs
/// its actions; returns how it ended and the verifier (once the key was confirmed).
/// `answersFromTerminal`: read the `--verify` answer from /dev/tty (standard input carried the
/// text).
func runWormhole(
    _ transfer: consuming WormholeTransfer, settings: WormholeSettings, answersFromTerminal: Bool
) throws -> (WormholeOutcome, String?) {
    let start: RendezvousMachine.Start =
        transfer.code.map { .claim($0.nameplate) } ?? .allocate
    let connection = RendezvousConnection(
        url: settings.relay,
        machine: RendezvousMachine(
            appID: settings.appID, side: transfer.side, start: start, clientVersion: ["eleven", "1"]))
    var warnedReconnect = false
    connection.onReconnect = { [unowned connection] _ in
        if !warnedReconnect && !settings.json {
            warnedReconnect = true
            let why = connection.lostBecause.map { " (\($0))" } ?? ""
            Terminal.err("Lost the connection to the relay\(why); reconnecting…")
        }
    }
    do {
        try connection.start()
    } catch {
        throw relayFailure(error)
    }
    // The receiver waits for a sender it cannot see: say so, as `wormhole receive` does.
    if transfer.role == .receiver && !settings.json { Terminal.err("Waiting for the sender…") }
    var random = SystemRandom()
    var verifier: String?
    var actions = transfer.start(using: &random)
    let deadline = ContinuousClock.now + .seconds(settings.timeout)
    while true {
        while !actions.isEmpty {
            let action = actions.removeFirst()
            switch action {
            case .send(let phase, let body):
                do {
                    try connection.send(phase: phase, body: body)
                } catch {
                    connection.disconnect()
                    throw relayFailure(error)
                }
            case .codeReady(let code):
                announce(code, json: settings.json)
            case .keyConfirmed(let hex):
                verifier = hex
            case .askVerifier(let verifier):
                let approved = askYesNo(
                    "Verifier \(verifier). ok? (yes/no): ", fromTerminal: answersFromTerminal)
                actions += transfer.approveVerifier(approved, using: &random)
            case .close(let mood):
                connection.close(mood: mood)
            case .finished(let outcome):
                return (outcome, verifier)
            }
        }
        do {
            let remaining = deadline - ContinuousClock.now
            let event = try connection.next(timeout: max(remaining, .milliseconds(1)))
            if case .motd(let text) = event, !settings.json { Terminal.err("The relay says: \(text)") }
            actions = transfer.handle(event, peerSide: connection.machine.peerSide, using: &random)
        } catch .timedOut {
            let why =
                transfer.isConfirmed
                ? "the other side stopped answering"
                : "nobody completed the code in time (\(formatDuration(settings.timeout)))"
            actions = transfer.abandon(.timedOut(why))
        } catch {
            connection.disconnect()
            throw relayFailure(error)
        }
    }
}

/// Completions of a partly typed Wormhole code (`7-guit`): the last word from the PGP word list
/// (either half; the nameplate number is not completed), the text before it kept as typed.
@Sendable func wormholeCompletions(_ partial: String) -> [String] {
    let head = partial.lastIndex(of: "-").map { partial[...$0] } ?? ""
    let typed = partial.dropFirst(head.count).lowercased()
    guard !head.isEmpty, typed.allSatisfy(\.isLetter) else { return [] }
    return (WormholeWordList.even + WormholeWordList.odd).filter { $0.hasPrefix(typed) }.sorted().map {
        head + $0
    }
}

private func wormholeCode(_ text: String) throws -> WormholeCode {
    do {
        return try WormholeCode(parsing: text)
    } catch {
        throw CLIError(reporting: error.code, message: error.description, status: .usage)
    }
}

private func announce(_ code: WormholeCode, json: Bool) {
    if json {
        Terminal.json(["event": "code", "code": code.text])
    } else {
        Terminal.out("Wormhole code is: \(code.text)")
        Terminal.err(
            "On the other computer, run: eleven receive \(code.text)  (or: wormhole receive \(code.text))")
    }
}

/// The exit status and message of a failed transfer.
func wormholeFailure(_ outcome: WormholeOutcome) -> CLIError {
    guard case .failed(let error) = outcome else {
        return CLIError(code: .failure, message: "the transfer ended unexpectedly")
    }
    let status: ExitStatus
    switch error {
    case .invalidCode: status = .usage
    case .codeMismatch, .badKeyExchange: status = .codeRejected
    case .badPeerMessage: status = .failure
    case .peerError, .offerNotSupported, .textNotAccepted, .verifierRejected: status = .refused
    case .timedOut: status = .timedOut
    }
    return CLIError(reporting: error.code, message: error.description, status: status)
}

private func relayFailure(_ error: RelayConnectionError) -> CLIError {
    switch error {
    case .unreachable:
        return CLIError(reporting: error.code, message: error.description, status: .unavailable)
    case .rendezvous(.crowded):
        return CLIError(reporting: error.code, message: error.description, status: .codeRejected)
    case .rendezvous:
        return CLIError(reporting: error.code, message: error.description, status: .unavailable)
    case .timedOut:
        return CLIError(reporting: error.code, message: error.description, status: .timedOut)
    }
}

/// Asks on standard error; reads the answer from standard input, or from /dev/tty when
/// standard input carried the text. No answer (end of input, no terminal) counts as "no".
private func askYesNo(_ question: String, fromTerminal: Bool) -> Bool {
    writeStderr(question)
    let line: String?
    if fromTerminal {
        guard let tty = FileHandle(forReadingAtPath: "/dev/tty") else { return false }
        var bytes: [UInt8] = []
        while let chunk = try? tty.read(upToCount: 1), let byte = chunk.first, byte != UInt8(ascii: "\n") {
            bytes.append(byte)
        }
        line = String(decoding: bytes, as: UTF8.self)
    } else {
        line = readLine(strippingNewline: true)
    }
    let answer = (line ?? "").trimmingCharacters(in: .whitespaces).lowercased()
    return answer == "yes" || answer == "y"
}

private func formatDuration(_ seconds: TimeInterval) -> String {
    if seconds >= 3600 && seconds.truncatingRemainder(dividingBy: 3600) == 0 {
        return "\(Int(seconds / 3600))h"
    }
    if seconds >= 60 && seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60))m" }
    return "\(Int(seconds))s"
}

private func writeStderr(_ text: String) {
    writeAll(2, Array(text.utf8))
}

private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        offset += n
    }
}
