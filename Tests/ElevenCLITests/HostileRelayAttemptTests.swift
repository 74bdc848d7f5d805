import Adversaries
import Foundation
import JoinProtocol
import PAKE
import Support
import TestSupport
import Testing

/// A relay that works with a guesser (`DESIGN.md` promise 4, issue #20 item 4). Once an armed
/// round sees an attendant open a use's mailbox, it injects a guess as if a joiner had sent it:
/// a `pake` for words of its own and a made-up `confirm`. When the attendant answers the guess
/// (its `abort`, or any other mailbox message or close), the guess counts as made: the relay
/// drops the answer, runs `afterGuess` (the test kills the bot there), cuts the connection and
/// refuses every reconnect until the next round. An attendant that keeps the failed attempt in
/// memory and saves it only after its next network step never saves it, and would resume the
/// same use, with the same secret, for another guess.
final class GuessInjectingRelay: RelayAdversary, @unchecked Sendable {
    private let lock = NSLock()
    private var armed = false
    /// Connections whose mailbox got a guess the attendant has not answered yet.
    private var guessedOn: Set<Int> = []
    private var refusing = false
    private var nameplates: [Int: String] = [:]
    private var answered = 0
    /// Run (once per round) when the attendant answers the guess.
    var afterGuess: (@Sendable () -> Void)?

    /// Guesses the attendants answered: each is one guess they let a joiner make.
    var guesses: Int { lock.withLock { answered } }

    /// Starts a round: reconnects pass again, and each mailbox opened draws a guess until the
    /// attendant answers one.
    func arm() {
        lock.withLock {
            armed = true
            guessedOn = []
            refusing = false
        }
    }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        let action = lock.withLock { () -> (emissions: [RelayEmission], then: (@Sendable () -> Void)?) in
            if let nameplate = frame.nameplate { nameplates[frame.link] = nameplate }
            // Every connection made after the answer is refused at its first frame.
            if refusing { return ([.silenceAndCut(afterMs: 0)], nil) }
            if guessedOn.contains(frame.link), frame.direction == .toRelay {
                switch (frame.type, frame.phase) {
                case ("add", .pake?):
                    return (pass(frame), nil)
                case ("add", .ended?):
                    // A connection that only leaves the invite's end notice: no guess was
                    // looked at.
                    guessedOn.remove(frame.link)
                    return (pass(frame), nil)
                case ("add", _), ("close", _):
                    answered += 1
                    armed = false
                    refusing = true
                    return ([.silenceAndCut(afterMs: 0)], afterGuess)
                default:
                    return (pass(frame), nil)
                }
            }
            guard armed, frame.direction == .toRelay, frame.type == "open",
                let nameplate = nameplates[frame.link]
            else { return (pass(frame), nil) }
            // Every mailbox opened in the round gets a guess until one is answered.
            guessedOn.insert(frame.link)
            // The guess, after whatever the relay replays from the mailbox: a joiner's first
            // message for words the guesser chose, then a confirmation it made up.
            var random = SystemRandom()
            let binding = JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate(nameplate))
            let handshake = JoinHandshake(
                role: .joiner, words: "abacus-abbey", binding: binding, using: &random)
            let side = Hex.encode(random.bytes(count: 5))
            let confirm = [UInt8(1)] + random.bytes(count: 32)
            return (
                pass(frame) + [
                    .deliver(
                        .toClient, RelayFrame.message(side: side, phase: .pake, body: handshake.firstMessage),
                        delayMs: 300, inOrder: false),
                    .deliver(
                        .toClient, RelayFrame.message(side: side, phase: .confirm, body: confirm),
                        delayMs: 300, inOrder: false),
                ], nil
            )
        }
        action.then?()
        return action.emissions
    }
}

