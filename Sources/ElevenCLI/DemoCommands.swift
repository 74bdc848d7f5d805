import CLISupport
import ClientCore
import Foundation
import WordCodes

/// `eleven demo`: the local end-to-end demonstration on embedded defaults.
let demoCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "demo"],
            summary: "Run a local short-code join end to end (a relay on loopback, two clients).",
            options: [
                OptionSpec(
                    "relay", value: "URL",
                    help: "use this relay instead of starting eleven-relay on 127.0.0.1"),
                OptionSpec("words", value: "N", help: "words in the code (2 to 8)", default: "2"),
            ],
            discussion: """
                Paul invites with a short code, Sam types it (with a typo the code reader fixes),
                the two clients agree on a key through the relay with SPAKE2, Paul lets Sam in,
                and Sam receives the welcome over the encrypted channel. Then someone tries a
                wrong code: it fails, and the code is burned. Nothing leaves this machine.
                """)
    ) { arguments in
        try Demo(words: try arguments.int("words", in: Code.wordCountRange) ?? 2).run(
            relay: arguments.value("relay"))
    }
]

/// The demo's script. The relay runs as its own process; Paul and Sam are two clients in this
/// process, each with its own connection to the relay.
struct Demo {
    let words: Int

    func run(relay: String?) throws {
        say("Eleven demo: a short-code join, end to end, on this machine.")
        let relayProcess: RelayChild?
        let relayURL: String
        if let relay {
            relayURL = relay
            relayProcess = nil
        } else {
            let child = try RelayChild.start()
            relayURL = child.url
            relayProcess = child
        }
        defer { relayProcess?.stop() }
        say("  relay     \(relayURL)  (forwards messages it cannot read)")

        try join(relayURL: relayURL, typo: true, wrongGuess: false)
        say("")
        try join(relayURL: relayURL, typo: false, wrongGuess: true)
        say("")
        say("Done. Codes are one-time, work once, and the relay never saw the words or the keys.")
    }

    /// The code as Sam might type it: capitalised, spaces for dashes, two letters of the first
    /// word swapped, chosen among the typos the code reader corrects back to this very code.
    static func mistype(_ code: Code) -> String? {
        let rest = code.words.dropFirst().map(\.text).joined(separator: " ")
        let chars = Array(code.words[0].text)
        for position in stride(from: chars.count - 2, through: 1, by: -1)
        where chars[position] != chars[position + 1] {
            var wrong = chars
            wrong.swapAt(position, position + 1)
            let typed = "\(String(wrong).capitalized) \(rest) \(code.nameplate)"
            if let parsed = try? CodeParser.parse(typed), parsed.code == code { return typed }
        }
        return nil
    }

