import Adversaries
import Foundation
import JoinProtocol
import PAKE
import Support
import TestSupport
import Testing

/// A relay that poses as the attendant toward a joiner (issue #20 item 5): once armed, the
/// first connection that claims a nameplate someone else claimed before (the attendant) is a
/// joiner's. From its claim on, the relay answers that joiner itself and passes nothing of it to
/// the real mailbox (the attendant never hears of it): it hands the joiner a key-agreement
/// message made with a guessed code, tests the guess on the joiner's confirmation, and answers
/// `abort`: the joiner sees a code that did not match.
final class AttendantImpostorRelay: RelayAdversary, @unchecked Sendable {
    private let lock = NSLock()
    private var armed = false
    /// The first connection to claim each nameplate: the attendant's.
    private var claimedBy: [String: Int] = [:]
    private var joinerLink: Int?
    private var impostor: JoinHandshake?
    private var impostorMessage: [UInt8] = []
    private var joinerPake: [UInt8]?
    private let impostorSide = "1a2b3c4d5e"
    private var result: String?
    let guess: String

    init(guess: String) { self.guess = guess }

    /// The next joiner is met by the impostor.
    func arm() { lock.withLock { armed = true } }

    /// What the impostor learned from the joiner's confirmation, once it came.
    var guessResult: String? { lock.withLock { result } }

    /// A relay answer of `type` to the joiner, as the relay would send it.
    private static func answer(_ type: String, _ fields: [String: String] = [:]) -> RelayEmission {
        var object = fields
        object["type"] = type
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return .deliver(.toClient, String(decoding: data, as: UTF8.self), delayMs: 0, inOrder: true)
    }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        lock.withLock {
            if frame.direction == .toRelay, frame.type == "claim", let nameplate = frame.nameplate {
                if let first = claimedBy[nameplate] {
                    if armed, first != frame.link, joinerLink == nil {
                        armed = false
                        joinerLink = frame.link
                        var random = SystemRandom()
                        impostor = JoinHandshake(
                            role: .attendant, words: guess,
                            binding: JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate(nameplate)),
                            using: &random)
                        impostorMessage = impostor?.firstMessage ?? []
                    }
                } else {
                    claimedBy[nameplate] = frame.link
                }
            }
            guard joinerLink == frame.link, frame.direction == .toRelay else { return pass(frame) }
            switch (frame.type, frame.phase) {
            case ("claim", _):
                return [Self.answer("claimed", ["mailbox": "impostor"])]
            case ("open", _):
                // Its own key-agreement message, as if the attendant's were in the mailbox.
                return [
                    .deliver(
                        .toClient,
                        RelayFrame.message(side: impostorSide, phase: .pake, body: impostorMessage),
                        delayMs: 0, inOrder: true)
                ]
            case ("add", .pake?):
                joinerPake = frame.body
                return []
            case ("add", .confirm?):
                // The one guess: the joiner's confirmation says whether the guessed code was right.
                guard var impostor = self.impostor.take() else { return [] }
                do {
                    _ = try impostor.receive(phase: .pake, body: joinerPake ?? [])
                    _ = try impostor.receive(phase: .confirm, body: frame.body ?? [])
                    result = "right"
                } catch {
                    result = "wrong (\(error))"
                }
                return [
                    .deliver(
                        .toClient, RelayFrame.message(side: impostorSide, phase: .abort, body: [1]),
                        delayMs: 0,
                        inOrder: true)
                ]
            case ("release", _):
                return [Self.answer("released")]
            case ("close", _):
                return [Self.answer("closed")]
            case ("bind", _), ("ping", _):
                return pass(frame)
            default:
                return []
            }
        }
    }
}

/// A relay posing as the attendant tests one guess on a joiner's confirmation; the joiner's
/// failed attempt must reach the inviter, and the invite it was for must not stay live as if
/// nothing happened (issue #20 item 5; `docs/threat-model.md`, "Guesses against a joiner").
@Suite(.serialized) struct JoinerInterceptionTests {
    /// A bot world whose relay (the hostile one, which the bot attends through and Sam joins
    /// through) posed as the attendant when Sam tried `first`, Paul's code through the bot.
    final class Intercepted {
        let adversary: AttendantImpostorRelay
        let world: BotWorld
        let proxy: AdversarialRelay
        let first: String
        let sam: ElevenHome
        let failed: ProcessResult

