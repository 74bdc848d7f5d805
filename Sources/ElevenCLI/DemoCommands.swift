import CLISupport
import ClientCore
import Foundation
import Net
import Support
import WordCodes

/// `eleven demo`: the local end-to-end demonstration on embedded defaults.
let demoCommands: [CommandGroup.Entry] = [
    .init(
        CommandSpec(
            ["eleven", "demo"],
            summary: "Run a local short-code join end to end (relay, space server and bot on loopback).",
            options: [
                OptionSpec(
                    "relay", value: "URL",
                    help: "use this relay instead of starting eleven-relay on 127.0.0.1"),
                OptionSpec("words", value: "N", help: "words in the code (2 to 8)", default: "2"),
            ],
            discussion: """
                Starts eleven-relay, eleven-server and eleven-bot on free loopback ports. Paul creates
                the space Family, writes in it and gives it a bot; he mints a short code the bot
                attends, and Sam types it (with a typo the code reader fixes before any traffic): the
                bot and Sam agree on a key through the relay with SPAKE2, the bot lets Sam in while
                nobody else is online, and Sam reads the history. Eve guesses a code: it fails, the
                code is burned and the bot tells Paul. Without a bot, Paul's own device attends: Ann
                joins his Book club after he says yes. Nothing leaves this machine; the state lives
                in a temporary directory removed at the end. The programs are the ones installed next
                to this eleven. Ctrl-C, SIGTERM or a closed output pipe stop every program the demo
                started and remove its directory (exit status 6).
                """)
    ) { arguments in
        try Demo(words: try arguments.int("words", in: Code.wordCountRange) ?? 2).run(
            relay: arguments.value("relay"))
    }
]

/// The demo's script: the real programs, as people would run them. `eleven-relay` and
/// `eleven-server` (and `eleven-bot`) run on free loopback ports; Paul, Sam, Eve and Ann are `eleven` processes, each
/// with a state directory of their own, and their output is shown as it comes.
struct Demo {
    let words: Int

    func run(relay: String?) throws {
        // Output goes to a person or a pipe; a closed pipe is a write error (EPIPE) that `say`
        // turns into stopping, not a signal that would leave the programs running.
        BrokenPipes.ignore()
        let watchers = [SIGINT, SIGTERM].map {
            SignalWatcher(signal: $0) { DemoCleanup.shared.abort() }
        }
        defer { for watcher in watchers { watcher.cancel() } }
        say("Eleven demo: a short-code join, end to end, on this machine.")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "eleven-demo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        DemoCleanup.shared.remove(directory)
        defer { try? FileManager.default.removeItem(at: directory) }
        let relayProcess: ServiceChild?
        let relayURL: String
        if let relay {
            relayURL = relay
            relayProcess = nil
        } else {
            let child = try ServiceChild.start(
                "eleven-relay",
                ["--listen", "127.0.0.1:0", "--db", directory.appendingPathComponent("relay.sqlite").path],
                scheme: "ws://")
            relayURL = child.url
            relayProcess = child
        }
        defer { relayProcess?.stop() }
        let server = try ServiceChild.start(
            "eleven-server",
            ["--listen", "127.0.0.1:0", "--db", directory.appendingPathComponent("server.sqlite").path],
            scheme: "http://")
        defer { server.stop() }
        say("  relay     \(relayURL)   (eleven-relay: forwards what it cannot read)")
        say("  server    \(server.url)   (eleven-server: stores only ciphertext)")
        say("")

        let paul = Person(name: "Paul", home: directory.appendingPathComponent("paul"), relay: relayURL)
        let sam = Person(name: "Sam", home: directory.appendingPathComponent("sam"), relay: relayURL)
        let eve = Person(name: "Eve", home: directory.appendingPathComponent("eve"), relay: relayURL)
        try paul.runShown(["space", "create", "Family", "--server", server.url, "--as", "Paul"])
        try paul.runShown(["send", "Welcome to the family space!"])
        try paul.runShown(["send", "Dinner on Sunday at seven?"])
        say("")

        try runBotStory(paul: paul, sam: sam, eve: eve, directory: directory, relayURL: relayURL)

        // Without a bot, Paul's own device attends and asks him first.
        say("Without a bot, Paul's own device attends: a second space, Book club, and Ann.")
        let ann = Person(name: "Ann", home: directory.appendingPathComponent("ann"), relay: relayURL)
        try paul.runShown(["space", "create", "Book club", "--server", server.url, "--as", "Paul"])
        try paul.runShown(["send", "First book: The Left Hand of Darkness"])
        let invite = try paul.start(
            ["invite", "--short", "--words", String(words)], answer: ("Let Ann join", "y"))
        guard let text = invite.value(afterPrefix: "Invite code: ") else {
            invite.stop()
            throw Self.failure(of: invite, "Paul's invite did not start")
        }
        try ann.runShown(["join", text, "--name", "Ann", "--verify"])
        guard invite.finish() == 0 else {
            throw CLIError(code: .demoFailed, message: "Paul's invite did not end well", status: .failure)
        }
        try ann.runShown(["read"])
        say("")
        say("Done. The bot let Sam in while nobody else was online, each code worked once, the relay never")
        say("saw the words or the keys, and Sam and Ann read the history end-to-end encrypted.")
        say("Try it yourself: eleven --help")
    }