    /// One invite: Paul attends, Sam (or an intruder with a wrong guess) joins.
    private func join(relayURL: String, typo: Bool, wrongGuess: Bool) throws {
        let secret = Code.generate(nameplate: Nameplate(1)!, wordCount: words).words
        let codeBox = Mailbox<Code?>()
        let paul = Mailbox<Result<JoinRequest, JoinRunError>>()
        Thread.detachNewThread {
            do {
                let request = try JoinRunner.attend(
                    relayURL: relayURL, words: secret.map(\.text).joined(separator: "-"),
                    inviterName: "Paul", announceWaiting: true, timeout: .seconds(60),
                    onNameplate: { nameplate in
                        guard let np = Int(nameplate.value).flatMap(Nameplate.init),
                            let code = Code(nameplate: np, words: secret)
                        else { return }
                        codeBox.put(code)
                    },
                    decide: { request, verifier in
                        // A person takes a moment to answer; the joiner meanwhile sees "Waiting".
                        Thread.sleep(forTimeInterval: 0.5)
                        let check = VerificationWords.words(for: verifier).joined(separator: " ")
                        say("  Paul      \(request.displayName)'s code matched (Paul sees: \(check))")
                        say(
                            "  Paul      Let \(request.displayName) (\(request.deviceLabel)) join Family? yes"
                        )
                        return .approve(grant: Array(#"{"space":"Family","threads":3,"messages":42}"#.utf8))
                    })
                paul.put(.success(request))
            } catch let error as JoinRunError {
                paul.put(.failure(error))
                codeBox.put(nil)
            } catch {
                paul.put(.failure(.failed(.protocolError("\(error)"))))
                codeBox.put(nil)
            }
        }
        guard let code = codeBox.take(timeout: 20) ?? nil else {
            if case .failure(let error)? = paul.take(timeout: 1) {
                throw CLIError(code: error.code, message: error.description, status: .unavailable)
            }
            throw CLIError(
                code: "relay_timeout", message: "the relay did not allocate a code", status: .unavailable)
        }
        let person = wrongGuess ? "Eve" : "Sam"
        say(
            "  Paul      invites with the code  \(code)   "
                + "(\(code.entropyBits) secret bits; one guess per code)")

        var typed = code.description
        if typo, let mistyped = Self.mistype(code) {
            // Sam says it aloud and mistypes a letter; the code reader fixes it before any traffic.
            typed = mistyped
        }
        if wrongGuess {
            var other = Code.generate(nameplate: code.nameplate, wordCount: words)
            while other.words == code.words {
                other = Code.generate(nameplate: code.nameplate, wordCount: words)
            }
            typed = other.description
        }
        say("  \(person)       types  \"\(typed)\"")
        let parsed: ParsedCode
        do {
            parsed = try CodeParser.parse(typed)
        } catch {
            throw CLIError(code: error.code, message: error.message, status: .codeRejected)
        }
        for correction in parsed.corrections where correction.changesWord {
            say("  \(person)       \(correction.message)")
        }
        let request = JoinRequest(displayName: person, deviceLabel: "laptop", publicKeys: "")
        do {
            let grant = try JoinRunner.join(
                relayURL: relayURL, nameplate: Rendezvous.Nameplate(parsed.code.nameplate.description),
                words: parsed.code.secretWords, request: request, timeout: .seconds(60)
            ) { progress in
                switch progress {
                case .connecting: say("  \(person)       Connecting…")
                case .codeAccepted(let verifier):
                    let check = VerificationWords.words(for: verifier).joined(separator: " ")
                    say("  \(person)       Code accepted (\(person) sees: \(check))")
                case .waitingForApproval(let inviter):
                    say("  \(person)       Waiting for \(inviter ?? "the inviter") to let you in…")
                case .reconnecting: say("  \(person)       Reconnecting…")
                }
            }
            let summary = (try? JSONSerialization.jsonObject(with: Data(grant))) as? [String: Any]
            let space = summary?["space"] as? String ?? "the space"
            say("  \(person)       Joined \(space) (the invitation arrived end-to-end encrypted)")
            _ = paul.take(timeout: 10)
        } catch {
            say("  \(person)       \(error.description)")
            if case .failure(let burned)? = paul.take(timeout: 10), burned == .failed(.codeMismatch) {
                say("  Paul      Someone tried a wrong code for your invite; it no longer works.")
            }
            if !wrongGuess {
                throw CLIError(code: error.code, message: error.description, status: .codeRejected)
            }
        }
    }
}

private func say(_ line: String) {
    Terminal.out(line)
}

/// A value handed from one thread to another once.
final class Mailbox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    private let ready = DispatchSemaphore(value: 0)

    func put(_ v: T) {
        lock.lock()
        value = v
        lock.unlock()
        ready.signal()
    }

    func take(timeout: TimeInterval) -> T? {
        guard ready.wait(timeout: .now() + timeout) == .success else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

/// `eleven-relay` started from the same directory as this `eleven`, on a free loopback port
/// with its database in a temporary directory, and stopped by process id.
struct RelayChild {
    let process: Process
    let url: String
    let directory: URL

    static func start() throws -> RelayChild {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("eleven-relay")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw CLIError(
                code: "relay_missing",
                message: "eleven-relay is not next to eleven (\(binary.path)); build it with "
                    + "`swift build --product eleven-relay`, or pass --relay URL", status: .localState)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            "--listen", "127.0.0.1:0", "--db", directory.appendingPathComponent("relay.sqlite").path,
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = Mailbox<String>()
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { return ready.put("") }
                buffer.append(chunk)
                let text = String(decoding: buffer, as: UTF8.self)
                if let range = text.range(of: "ws://"),
                    let end = text[range.lowerBound...].firstIndex(of: "\n")
                {
                    return ready.put(String(text[range.lowerBound..<end]))
                }
            }
        }
        guard let url = ready.take(timeout: 20), !url.isEmpty else {
            kill(process.processIdentifier, SIGKILL)
            throw CLIError(code: "relay_failed", message: "eleven-relay did not start", status: .unavailable)
        }
        return RelayChild(process: process, url: url, directory: directory)
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