        init() throws {
            let adversary = AttendantImpostorRelay(guess: "abacus-abbey")
            let world = try BotWorld()
            var started: AdversarialRelay?
            do {
                let proxy = try world.attendThrough(adversary)
                started = proxy
                let first = try world.invite()
                adversary.arm()
                let sam = try ElevenHome("sam")
                failed = try world.run(
                    sam, ["join", first, "--name", "Sam", "--relay", proxy.url, "--timeout", "60s", "--json"])
                (self.adversary, self.world, self.proxy, self.first, self.sam) = (
                    adversary, world, proxy, first, sam
                )
            } catch {
                started?.stop()
                world.stop()
                throw error
            }
        }

        func stop() {
            proxy.stop()
            world.stop()
        }

        /// Paul's notes from the bot once they say someone may have intercepted a code (false
        /// after 30 s).
        func paulIsTold() -> (Bool, String) {
            let notes = Locked("")
            let told = TestSupport.eventually(timeout: 30) {
                let seen = (try? world.run(world.paul, ["bot", "notes", "--keep"]))?.stdout ?? ""
                notes.withLock { $0 = seen }
                return seen.contains("intercept")
            }
            return (told, notes.withLock { $0 })
        }

        /// Whether the first invite left the bot's open ones (its worker counted the report),
        /// with the bot's status. Open invites are listed as "  nameplate N  open  …" (the recent
        /// history's lines begin with a date).
        func firstInviteCloses() throws -> (Bool, String) {
            let nameplate = first.split(separator: "-").last.map(String.init) ?? ""
            let status = Locked("")
            let closed = TestSupport.eventually(timeout: 30) {
                let seen = (try? world.botCommand(["status", "--state", world.botState]))?.stdout ?? ""
                status.withLock { $0 = seen }
                return !seen.split(separator: "\n").contains { $0.hasPrefix("  nameplate \(nameplate)  ") }
            }
            return (closed, status.withLock { $0 })
        }
    }

    @Test func aJoinersFailedAttemptThroughAnImpostorReachesTheInviter() async throws {
        try await TestSupport.offPool { try Self.impostorAgainstABotInvite() }
    }

    static func impostorAgainstABotInvite() throws {
        let w = try Intercepted()
        defer { w.stop() }
        let (world, sam, failed, first) = (w.world, w.sam, w.failed, w.first)
        // Sam's device keeps the failed attempt (sealed) until an attendant heard of it.
        let record = sam.path + "/failed-joins.sealed"
        let kept = FileManager.default.fileExists(atPath: record)
        // Paul sends a new code; this time the relay lets Sam through.
        let second = try world.invite()
        let joined = try world.run(
            sam, ["join", second, "--name", "Sam", "--relay", w.proxy.url, "--timeout", "60s"])
        // What Paul hears, and what became of the first invite.
        let (told, notes) = w.paulIsTold()
        let (firstClosed, status) = try w.firstInviteCloses()
        print(
            """
            JoinerInterceptionTests: the impostor's guess was \(w.adversary.guessResult ?? "never tested")
              Sam's first join (\(first)): exit \(failed.status) \(failed.stdout)\(failed.stderr)
              Sam's second join (\(second)): exit \(joined.status) \(joined.stdout)
              Paul's notes: \(notes)
              bot status: \(status)
            """)
        #expect(w.adversary.guessResult?.hasPrefix("wrong") == true)
        #expect(failed.status == 3, "\(failed.stdout) \(failed.stderr)")
        #expect(failed.stdout.contains("code_mismatch"), "\(failed.stdout)")
        #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
        #expect(kept)
        #expect(!FileManager.default.fileExists(atPath: record), "told once, then forgotten")
        // The inviter is told, and the first invite no longer works.
        #expect(told, "\(notes)")
        #expect(firstClosed, "\(status)")
        let ann = try ElevenHome("ann")
        let late = try world.run(ann, ["join", first, "--name", "Ann", "--timeout", "10s", "--json"])
        print(
            "JoinerInterceptionTests: Ann with the first code afterwards: exit \(late.status) \(late.stdout)")
        #expect(late.status == 3, "\(late.stdout) \(late.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ann.path + "/spaces.json"))
    }

