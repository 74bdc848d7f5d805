import Foundation
import TestSupport
import Testing

/// One state, one writer at a time: parallel `eleven` commands on one `ELEVEN_HOME` keep every
/// update, and a second `eleven-bot run` on one state directory refuses to start (#23, #25).
@Suite(.serialized) struct StateLockEndToEndTests {
    /// Starts `count` copies of `eleven arguments(i)` at once on `home`; returns their results.
    func parallel(_ count: Int, _ home: ElevenHome, _ arguments: (Int) -> [String]) throws -> [ProcessResult]
    {
        let children = try (0..<count).map { index in
            try ChildProcess(
                eleven, arguments(index), environment: ["ELEVEN_HOME": home.path, "ELEVEN_SPACE": ""])
        }
        return children.map { $0.finish(timeout: 60) }
    }

    @Test func parallelSpaceCreatesAllSurvive() throws {
        let server = try ElevenServerUnderTest()
        defer { server.stop() }
        let paul = try ElevenHome("paul")
        // The home is empty: the creates also race to make the device's identity.
        let results = try parallel(10, paul) { ["space", "create", "Space\($0)", "--server", server.url] }
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        let listed = try paul.json(["spaces", "--json"])
        let names = ((listed["spaces"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        #expect(Set(names) == Set((0..<10).map { "Space\($0)" }), "\(names)")
        // Every space is usable with the identity that was saved.
        for index in 0..<10 {
            let sent = try paul.run(["send", "--space", "Space\(index)", "hello"])
            #expect(sent.status == 0, "Space\(index): \(sent.stderr)")
        }
    }

    @Test func parallelSpaceCreatesWhileSignedInAllSurviveTheSync() throws {
        let server = try ElevenServerUnderTest()
        defer { server.stop() }
        let home = try HomeServerUnderTest()
        defer { home.stop() }
        let paul = try ElevenHome("paul")
        #expect(try paul.run(["signin", "--server", home.url, "--label", "laptop"]).status == 0)
        // Each create syncs with the home server; a sync must not write back a list that lacks
        // a space another create saved meanwhile.
        let results = try parallel(6, paul) { ["space", "create", "Space\($0)", "--server", server.url] }
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        #expect(try paul.run(["sync"]).status == 0)
        let listed = try paul.json(["spaces", "--json"])
        let names = ((listed["spaces"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        #expect(Set(names) == Set((0..<6).map { "Space\($0)" }), "\(names)")
    }

    @Test func parallelFirstWhoamiAllPrintTheSavedKey() throws {
        let sam = try ElevenHome("sam")
        let results = try parallel(6, sam) { _ in ["whoami"] }
        let saved = try sam.run(["whoami"])
        #expect(saved.status == 0)
        let key = saved.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == key)
        }
    }

    @Test func secondBotRunOnOneStateRefusesToStart() async throws {
        try await TestSupport.offPool {
            let world = try BotWorld()
            defer { world.stop() }
            let first = try #require(world.bot)
            let second = try ChildProcess(
                BotWorld.elevenBot, ["run", "--state", world.botState],
                environment: ["ELEVEN_BOT_KEY_FILE": world.keyFile, "ELEVEN_RELAY": world.relay.url])
            let ended = second.finish(timeout: 10)
            #expect(!ended.timedOut, "a second bot ran on the same state")
            #expect(ended.status == 5)
            #expect(
                ended.stderr.contains("another eleven-bot is running with this state (pid \(first.pid))"),
                "\(ended.stderr)")
            // The first bot still attends invites.
            #expect(first.isRunning)
            let code = try world.invite()
            let sam = try ElevenHome("sam")
            let joined = try world.run(sam, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
        }
    }
}

/// `eleven invite --short` when the space's bot is not running: this device attends the invite
/// itself after `--bot-timeout`; a relay that is down is told apart from a silent bot (#23).
@Suite(.serialized) struct BotFallbackEndToEndTests {
    func withWorld(_ body: @escaping @Sendable (BotWorld) throws -> Void) async throws {
        try await TestSupport.offPool {
            let world = try BotWorld()
            defer { world.stop() }
            try body(world)
        }
    }

    @Test func silentBotFallsBackToThisDeviceAndTheStaleRequestIsDropped() async throws {
        try await withWorld { w in
            w.killBot()
            let invite = try ChildProcess(
                eleven, ["invite", "--short", "--yes", "--bot-timeout", "1s"], environment: w.env(w.paul))
            defer { invite.stop() }
            let code = try invite.value(afterPrefix: "Invite code:", timeout: 20)
            #expect(invite.stdout.contains("The bot is not answering"), "\(invite.stdout)")
            let sam = try ElevenHome("sam")
            let joined = try w.run(sam, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
            #expect(joined.stdout.contains("Joined Family"), "\(joined.stdout)")
            let ended = invite.finish(timeout: 20)
            #expect(ended.status == 0, "\(ended.stdout) \(ended.stderr)")
            // The bot comes back later and finds the request: too old, dropped, not attended.
            // (Ages are whole seconds: make it surely older than the bot's 1 s limit.)
            Thread.sleep(forTimeInterval: 2.5)
            let bot = try ChildProcess(
                BotWorld.elevenBot, ["run", "--state", w.botState, "--max-request-age", "1s"],
                environment: ["ELEVEN_BOT_KEY_FILE": w.keyFile, "ELEVEN_RELAY": w.relay.url])
            try bot.waitFor("request_dropped", in: .stdout, timeout: 20)
            bot.stop()
            let status = try w.botCommand(["status", "--state", w.botState, "--json"])
            #expect(status.status == 0)
            #expect(status.stdout.contains("\"openInvites\":[]"), "\(status.stdout)")
            #expect(!(try w.run(w.paul, ["bot", "notes"]).stdout.contains("refused")))
        }
    }

    @Test func noFallbackFailsWhenTheBotIsSilent() async throws {
        try await withWorld { w in
            w.killBot()
            let result = try w.run(
                w.paul, ["invite", "--short", "--bot-timeout", "1s", "--no-fallback", "--json"])
            #expect(result.status == 7, "\(result.stdout) \(result.stderr)")
            #expect(try errorCode(result) == "bot_unavailable")
        }
    }

    @Test func relayDownIsNotBlamedOnTheBot() async throws {
        try await withWorld { w in
            w.relay.stop()
            let started = Date()
            let result = try w.run(w.paul, ["invite", "--short", "--json"])
            #expect(result.status == 4, "\(result.stdout) \(result.stderr)")
            #expect(try errorCode(result) == "relay_unreachable", "\(result.stdout)")
            #expect(!result.stdout.contains("bot"), "\(result.stdout)")
            #expect(Date().timeIntervalSince(started) < 10)
        }
    }
}
