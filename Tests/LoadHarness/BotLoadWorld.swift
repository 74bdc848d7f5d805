import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SidecarBot
import SpaceModel
import TestSupport
import WordCodes

/// Relay, space server and bot as real processes on loopback, for load, flood and soak runs:
/// `eleven-relay` (SQLite), `eleven-server` and `eleven-bot run`, with a space owned by an
/// in-process owner who opens invites through the bot's inbox (as `eleven invite --short` does).
/// Every process is stopped by its process id in ``stop()``. Each writes to a log file in
/// ``directory`` (a soak runs for hours: the logs stay out of this process's memory).
public final class BotLoadWorld: @unchecked Sendable {
    public let directory: URL
    public let relay: ChildProcess
    public let server: ChildProcess
    public let relayURL: String
    public let serverURL: String
    public let owner: SpaceSession
    public let botMember: MemberRecord
    /// A thread of the space the owner writes to.
    public let thread: ThreadID
    public let botState: String
    public let keyFile: String
    private var botProcess: ChildProcess?
    private let botLog: URL
    private let lock = NSLock()
    private var serial = 0

    /// A short code of an open invite through the bot.
    public struct Invite: Sendable {
        public let nameplate: String
        public let words: String
        public var code: String { "\(words)-\(nameplate)" }
    }

    /// Starts the three programs found by `program` (a product name to a path). `relayArguments`
    /// and `botArguments` are appended to their command lines.
    public init(
        program: (String) -> String, relayArguments: [String] = [], botArguments: [String] = [],
        environment: [String: String] = [:]
    ) throws {
        directory = try TestSupport.temporaryDirectory()
        let relayPort = try TestSupport.freePort()
        relay = try ChildProcess(
            program("eleven-relay"),
            ["--listen", "127.0.0.1:\(relayPort)", "--db", directory.path + "/relay.sqlite"] + relayArguments,
            environment: environment, logFile: directory.appendingPathComponent("relay.log"), port: relayPort)
        relayURL = "ws://127.0.0.1:\(relayPort)/v1"
        let serverPort = try TestSupport.freePort()
        server = try ChildProcess(
            program("eleven-server"),
            ["--listen", "127.0.0.1:\(serverPort)", "--db", directory.path + "/server.sqlite", "--quiet"],
            environment: environment, logFile: directory.appendingPathComponent("server.log"),
            port: serverPort)
        serverURL = "http://127.0.0.1:\(serverPort)"

        let identity = DeviceIdentity.generate()
        let saved = try SpaceSession.createSpace(
            name: "Load", server: serverURL, identity: identity, ownerName: "Owner")
        owner = try SpaceSession(saved: saved, identity: identity)
        thread = try owner.createThread(named: "general")
        let roster = try owner.roster()
        try owner.send("hello", to: thread, keys: try owner.threadKeys(roster: roster))

        botState = directory.appendingPathComponent("bot").path
        keyFile = directory.appendingPathComponent("bot.key").path
        let (key, _) = try BotSealingKey.loadOrCreate(path: keyFile)
        let store = try BotStore(directory: botState, key: key, create: true)
        let botIdentity = try store.identity(create: true)
        botMember = try owner.addMember(
            keys: botIdentity.publicKeys, name: "Bot", rights: [.invite, .attendant])
        try store.saveSpace(
            try SpaceSession.join(
                server: serverURL, space: saved.space, member: botMember.id, identity: botIdentity))

        botLog = directory.appendingPathComponent("bot.log")
        botProgram = program("eleven-bot")
        self.botArguments = botArguments
        self.environment = environment
        do {
            try launchBot()
        } catch {
            stop()
            throw error
        }
    }

    private let botProgram: String
    private let botArguments: [String]
    private let environment: [String: String]

    /// Starts `eleven-bot run` and waits (up to 20 s) until it logs that it started once more.
    private func launchBot() throws {
        let startedBefore = botOutput.components(separatedBy: "\"started\"").count
        // Through FileSizeLimit, so a test may fill the bot's disk (the process id is the bot's).
        let (shell, command) = FileSizeLimit.command(
            botProgram,
            ["run", "--state", botState, "--key-file", keyFile, "--relay", relayURL] + botArguments)
        // Every run appends to the one log, so the output of a killed bot is kept.
        let process = try ChildProcess(shell, command, environment: environment, logFile: botLog)
        lock.withLock { botProcess = process }
        let deadline = Date().addingTimeInterval(20)
        while botOutput.components(separatedBy: "\"started\"").count <= startedBefore {
            guard process.isRunning, Date() < deadline else {
                throw TestSupportError.server("eleven-bot did not start:\n\(botOutput.suffix(2000))")
            }
            usleep(20_000)
        }
    }

    /// Kills the bot with SIGKILL (as abrupt as a crash or a power cut) and starts it again on
    /// the same state; returns once it has started.
    public func killAndRestartBot() throws {
        killBot()
        try launchBot()
    }

    /// Kills the bot with SIGKILL and leaves it stopped (``restartBot()`` starts it again).
    public func killBot() {
        lock.withLock { botProcess }?.stop(signal: SIGKILL)
    }

    /// Starts the bot again on the same state after ``killBot()``; returns once it has started.
    public func restartBot() throws {
        try launchBot()
    }

    /// Freezes the relay (SIGSTOP by its process id): whatever it was sent waits in its sockets
    /// until ``continueRelay()``.
    public func pauseRelay() {
        kill(relay.pid, SIGSTOP)
    }

    public func continueRelay() {
        kill(relay.pid, SIGCONT)
    }

    /// Everything the bot logged so far (JSON lines).
    public var botOutput: String { (try? String(contentsOf: botLog, encoding: .utf8)) ?? "" }
    public var botPID: Int32 { lock.withLock { botProcess }?.pid ?? 0 }
    public var botIsRunning: Bool { lock.withLock { botProcess }?.isRunning ?? false }

