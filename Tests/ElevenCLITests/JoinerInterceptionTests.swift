import Adversaries
import Foundation
import JoinProtocol
import PAKE
import Support
import TestSupport
import Testing

/// A relay that poses as the attendant toward a joiner (issue #20 item 5): once armed, the
/// first connection that claims a nameplate someone else claimed before (the attendant) is a
/// joiner's. The relay lets it into the mailbox, swaps the attendant's key-agreement message for
/// one of its own made with a guessed code, keeps every message of the joiner from the mailbox
/// (the attendant never hears of it), tests its guess against the joiner's confirmation, and
/// answers `abort`: the joiner sees a code that did not match, the attendant sees nothing.
final class AttendantImpostorRelay: RelayAdversary, @unchecked Sendable {
    private let lock = NSLock()
    private var armed = false
    /// The first connection to claim each nameplate: the attendant's.
    private var claimedBy: [String: Int] = [:]
    private var joiner: (link: Int, nameplate: String)?
    private var impostor: JoinHandshake?
    private var impostorMessage: [UInt8] = []
    private var joinerPake: [UInt8]?
    private var attendantSide = "0000000000"
    private var result: String?
    let guess: String

    init(guess: String) { self.guess = guess }

    /// The next joiner is met by the impostor.
    func arm() { lock.withLock { armed = true } }

    /// What the impostor learned from the joiner's confirmation, once it came.
    var guessResult: String? { lock.withLock { result } }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        lock.withLock {
            if frame.direction == .toRelay, frame.type == "claim", let nameplate = frame.nameplate {
                if let first = claimedBy[nameplate] {
                    if armed, first != frame.link, joiner == nil {
                        armed = false
                        joiner = (frame.link, nameplate)
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
            guard let joiner, joiner.link == frame.link else { return pass(frame) }
            switch (frame.direction, frame.type, frame.phase) {
            case (.toClient, "message", .pake?) where frame.side != nil:
                // The attendant's message, replayed to the joiner: ours in its place.
                attendantSide = frame.side ?? attendantSide
                return [
                    .deliver(.toClient, frame.replacingBody(impostorMessage), delayMs: 0, inOrder: true)
                ]
            case (.toClient, "message", _):
                return []
            case (.toRelay, "add", .pake?):
                joinerPake = frame.body
                return []
            case (.toRelay, "add", .confirm?):
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
                        .toClient, RelayFrame.message(side: attendantSide, phase: .abort, body: [1]),
                        delayMs: 0,
                        inOrder: true)
                ]
            case (.toRelay, "add", _):
                return []
            default:
                return pass(frame)
            }
        }
    }
}

/// A relay posing as the attendant tests one guess on a joiner's confirmation; the joiner's
/// failed attempt must reach the inviter, and the invite it was for must not stay live as if
/// nothing happened (issue #20 item 5; `docs/threat-model.md`, "Guesses against a joiner").
@Suite(.serialized) struct JoinerInterceptionTests {
    @Test func aJoinersFailedAttemptThroughAnImpostorReachesTheInviter() async throws {
        try await TestSupport.offPool { try Self.impostorAgainstABotInvite() }
    }

    static func impostorAgainstABotInvite() throws {
        let adversary = AttendantImpostorRelay(guess: "abacus-abbey")
        let world = try BotWorld()
        defer { world.stop() }
        // The relay everyone uses is the hostile one: the bot attends through it, Sam joins
        // through it.
        let proxy = try world.attendThrough(adversary)
        defer { proxy.stop() }
        let first = try world.invite()
        adversary.arm()
        let sam = try ElevenHome("sam")
        let failed = try world.run(
            sam, ["join", first, "--name", "Sam", "--relay", proxy.url, "--timeout", "60s", "--json"])
        // Sam's device keeps the failed attempt (sealed) until an attendant heard of it.
        let record = sam.path + "/failed-joins.sealed"
        let kept = FileManager.default.fileExists(atPath: record)
        // Paul sends a new code; this time the relay lets Sam through.
        let second = try world.invite()
        let joined = try world.run(
            sam, ["join", second, "--name", "Sam", "--relay", proxy.url, "--timeout", "60s"])
        // What Paul hears, and what became of the first invite.
        let notes = Locked("")
        let told = TestSupport.eventually(timeout: 30) {
            let seen = (try? world.run(world.paul, ["bot", "notes", "--keep"]))?.stdout ?? ""
            notes.withLock { $0 = seen }
            return seen.contains("intercept")
        }
        // The bot counts the reported attempt on the first invite (its worker, woken): the
        // invite leaves the open ones. Open invites are listed as "  nameplate N  open  …" (the
        // recent history's lines begin with a date).
        let nameplate = first.split(separator: "-").last.map(String.init) ?? ""
        let statusText = Locked("")
        let firstClosed = TestSupport.eventually(timeout: 30) {
            let seen = (try? world.botCommand(["status", "--state", world.botState]))?.stdout ?? ""
            statusText.withLock { $0 = seen }
            return !seen.split(separator: "\n").contains { $0.hasPrefix("  nameplate \(nameplate)  ") }
        }
        let status = statusText.withLock { $0 }
        print(
            """
            JoinerInterceptionTests: the impostor's guess was \(adversary.guessResult ?? "never tested")
              Sam's first join (\(first)): exit \(failed.status) \(failed.stdout)\(failed.stderr)
              Sam's second join (\(second)): exit \(joined.status) \(joined.stdout)
              Paul's notes: \(notes.withLock { $0 })
              bot status: \(status)
            """)
        #expect(adversary.guessResult?.hasPrefix("wrong") == true)
        #expect(failed.status == 3, "\(failed.stdout) \(failed.stderr)")
        #expect(failed.stdout.contains("code_mismatch"), "\(failed.stdout)")
        #expect(joined.status == 0, "\(joined.stdout) \(joined.stderr)")
        #expect(kept)
        #expect(!FileManager.default.fileExists(atPath: record), "told once, then forgotten")
        // The inviter is told, and the first invite no longer works.
        #expect(told, "\(notes.withLock { $0 })")
        #expect(firstClosed, "\(status)")
        let ann = try ElevenHome("ann")
        let late = try world.run(ann, ["join", first, "--name", "Ann", "--timeout", "10s", "--json"])
        print(
            "JoinerInterceptionTests: Ann with the first code afterwards: exit \(late.status) \(late.stdout)")
        #expect(late.status == 3, "\(late.stdout) \(late.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ann.path + "/spaces.json"))
    }
}