    /// A step that failed, with the exit status the program itself gave (its message is shown).
    static func failure(of child: ShownProcess, _ what: String) -> CLIError {
        let status = ExitStatus(rawValue: child.finish()) ?? .failure
        return CLIError(
            code: .demoFailed, message: "\(what) (see its message above)",
            status: status == .success ? .failure : status)
    }

    /// The code as Sam might type it: capitalised, spaces for dashes, and one slip (two letters
    /// swapped, or a vowel wrong) chosen among the slips the code reader reads back to this very
    /// code. `nil` when no such slip exists.
    static func mistype(_ code: Code) -> String? {
        let texts = code.words.map(\.text)
        func typed(_ words: [String]) -> String {
            // As said aloud and typed on a phone: a capital first letter, spaces between.
            let joined = words.joined(separator: " ")
            return joined.prefix(1).uppercased() + joined.dropFirst() + " \(code.nameplate)"
        }
        for (index, word) in texts.enumerated() {
            let chars = Array(word)
            var slips: [[Character]] = []
            for position in stride(from: chars.count - 2, through: 1, by: -1)
            where chars[position] != chars[position + 1] {
                var wrong = chars
                wrong.swapAt(position, position + 1)
                slips.append(wrong)
            }
            for position in stride(from: chars.count - 1, through: 1, by: -1)
            where "aeiou".contains(chars[position]) {
                for vowel in "aeiou" where vowel != chars[position] {
                    var wrong = chars
                    wrong[position] = vowel
                    slips.append(wrong)
                }
            }
            for slip in slips {
                var words = texts
                words[index] = String(slip)
                let text = typed(words)
                if let parsed = try? CodeParser.parse(text), parsed.code == code { return text }
            }
        }
        return nil
    }
}

/// One person of the demo: `eleven` with its own `ELEVEN_HOME`, output shown with their name.
struct Person {
    let name: String
    let home: URL
    let relay: String

    var label: String { name.padding(toLength: 10, withPad: " ", startingAt: 0) }

    /// Runs a command to the end, showing what it prints; a failure stops the demo.
    @discardableResult
    func runShown(_ arguments: [String], allowFailure: Bool = false) throws -> Int32 {
        let child = try start(arguments, answer: nil)
        let status = child.finish()
        if status != 0 && !allowFailure {
            throw CLIError(
                code: .demoFailed,
                message: "`eleven \(arguments.joined(separator: " "))` failed for \(name)",
                status: .failure)
        }
        return status
    }

    /// Starts a command; `answer` replies to a prompt that starts with the given text.
    func start(_ arguments: [String], answer: (prompt: String, reply: String)?) throws -> ShownProcess {
        try ShownProcess(
            elevenBinary(), arguments, label: label,
            environment: ["ELEVEN_HOME": home.path, "ELEVEN_RELAY": relay, "ELEVEN_SPACE": ""], answer: answer
        )
    }
}

