import Foundation
import TestSupport
import Testing

/// The sidecar bot with the real programs: `eleven-relay`, `eleven-server`, `eleven-bot` and
/// `eleven` (one `ELEVEN_HOME` per person). The bot joins Paul's space with a short code Paul
/// attends, Paul enables it, and from then on invites go to the bot.
final class BotWorld: @unchecked Sendable {
    let relay: ElevenRelayUnderTest
    let server: ElevenServerUnderTest
    let paul: ElevenHome
    let botState: String
    let keyFile: String
    /// Holds the bot's state and key; removed by ``stop()``.
    private let directory: URL
    private(set) var bot: ChildProcess?
    /// The relay the bot attends through, when not the one people use (a hostile proxy in front).
    var botRelay: String?

    static let elevenBot = TestSupport.productPath("eleven-bot")

    /// `beforeBot` runs once Paul's space has its history, before the bot joins it.
    /// `relayArguments` go to `eleven-relay`. `owner` and `botName`: the names the owner and the
    /// bot go by; `quietServer: false` keeps the server's request log.
    init(
        relayArguments: [String] = [], owner: String = "Paul", botName: String = "Bot",
        quietServer: Bool = true,
        beforeBot: (BotWorld) throws -> Void = { _ in }
    ) throws {
        relay = try ElevenRelayUnderTest(arguments: relayArguments)
        server = try ElevenServerUnderTest(quiet: quietServer)
        paul = try ElevenHome("paul")
        directory = try TestSupport.temporaryDirectory()
        botState = directory.appendingPathComponent("bot").path
        keyFile = directory.appendingPathComponent("bot.key").path
        #expect(
            try run(paul, ["space", "create", "Family", "--server", server.url, "--as", owner]).status == 0)
        #expect(try run(paul, ["send", "Welcome", "to", "Family"]).status == 0)
        #expect(try run(paul, ["send", "Dinner at eight"]).status == 0)
        #expect(try run(paul, ["thread", "create", "plans"]).status == 0)
        #expect(try run(paul, ["send", "--thread", "plans", "picnic"]).status == 0)
        try beforeBot(self)
        // Provisioning: init, a code attended by Paul, enable.
        let initialised = try botCommand(["init", "--state", botState])
        #expect(initialised.status == 0, "\(initialised.stderr)")
        let invite = try ChildProcess(eleven, ["invite", "--short", "--yes"], environment: env(paul))
        let code = try invite.value(afterPrefix: "Invite code:")
        let joined = try botCommand(["join", code, "--state", botState, "--name", botName])
        #expect(joined.status == 0, "\(joined.stderr)")
        #expect(invite.finish(timeout: 20).status == 0)
        let enabled = try run(paul, ["bot", "enable", "--member", botName])
        #expect(enabled.status == 0, "\(enabled.stderr)")
        #expect(enabled.stdout.contains("\(botName) now attends short-code invites for Family"))
        try startBot()
    }

    func env(_ home: ElevenHome) -> [String: String] {
        ["ELEVEN_HOME": home.path, "ELEVEN_SPACE": "", "ELEVEN_RELAY": relay.url]
    }

    func run(_ home: ElevenHome, _ arguments: [String]) throws -> ProcessResult {
        try home.run(arguments, environment: ["ELEVEN_RELAY": relay.url])
    }

    func botCommand(_ arguments: [String]) throws -> ProcessResult {
        try TestSupport.run(
            Self.elevenBot, arguments,
            environment: ["ELEVEN_BOT_KEY_FILE": keyFile, "ELEVEN_RELAY": relay.url],
            timeout: 30)
    }

    func startBot() throws {
        let process = try ChildProcess(
            Self.elevenBot, ["run", "--state", botState, "--step-timeout", "10s"],
            environment: ["ELEVEN_BOT_KEY_FILE": keyFile, "ELEVEN_RELAY": botRelay ?? relay.url])
        _ = try process.value(afterPrefix: "{", timeout: 20)
        bot = process
    }

    /// Stops the bot by process id (SIGKILL: as abrupt as a crash).
    func killBot() {
        guard let bot else { return }
        kill(bot.pid, SIGKILL)
        _ = bot.finish(timeout: 10)
        self.bot = nil
    }

    /// Paul (or `home`) invites through the bot; returns the code.
    func invite(_ home: ElevenHome? = nil, _ extra: [String] = []) throws -> String {
        let result = try run(home ?? paul, ["invite", "--short"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        // The wait for the bot says what it waits for (before: nothing for up to --bot-timeout).
        if !extra.contains("--json") {
            #expect(result.stderr.contains("the space's bot, to take the invite…"))
        }
        let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
        return line.map { String($0.dropFirst("Invite code: ".count)) } ?? ""
    }

    func stop() {
        killBot()
        server.stop()
        relay.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite(.serialized) struct BotEndToEndTests {
    func withWorld(_ body: @escaping @Sendable (BotWorld) throws -> Void) async throws {
        try await TestSupport.offPool {
            let world = try BotWorld()
            defer { world.stop() }
            try body(world)
        }
    }

    @Test func botAttendedJoinReadsHistoryAndTellsTheInviter() async throws {
        try await withWorld { w in
            let code = try w.invite()
            let sam = try ElevenHome("sam")
            let joined = try w.run(sam, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(joined.stdout.contains("Joined Family: 2 threads, 3 messages."), "\(joined.stdout)")
            #expect(!joined.stdout.contains("Waiting for"))
            #expect(try w.run(sam, ["read"]).stdout == "Paul: Welcome to Family\nPaul: Dinner at eight\n")
            #expect(try w.run(sam, ["read", "--thread", "plans"]).stdout == "Paul: picnic\n")
            // Who joined comes from the member list: shown while kept, then once more, then no more.
            let nameplate = String(code.split(separator: "-").last ?? "")
            let kept = try w.run(w.paul, ["bot", "notes", "--keep", "--json"])
            #expect(kept.status == 0, "\(kept.stderr)")
            #expect(kept.stdout.contains("\"event\":\"joined\""), "\(kept.stdout)")
            #expect(kept.stdout.contains("\"nameplate\":\"\(nameplate)\""), "\(kept.stdout)")
            let notes = try w.run(w.paul, ["bot", "notes"])
            #expect(
                notes.stdout.contains("Sam joined Family with your invite ending in \(nameplate)."),
                "\(notes.stdout)")
            // Once: the bot sent no note of its own for the join.
            #expect(notes.stdout.components(separatedBy: "Sam joined").count == 2, "\(notes.stdout)")
            #expect(try w.run(w.paul, ["bot", "notes"]).stdout == "No news from the bot.\n")
            let status = try w.botCommand(["status", "--state", w.botState, "--json"])
            #expect(status.status == 0)
            #expect(status.stdout.contains("\"joined\":1"), "\(status.stdout)")
            // The status and the state file never hold the code's words in clear.
            let words = code.split(separator: "-").dropLast().joined(separator: "-")
            #expect(!status.stdout.contains(words))
            let file = try Data(contentsOf: URL(fileURLWithPath: w.botState + "/bot.sqlite"))
            #expect(file.range(of: Data(words.utf8)) == nil)
        }
    }

    @Test func botOfflineWhenTheJoinerArrivesThenStarted() async throws {
        try await withWorld { w in
            let code = try w.invite()
            w.killBot()
            let sam = try ElevenHome("sam")
            let join = try ChildProcess(
                eleven, ["join", code, "--name", "Sam"], environment: w.env(sam))
            _ = try join.value(afterPrefix: "Connecting")
            Thread.sleep(forTimeInterval: 1.5)
            #expect(join.isRunning)
            try w.startBot()
            let finished = join.finish(timeout: 30)
            #expect(finished.status == 0, "\(finished.stdout) \(finished.stderr)")
            #expect(finished.stdout.contains("Joined Family"))
        }
    }

    @Test func botKilledMidJoinAndRestarted() async throws {
        try await withWorld { w in
            // Paul asks to be asked, so the bot stops mid-join (code proven, request received)
            // until he answers: kill it there.
            let invite = try ChildProcess(
                eleven, ["invite", "--short", "--ask"], environment: w.env(w.paul), input: .open)
            let code = try invite.value(afterPrefix: "Invite code:")
            let sam = try ElevenHome("sam")
            let join = try ChildProcess(
                eleven, ["join", code, "--name", "Sam"], environment: w.env(sam))
            _ = try invite.value(afterPrefix: "Sam proved the code")
            w.killBot()
            try w.startBot()
            try invite.send(Data("y\ny\n".utf8))
            invite.closeInput()
            let finished = join.finish(timeout: 30)
            #expect(finished.status == 0, "\(finished.stdout) \(finished.stderr) bot: \(w.bot?.stdout ?? "")")
            #expect(try w.run(sam, ["read"]).stdout == "Paul: Welcome to Family\nPaul: Dinner at eight\n")
            let paulSaw = invite.finish(timeout: 20)
            #expect(paulSaw.status == 0, "\(paulSaw.stderr) bot: \(w.bot?.stdout ?? "")")
            #expect(paulSaw.stdout.contains("Sam joined Family"))
            // Sam was added once.
            let members = try w.run(w.paul, ["members"]).stdout
            #expect(members.components(separatedBy: "  Sam ").count == 2, "\(members)")
        }
    }

    @Test func wrongCodeBurnsAndAlertsTheInviter() async throws {
        try await withWorld { w in
            let code = try w.invite()
            let nameplate = code.split(separator: "-").last.map(String.init) ?? ""
            let words = code.split(separator: "-").dropLast().joined(separator: "-")
            let guess = words == "coral-piano" ? "tulip-violin" : "coral-piano"
            let eve = try ElevenHome("eve")
            let wrong = try w.run(eve, ["join", "\(guess)-\(nameplate)", "--name", "Eve"])
            #expect(wrong.status == 3, "\(wrong.stdout) \(wrong.stderr)")
            #expect(wrong.stderr.contains("That code didn't match"))
            Thread.sleep(forTimeInterval: 0.5)
            let notes = try w.run(w.paul, ["bot", "notes"])
            #expect(
                notes.stdout.contains(
                    "Someone tried a wrong code for your invite \(code); it has been cancelled."),
                "\(notes.stdout)")
            // The right code no longer works.
            let sam = try ElevenHome("sam")
            let late = try w.run(sam, ["join", code, "--name", "Sam", "--timeout", "3s"])
            #expect(late.status == 3, "\(late.stdout) \(late.stderr)")
        }
    }

    @Test func multiUseInviteServesThreeJoinersOneAfterAnother() async throws {
        try await withWorld { w in
            let code = try w.invite(nil, ["--uses", "3"])
            for name in ["Sam", "Ann", "Bob"] {
                let home = try ElevenHome(name.lowercased())
                let joined = try w.run(home, ["join", code, "--name", name])
                #expect(joined.status == 0, "\(name): \(joined.stdout) \(joined.stderr)")
            }
            let fourth = try w.run(try ElevenHome("zed"), ["join", code, "--name", "Zed", "--timeout", "3s"])
            #expect(fourth.status == 3, "\(fourth.stdout) \(fourth.stderr)")
            let members = try w.run(w.paul, ["members"]).stdout
            for name in ["Sam", "Ann", "Bob"] { #expect(members.contains("  \(name) "), "\(members)") }
            #expect(!members.contains("Zed"))
        }
    }

    @Test func revokedInvitersPendingInviteIsRefused() async throws {
        try await withWorld { w in
            // Ann, a member with the invite right, invites through the bot; then she is removed.
            let ann = try ElevenHome("ann")
            let key = try w.run(ann, ["whoami"]).stdout.split(separator: "\n").first.map(String.init) ?? ""
            let added = try w.run(w.paul, ["members", "add", "--key", key, "--name", "Ann", "--invite"])
            #expect(added.status == 0, "\(added.stderr)")
            let joinLine = added.stdout.split(separator: "\n").last.map(String.init) ?? ""
            let spaceJoin = joinLine.trimmingCharacters(in: .whitespaces).split(separator: " ").dropFirst()
                .map(String.init)
            #expect(try w.run(ann, spaceJoin).status == 0)
            let code = try w.invite(ann)
            #expect(try w.run(w.paul, ["members", "remove", "Ann"]).status == 0)
            let sam = try ElevenHome("sam")
            let refused = try w.run(sam, ["join", code, "--name", "Sam"])
            #expect(refused.status == 3, "\(refused.stdout) \(refused.stderr) bot: \(w.bot?.stdout ?? "")")
            #expect(refused.stderr.contains("no longer"), "\(refused.stderr)")
            #expect(!(try w.run(w.paul, ["members"]).stdout.contains("Sam")))
        }
    }

    @Test func inviteRequestFromAMemberWithoutTheRightIsRefused() async throws {
        try await withWorld { w in
            let code = try w.invite()
            let sam = try ElevenHome("sam")
            #expect(try w.run(sam, ["join", code, "--name", "Sam"]).status == 0)
            // Sam holds no invite right: the bot refuses his signed request.
            let forged = try w.run(sam, ["invite", "--short"])
            #expect(forged.status == 6, "\(forged.stdout) \(forged.stderr)")
            #expect(forged.stderr.contains("may not add members"), "\(forged.stderr)")
            let status = try w.botCommand(["status", "--state", w.botState])
            #expect(status.stdout.contains("request_refused 1"), "\(status.stdout)")
        }
    }

    @Test func badInputIsRefusedClearly() async throws {
        try await TestSupport.offPool {
            let bot = BotWorld.elevenBot
            for command in [["init"], ["join"], ["run"], ["status"]] {
                let help = try TestSupport.run(bot, command + ["--help"])
                #expect(help.status == 0)
                #expect(help.stdout.hasPrefix("usage: eleven-bot \(command[0])"))
            }
            let directory = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let state = directory.appendingPathComponent("state").path
            // No key anywhere: a usage error, as for `init` (ExitStatusWalkTests covers each command).
            let noKey = try TestSupport.run(
                bot, ["status", "--state", state],
                environment: ["ELEVEN_BOT_KEY_FILE": "", "CREDENTIALS_DIRECTORY": ""])
            #expect(noKey.status == 2)
            #expect(noKey.stderr.contains("Say where the bot's key lives"))
            // A state sealed under one key does not open under another.
            let keyA = directory.appendingPathComponent("a.key").path
            let keyB = directory.appendingPathComponent("b.key").path
            #expect(try TestSupport.run(bot, ["init", "--state", state, "--key-file", keyA]).status == 0)
            #expect(
                try TestSupport.run(bot, ["init", "--state", directory.path + "/other", "--key-file", keyB])
                    .status == 0)
            let wrong = try TestSupport.run(bot, ["status", "--state", state, "--key-file", keyB])
            #expect(wrong.status == 5)
            #expect(wrong.stderr.contains("does not open"))
            // systemd credentials directory.
            try FileManager.default.copyItem(atPath: keyA, toPath: directory.path + "/eleven-bot.key")
            let credential = try TestSupport.run(
                bot, ["status", "--state", state, "--json"],
                environment: ["ELEVEN_BOT_KEY_FILE": "", "CREDENTIALS_DIRECTORY": directory.path])
            #expect(credential.status == 0, "\(credential.stderr)")
            // run before joining a space.
            let notJoined = try TestSupport.run(bot, ["run", "--state", state, "--key-file", keyA])
            #expect(notJoined.status == 5)
            #expect(notJoined.stderr.contains("not in a space yet"))
            // A damaged state file.
            try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: state + "/bot.sqlite"))
            try? FileManager.default.removeItem(atPath: state + "/bot.sqlite-wal")
            try? FileManager.default.removeItem(atPath: state + "/bot.sqlite-shm")
            let corrupt = try TestSupport.run(bot, ["status", "--state", state, "--key-file", keyA])
            #expect(corrupt.status == 5)
            #expect(corrupt.stderr.contains("damaged"), "\(corrupt.stderr)")
            let badRelay = try TestSupport.run(
                bot, ["join", "a-b-1", "--state", state, "--relay", "http://x"])
            #expect(badRelay.status == 2)
        }
    }
}