    /// Process ids by name: relay, server, bot.
    public var pids: [(name: String, pid: Int32)] {
        [
            ("relay", relay.pid), ("server", server.pid), ("bot", botPID),
        ]
    }

    /// Opens `count` invites of `uses` uses each through the bot and waits (up to `timeout`
    /// seconds) until every one is ready and signed. Call it from one thread at a time.
    /// `ask`: the bot asks the owner about each joiner who proved the code (``answer(_:use:)``).
    public func openInvites(_ count: Int, uses: Int = 1, ask: Bool = false, timeout: TimeInterval = 30) throws
        -> [Invite]
    {
        let now = Int64(Date().timeIntervalSince1970)
        var words: [String: String] = [:]
        let first = lock.withLock { () -> Int in
            defer { serial += count }
            return serial
        }
        for n in first..<(first + count) {
            let id = "load\(n)"
            words[id] = Code.generate(nameplate: Nameplate(1)!, wordCount: 2).secretWords
            try owner.send(
                .inviteRequest(
                    id: id, words: words[id] ?? "", uses: uses, expiresAt: now + 3600, maxFailures: 1,
                    ask: ask, inviterName: "Owner"), to: botMember)
        }
        var invites: [Invite] = []
        let deadline = Date().addingTimeInterval(timeout)
        while invites.count < count {
            guard Date() < deadline else {
                throw TestSupportError.server("the bot readied \(invites.count) of \(count) invites")
            }
            let page = try owner.receiveNotes(since: noteCursor)
            noteCursor = page.next
            for case .success(let note) in page.notes.map(\.content) where note.type == .inviteReady {
                guard let nameplate = note.nameplate, let secret = words[note.id] else { continue }
                var signed = AttendantNote(.inviteRecord, id: note.id)
                signed.invite = owner.identity.signInvite(
                    space: owner.saved.space, inviter: owner.saved.member, nameplate: nameplate,
                    createdAt: now, expiresAt: now + 3600, uses: uses)
                try owner.send(signed, to: botMember)
                invites.append(Invite(nameplate: nameplate, words: secret))
            }
            if page.notes.isEmpty { usleep(20_000) }
        }
        // The bot marks an invite open when it reads the record from its inbox.
        usleep(300_000)
        return invites
    }

    private var noteCursor: Int64 = 0

    /// Waits (up to `timeout` seconds) for the bot to ask about use `use` of invite `n` (the
    /// `n`th opened, counting from 0), runs `beforeAnswering`, then answers yes. Call it from one
    /// thread at a time.
    public func approveWhenAsked(
        invite n: Int, use: Int, timeout: TimeInterval = 30, beforeAnswering: () -> Void = {}
    ) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let page = try owner.receiveNotes(since: noteCursor)
            noteCursor = page.next
            for case .success(let note) in page.notes.map(\.content)
            where note.type == .approvalNeeded && note.id == "load\(n)" && note.use == use {
                beforeAnswering()
                var answer = AttendantNote(.approval, id: note.id)
                answer.approve = true
                answer.use = use
                try owner.send(answer, to: botMember)
                return
            }
            if page.notes.isEmpty { usleep(20_000) }
        }
        throw TestSupportError.server("the bot never asked about use \(use) of load\(n)")
    }

    /// Joins with `words` on `nameplate` as a fresh device and verifies the grant; returns nil on
    /// success, else the error's stable code.
    /// `beforeConfirming` runs right before the joiner's confirmation goes out (its code is then
    /// in the attendant's hands); false stops the join there.
    public func join(
        nameplate: String, words: String, timeout: Duration = .seconds(20),
        beforeConfirming: () -> Bool = { true }
    ) -> String? {
        let joiner = DeviceIdentity.generate()
        do {
            var random = SystemRandom()
            let pending = PendingJoin(
                relay: relayURL, nameplate: Rendezvous.Nameplate(nameplate), intent: .join, words: words,
                request: JoinRequest(
                    displayName: "Joiner", deviceLabel: "load", publicKeys: JoinerKeys(joiner.publicKeys)),
                createdAt: 0, deadline: 0, using: &random)
            let grant = try JoinRunner.join(
                pending, timeout: timeout, firstAnswer: timeout, progress: { _ in }, save: { _ in },
                recordAttempt: beforeConfirming)
            // As `eleven join` does: sign in, fetch the member list, check the grant against it.
            _ = try JoinGrant(decoding: grant).open(
                identity: joiner, deviceLabel: "load", now: Int64(Date().timeIntervalSince1970),
                nameplate: nameplate)
            return nil
        } catch let error as JoinRunError {
            return error.code
        } catch {
            return "grant_invalid"
        }
    }

    /// Words that are not `words` (a wrong guess at the same invite).
    public static func wrongWords(for words: String) -> String {
        var guess = Code.generate(nameplate: Nameplate(1)!, wordCount: 2).secretWords
        while guess == words { guess = Code.generate(nameplate: Nameplate(1)!, wordCount: 2).secretWords }
        return guess
    }

    /// The bot's counters (`joined`, `wrong_code`, `burned`, …) and invite states, read from its
    /// state file beside the running bot.
    public func botCounters() throws -> [String: Int] {
        let (key, _) = try BotSealingKey.loadOrCreate(path: keyFile)
        let store = try BotStore(directory: botState, key: key)
        return try store.logCounts().merging(store.inviteCounts().map { ("invites_" + $0.key, $0.value) }) {
            $1
        }
    }

    /// Stops the bot, the server and the relay by process id.
    public func stop() {
        lock.withLock { botProcess }?.stop()
        server.stop()
        relay.stop()
    }

    /// Stops everything and removes the files.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
