import Foundation
import TestSupport
import Testing

/// `eleven-relay --permission hashcash:BITS` with our own clients (#26 item 2): `eleven send`
/// and `receive`, `invite --short` and `join` (and so the bot, which shares their relay
/// connection) solve the stamp the welcome asks for and carry on; they used to be refused
/// (`permission_required`) with every command. The stock Python `wormhole` submits no stamp:
/// it gets the relay's error, shown, and stops (the README says so).
@Suite(.serialized) struct RelayHashcashTests {
    static let interop = !TestSupport.interopSkipped
    typealias Relay = WormholeSizeLimitTests.Relay

    @Test func elevenSendAndReceiveSolveTheStamp() throws {
        let relay = try Relay(["--permission", "hashcash:16"])
        defer { relay.stop() }
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let h = WormholeHarness(relayURL: relay.url, home: home)
        let (sender, code) = try h.startElevenSend(["--text", "stamped hello"])
        let received = try h.elevenReceive([code])
        let sent = sender.finish()
        print("eleven receive through hashcash:16: status \(received.status); \(received.stderr.suffix(300))")
        #expect(received.status == 0, "\(received.stderr)")
        #expect(received.stdout == "stamped hello")
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(relay.metric("eleven_relay_errors_total{reason=\"permission_required\"}") == 0)
        #expect(relay.metric("eleven_relay_errors_total{reason=\"permission_invalid\"}") == 0)
    }

    @Test func inviteShortAndJoinSolveTheStamp() async throws {
        try await TestSupport.offPool {
            let relay = try Relay(["--permission", "hashcash:16"])
            defer { relay.stop() }
            let server = try ElevenServerUnderTest()
            defer { server.stop() }
            let world = try JoinScenariosCLI.makeWorld(
                relayURL: relay.url, server: server, crowdingSpoilsTheMailbox: false)
            try JoinScenariosCLI.attendedJoin(world)
            #expect(relay.metric("eleven_relay_errors_total{reason=\"permission_required\"}") == 0)
        }
    }

    /// The bot is provisioned with a short code (`eleven-bot join`) and attends joins through
    /// the same relay connection code: both solve the stamp.
    @Test func theBotSolvesTheStamp() async throws {
        try await TestSupport.offPool {
            let world = try BotWorld(relayArguments: ["--permission", "hashcash:12"])
            defer { world.stop() }
            let code = try world.invite()
            let sam = try ElevenHome("sam")
            let joined = try world.run(sam, ["join", code, "--name", "Sam"])
            #expect(joined.status == 0, "\(joined.stderr)")
            #expect(joined.stdout.contains("Joined Family: 2 threads, 3 messages."), "\(joined.stdout)")
        }
    }

    /// A relay asking for more work than eleven does is refused at once, saying why.
    @Test func tooMuchWorkIsRefusedAtOnce() throws {
        let relay = try Relay(["--permission", "hashcash:40"])
        defer { relay.stop() }
        let result = try TestSupport.run(
            WormholeHarness.eleven, ["send", "--text", "x", "--relay", relay.url, "--timeout", "30s"],
            timeout: 60)
        #expect(result.status == 4, "\(result.stderr)")
        #expect(
            result.stderr.contains("proof of work of 40 bits; eleven does at most 30"), "\(result.stderr)")
    }

    @Test(.enabled(if: interop)) func theStockClientIsToldItNeedsPermission() throws {
        let relay = try Relay(["--permission", "hashcash:16"])
        defer { relay.stop() }
        let home = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let result = try TestSupport.run(
            WormholeHarness.wormhole, ["--relay-url", relay.url, "send", "--no-qr", "--text", "x"],
            environment: ["HOME": home.path], timeout: 60)
        #expect(result.status == 1)
        #expect(result.stderr.contains("permission required"), "\(result.stderr.suffix(1000))")
    }
}