/// The failed-attempt count survives a relay that refuses the attendant's reconnect and a bot
/// killed between the failed confirmation and its next step: neither gives the guesser a second
/// guess beyond the invite's cap (issue #20 item 4).
@Suite(.serialized) struct HostileRelayAttemptTests {
    /// `eleven approve` on a detached invite with a cap of two, through a relay that injects a
    /// guess and refuses the reconnect, four times over: at most two guesses, then the invite is
    /// burned for good.
    @Test func approveThroughARelayThatRefusesTheReconnectGivesNoExtraGuess() async throws {
        try await JoinScenariosCLI.withServerAndRelay { server, relay in
            let adversary = GuessInjectingRelay()
            let proxy = try AdversarialRelay(upstream: relay.url, adversary: adversary)
            defer { proxy.stop() }
            // Paul's invite, and so every `eleven approve` of it, goes through the proxy.
            let w = try JoinScenariosCLI.makeWorld(relayURL: proxy.url, server: server)
            let detached = try w.run(
                w.paul, ["invite", "--short", "--detach", "--max-failures", "2", "--relay", proxy.url])
            #expect(detached.status == 0, "\(detached.stderr)")
            let code =
                detached.stdout.split(separator: "\n").first { $0.hasPrefix("Invite code: ") }
                .map { String($0.dropFirst("Invite code: ".count)) } ?? ""
            var rounds: [String] = []
            for round in 1...4 {
                adversary.arm()
                let before = adversary.guesses
                let approve = try w.run(w.paul, ["approve", "--yes", "--timeout", "20s", "--json"])
                let guessed = adversary.guesses > before
                rounds.append(
                    "round \(round): exit \(approve.status), \(guessed ? "a guess" : "no guess"): "
                        + approve.stdout.split(separator: "\n").joined(separator: " | ")
                        + (approve.stderr.isEmpty ? "" : " stderr: \(approve.stderr)"))
            }
            print("HostileRelayAttemptTests approve: \(rounds.joined(separator: "\n  "))")
            print("HostileRelayAttemptTests approve: guesses allowed: \(adversary.guesses) (cap 2)")
            // A relay that refuses the reconnect is the relay's trouble (exit 4), said as such.
            #expect(
                rounds.first.map { $0.contains("exit 4") && $0.contains("relay") } == true, "\(rounds)")
            #expect(adversary.guesses <= 2, "\(rounds)")
            // The invite is over: the right code, straight to the relay, is refused.
            let sam = try ElevenHome("sam")
            let late = try sam.run(
                ["join", code, "--name", "Sam", "--timeout", "5s", "--json"],
                environment: ["ELEVEN_RELAY": relay.url])
            #expect(late.status == 3, "\(late.stdout) \(late.stderr)")
            #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
        }
    }

    /// The bot, with the default cap of one, killed (SIGKILL) when it answers an injected guess
    /// and restarted: the restarted bot does not attend the same use again.
    @Test func aBotKilledAfterAFailedGuessGivesNoSecondGuess() async throws {
        try await TestSupport.offPool { try Self.botKilledAfterAFailedGuess() }
    }

    static func botKilledAfterAFailedGuess() throws {
        let adversary = GuessInjectingRelay()
        let world = try BotWorld()
        defer { world.stop() }
        // The bot reaches the relay through the proxy; people reach it directly.
        let proxy = try world.attendThrough(adversary)
        defer { proxy.stop() }
        let killed = Locked(false)
        let botPid = Locked(world.bot?.pid)
        adversary.afterGuess = {
            guard let pid = botPid.withLock({ $0 }), !killed.withLock({ $0 }) else { return }
            kill(pid, SIGKILL)
            killed.withLock { $0 = true }
        }
        adversary.arm()
        let code = try world.invite()
        let answered = TestSupport.eventually(timeout: 30) { killed.withLock { $0 } }
        #expect(answered, "the bot never answered the guess")
        world.killBot()
        // A second round: the restarted bot's reconnects pass, and any mailbox it opens for
        // this invite draws another guess.
        adversary.arm()
        try world.startBot()
        // The restarted bot hears nobody replayed within its step timeout (the guess never
        // reached the relay), so the counted attempt stands and the invite is burned.
        let notes = Locked("")
        let told = TestSupport.eventually(timeout: 60) {
            let seen = (try? world.run(world.paul, ["bot", "notes"]))?.stdout ?? ""
            notes.withLock { $0 = seen }
            return seen.contains("cancelled")
        }
        let sam = try ElevenHome("sam")
        let late = try world.run(sam, ["join", code, "--name", "Sam", "--timeout", "5s", "--json"])
        let seen = notes.withLock { $0 }
        print(
            "HostileRelayAttemptTests bot: guesses \(adversary.guesses); Paul's notes: \(seen)the right code afterwards: exit \(late.status) \(late.stdout)"
        )
        #expect(told, "\(seen)")
        #expect(adversary.guesses == 1)
        #expect(late.status == 3, "\(late.stdout) \(late.stderr)")
        #expect(late.stdout.contains("invite_burned"), "\(late.stdout)")
        #expect(!FileManager.default.fileExists(atPath: sam.path + "/spaces.json"))
    }
}

extension BotWorld {
    /// Restarts the bot so that it attends through a hostile proxy in front of the relay
    /// (returned; stop it when done).
    func attendThrough(_ adversary: any RelayAdversary) throws -> AdversarialRelay {
        let proxy = try AdversarialRelay(upstream: relay.url, adversary: adversary)
        killBot()
        botRelay = proxy.url
        try startBot()
        return proxy
    }
}