/// The path of a program installed next to this `eleven`.
func siblingBinary(_ name: String) throws -> String {
    let binary = URL(fileURLWithPath: try elevenBinary()).deletingLastPathComponent()
        .appendingPathComponent(name)
    guard FileManager.default.isExecutableFile(atPath: binary.path) else {
        throw CLIError(
            code: .programMissing,
            message:
                "\(name) is not next to eleven (\(binary.path)); build it with `swift build --product \(name)`",
            status: .localState)
    }
    return binary.path
}

/// This program's own file, as the kernel knows it: `argv[0]` is only what the shell was given
/// (`eleven` found on PATH would be looked for in the current directory).
func elevenBinary() throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else {
        throw CLIError(
            code: .programMissing, message: "can't find this program's own file (/proc/self/exe)",
            status: .localState)
    }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Everything the demo started, so that however it ends (done, failed, Ctrl-C, SIGTERM, its
/// output pipe closed) no program keeps running and its directory is removed.
final class DemoCleanup: Sendable {
    static let shared = DemoCleanup()
    private struct State {
        var processes: [Subprocess] = []
        var directory: URL?
        var aborting = false
    }
    private let state = Locked(State())

    /// Stops `process` when the demo is stopped (at once if it is being stopped already).
    func track(_ process: Subprocess) {
        let late = state.withLock {
            $0.processes.append(process)
            return $0.aborting
        }
        if late { process.signal(SIGKILL) }
    }

    /// Removes `directory` when the demo is stopped.
    func remove(_ directory: URL) {
        state.withLock { $0.directory = directory }
    }

    /// Parks the calling thread for good once the demo is being stopped: the script must not
    /// start programs or write files while the directory is being removed.
    func checkpoint() {
        if state.withLock({ $0.aborting }) { while true { pause() } }
    }

    /// Stops every tracked program (SIGTERM, SIGKILL after a grace period), removes the directory
    /// and exits with status 6 (cancelled). Runs once; a second caller parks.
    func abort() -> Never {
        let (second, directory) = state.withLock { state in
            defer { state.aborting = true }
            return (state.aborting, state.directory)
        }
        if second { while true { pause() } }
        // Until no program was started meanwhile (one that started as the stop began is
        // tracked late, and killed as it is).
        var stopped = 0
        while true {
            let running = state.withLock { Array($0.processes[stopped...]) }
            if running.isEmpty { break }
            for process in running { process.signal(SIGTERM) }
            let deadline = Date().addingTimeInterval(5)
            while running.contains(where: { !$0.hasExited }) && Date() < deadline { usleep(20_000) }
            for process in running { process.signal(SIGKILL) }
            for process in running { process.wait() }
            stopped += running.count
        }
        if let directory { try? FileManager.default.removeItem(at: directory) }
        exit(ExitStatus.refused.rawValue)
    }
}

/// A child whose output lines are shown as they come, prefixed with a label; it can answer one
/// prompt, and hands over the value of a line with a given prefix.
final class ShownProcess: @unchecked Sendable {
    let process: Subprocess
    private let lines = Locked([String]())
    private let finished = DispatchGroup()

    init(
        _ executable: String, _ arguments: [String], label: String, environment: [String: String],
        answer: (prompt: String, reply: String)?
    ) throws {
        let out = try Subprocess.pipe()
        let err = try Subprocess.pipe()
        let input = try Subprocess.pipe()
        DemoCleanup.shared.checkpoint()
        process = try Subprocess(
            executable, arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            stdin: .descriptor(input.read.fileDescriptor), stdout: .descriptor(out.write.fileDescriptor),
            stderr: .descriptor(err.write.fileDescriptor))
        DemoCleanup.shared.track(process)
        // The child has its copies; ours would keep the readers below from seeing its end.
        for end in [out.write, err.write, input.read] { try? end.close() }
        for pipe in [out.read, err.read] {
            finished.enter()
            Thread.detachNewThread { [self] in
                var pending = Data()
                var answered = false
                while true {
                    let chunk = pipe.availableData
                    if chunk.isEmpty { break }
                    pending.append(chunk)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                        pending = Data(pending[(newline + 1)...])
                        show(label, line)
                    }
                    // A prompt has no newline: answer it like a person would, after a moment.
                    let partial = String(decoding: pending, as: UTF8.self)
                    if let answer, !answered, partial.hasPrefix(answer.prompt) {
                        answered = true
                        Thread.sleep(forTimeInterval: 0.6)
                        show(label, partial + answer.reply)
                        pending.removeAll()
                        try? input.write.write(contentsOf: Data((answer.reply + "\n").utf8))
                    }
                }
                if !pending.isEmpty { show(label, String(decoding: pending, as: UTF8.self)) }
                finished.leave()
            }
        }
    }

    private func show(_ label: String, _ line: String) {
        // JSON log lines and blank lines are for machines; the demo shows what people read.
        guard !line.isEmpty else { return }
        lines.withLock { $0.append(line) }
        say("  \(label)\(line)")
    }

    /// Waits (up to `timeout` seconds) for a line starting with `prefix`; returns the rest.
    func value(afterPrefix prefix: String, timeout: TimeInterval = 30) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let found = lines.withLock { $0.first { $0.hasPrefix(prefix) } }
            if let found { return String(found.dropFirst(prefix.count)) }
            if process.hasExited && finished.wait(timeout: .now()) == .success { return nil }
            usleep(20_000)
        }
        return nil
    }

    /// Waits for the process and its output; returns its exit status.
    func finish(timeout: TimeInterval = 120) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while !process.hasExited && Date() < deadline { usleep(20_000) }
        stop()
        let ended = process.wait()
        _ = finished.wait(timeout: .now() + 5)
        // A program the stop killed ends with a failure the script must not report: the stop
        // exits with status 6 once everything is down, so park this thread until it does.
        DemoCleanup.shared.checkpoint()
        return ended.status
    }

    func stop() {
        process.signal(SIGTERM)
    }
}