    /// Sam, intercepted, joins with a full-length link instead: once in, Sam's device tells the
    /// space's bot (a note sealed to it, signed by Sam), and the bot handles the report as it
    /// would one carried by a short-code join.
    @Test func aJoinerWhoThenJoinsByLinkTellsTheBot() async throws {
        try await TestSupport.offPool {
            let w = try Intercepted()
            defer { w.stop() }
            let link = try LinkEndToEndTests.mint(w.world.paul, [])
            let joined = try w.world.run(w.sam, ["join", link, "--name", "Sam", "--yes"])
            let (told, notes) = w.paulIsTold()
            let (closed, status) = try w.firstInviteCloses()
            print(
                """
                JoinerInterceptionTests link: Sam's first join: exit \(w.failed.status) \(w.failed.stdout)
                  Sam's link join: exit \(joined.status) \(joined.stdout)\(joined.stderr)
                  Paul's notes: \(notes)
                """)
            #expect(w.failed.status == 3, "\(w.failed.stdout) \(w.failed.stderr)")
            #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
            #expect(told, "\(notes)")
            #expect(closed, "\(status)")
            #expect(!FileManager.default.fileExists(atPath: w.sam.path + "/failed-joins.sealed"))
        }
    }
}

extension JoinerInterceptionTests {
    /// The same with a person attending (`eleven invite --short`, two uses): Sam, intercepted,
    /// types the same code again and gets through; Paul's device hears of the first attempt from
    /// Sam's, counts it against this very invite once Sam's use ends, and with the default cap of
    /// one failed attempt the invite stops working (its second use is not offered to anyone).
    @Test func aPersonAttendingHearsTheReportAndCountsIt() async throws {
        try await JoinScenariosCLI.withServerAndRelay { server, relay in
            let adversary = AttendantImpostorRelay(guess: "abacus-abbey")
            let proxy = try AdversarialRelay(upstream: relay.url, adversary: adversary)
            defer { proxy.stop() }
            let w = try JoinScenariosCLI.makeWorld(relayURL: proxy.url, server: server)
            let invite = try w.background(w.paul, ["invite", "--short", "--yes", "--uses", "2"])
            let code = try invite.value(afterPrefix: "Invite code:")
            adversary.arm()
            let sam = try ElevenHome("sam")
            let failed = try w.run(sam, ["join", code, "--name", "Sam", "--timeout", "60s", "--json"])
            let joined = try w.run(sam, ["join", code, "--name", "Sam", "--timeout", "60s"])
            let paulSaw = invite.finish(timeout: 60)
            print(
                """
                JoinerInterceptionTests person: the impostor's guess was \(adversary.guessResult ?? "never tested")
                  Sam's first join: exit \(failed.status) \(failed.stdout)
                  Sam's second join: exit \(joined.status) \(joined.stdout)\(joined.stderr)
                  Paul's invite: exit \(paulSaw.status) \(paulSaw.stdout)\(paulSaw.stderr)
                """)
            #expect(failed.status == 3 && failed.stdout.contains("code_mismatch"), "\(failed.stdout)")
            #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
            #expect(paulSaw.stdout.contains("Sam joined Family."), "\(paulSaw.stdout)")
            #expect(
                paulSaw.stdout.contains("Sam's device says this invite")
                    && paulSaw.stdout.contains("someone may have tried to intercept the code"),
                "\(paulSaw.stdout)")
            #expect(paulSaw.status == 3, "\(paulSaw.stdout) \(paulSaw.stderr)")
            #expect(paulSaw.stderr.contains("it no longer works"), "\(paulSaw.stderr)")
        }
    }
}