/// Shows a line of the demo. When nobody reads any more (the pipe was closed), the demo stops.
func say(_ line: String) {
    DemoCleanup.shared.checkpoint()
    if !Terminal.out(line) { DemoCleanup.shared.abort() }
}

/// `eleven-relay` or `eleven-server` started from the same directory as this `eleven`, on a
/// free loopback port with its database in the demo's directory, and stopped by process id.
struct ServiceChild {
    let process: Subprocess
    let url: String

    /// `readyText`: wait for this text instead of the "listening on" line (the URL is then empty).
    static func start(_ name: String, _ arguments: [String], scheme: String, readyText: String? = nil) throws
        -> ServiceChild
    {
        let out = try Subprocess.pipe()
        DemoCleanup.shared.checkpoint()
        let process = try Subprocess(
            try siblingBinary(name), arguments, stdout: .descriptor(out.write.fileDescriptor), stderr: .null)
        DemoCleanup.shared.track(process)
        try? out.write.close()
        let ready = Handoff<String>()
        Thread.detachNewThread {
            var buffer = Data()
            while true {
                let chunk = out.read.availableData
                if chunk.isEmpty { return ready.put("") }
                buffer.append(chunk)
                let text = String(decoding: buffer, as: UTF8.self)
                if let readyText, text.contains(readyText) { return ready.put(" ") }
                if let range = text.range(of: "listening on \(scheme)"),
                    let end = text[range.upperBound...].firstIndex(of: "\n")
                {
                    return ready.put(scheme + String(text[range.upperBound..<end]))
                }
            }
        }
        guard let taken = ready.take(timeout: 20), !taken.isEmpty else {
            process.signal(SIGKILL)
            throw CLIError(code: .serviceFailed, message: "\(name) did not start", status: .unavailable)
        }
        return ServiceChild(process: process, url: taken.trimmingCharacters(in: .whitespaces))
    }

    func stop() {
        process.signal(SIGTERM)
        process.wait()
    }
}
