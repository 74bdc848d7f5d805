import Adversaries
import Foundation
import Support
import TestSupport
import Testing

@testable import ClientCore
@testable import JoinProtocol
@testable import PAKE

/// A plain client (no man in the middle) probing an attendant for the code's words
/// (`DESIGN.md` promise 4). The prober deviates from the protocol: it sends `pA = w'·M` for a
/// guess `w'` (no secret x of its own, so `pA − w·M` is the identity exactly when the guess is
/// right) and never confirms. Every probe must count as a failure, the cap must burn the
/// invite, and what the prober sees must not depend on whether its guess was right.
@Suite struct PasswordOracleTests {
    /// What one probe saw: whether the attendant sent `abort`, and after how long.
    struct Probe: Sendable, CustomStringConvertible {
        let right: Bool
        let sawAbort: Bool
        let seconds: Double
        var description: String {
            "\(right ? "right" : "wrong") guess: \(sawAbort ? "abort" : "silence") after \(String(format: "%.2f", seconds)) s"
        }
    }

    /// `pA = w'·M` for the words `guess` on `nameplate`, framed as the join protocol frames it.
    static func probeMessage(guess: String, nameplate: Rendezvous.Nameplate) -> [UInt8] {
        let binding = JoinBinding(intent: .join, nameplate: nameplate)
        let password = SPAKE2.Password(
            deriving: Array(guess.utf8), context: binding.passwordContext, suite: .edwards25519)
        return [JoinHandshake.version] + password.timesM.unredactedBytes()
    }

    /// Claims the invite's nameplate, sends the probe, and watches for `window` seconds.
    static func probe(
        relayURL: String, nameplate: Rendezvous.Nameplate, guess: String, right: Bool, window: Double
    )
        throws -> Probe
    {
        var generator = SystemRandomNumberGenerator()
        let connection = RendezvousConnection(
            url: relayURL,
            machine: RendezvousMachine(
                appID: JoinIntent.join.appID, side: .random(using: &generator), start: .claim(nameplate)))
        try connection.start()
        defer { connection.close(mood: .lonely, timeout: .seconds(1)) }
        try connection.send(phase: .pake, body: probeMessage(guess: guess, nameplate: nameplate))
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(window * 1000))
        while ContinuousClock.now < deadline {
            do {
                if case .received(.abort, _) = try connection.next(timeout: deadline - .now) {
                    let elapsed = ContinuousClock.now - start
                    return Probe(right: right, sawAbort: true, seconds: Self.seconds(elapsed))
                }
            } catch .timedOut {
                break
            }
        }
        return Probe(right: right, sawAbort: false, seconds: window)
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// An attendant (the driver the bot and the CLI share) with a cap of three failures, run on
    /// a thread of its own; its machine is kept as saved.
    final class Attendant: @unchecked Sendable {
        let saved = Locked<InviteAttendant?>(nil)
        let nameplate = Locked<Rendezvous.Nameplate?>(nil)
        /// The latest use whose mailbox has its first message (a prepared one is not saved).
        let attended = Locked<Int?>(nil)
        let done = Locked(false)

        init(relayURL: String, words: String, maxFailures: Int, stepTimeout: Duration) {
            var random = SystemRandom()
            let secret = InviteSecret(words: words, seed: SecretBytes(randomCount: 32, using: &random))
            let now = Int64(Date().timeIntervalSince1970)
            let hooks = InviteAttendantHooks(
                save: { [saved] attendant in saved.withLock { $0 = attendant } },
                check: { _, _, _ in nil }, admit: { _, _ in .granted(Array("{}".utf8)) },
                report: { _, _ in })
            let driver = InviteAttendantDriver(
                attendant: InviteAttendant(
                    policy: .init(uses: 1, maxFailures: maxFailures, expiresAt: now + 120)),
                relayURL: relayURL, secret: secret, hooks: hooks)
            driver.stepTimeout = stepTimeout
            driver.announceWaiting = false
            driver.onAllocated = { [nameplate, attended] allocated in
                nameplate.withLock { $0 = allocated }
                attended.withLock { $0 = 0 }
            }
            driver.onPrepared = { [attended] use in attended.withLock { $0 = use } }
            // The driver lives on its thread alone.
            nonisolated(unsafe) let owned = driver
            Thread.detachNewThread { [done] in
                _ = try? owned.run(until: .now + .seconds(60))
                done.withLock { $0 = true }
            }
        }

        var failures: Int { saved.withLock { $0?.failures ?? 0 } }

        func isAttending(use: Int) -> Bool { attended.withLock { $0 == use } }
        var ending: InviteAttendant.Ending? { saved.withLock { $0?.ending } }
    }

    @Test func aProberCannotTellARightGuessAndEveryProbeCounts() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let relay = try AdversarialRelayFixture.startRelay(in: dir)
            defer { relay.stop() }
            let relayURL = "ws://127.0.0.1:\(relay.port)/v1"
            let words = "coral-piano"
            let attendant = Attendant(
                relayURL: relayURL, words: words, maxFailures: 3, stepTimeout: .seconds(1))
            _ = TestSupport.eventually(timeout: 20) { attendant.nameplate.withLock { $0 } != nil }
            let nameplate = try #require(attendant.nameplate.withLock { $0 })
            var probes: [Probe] = []
            // A wrong guess, the right one, a wrong one: each on the next use's fresh mailbox.
            for (n, (guess, right)) in [("abacus-abbey", false), (words, true), ("abbey-abacus", false)]
                .enumerated()
            {
                // Each probe on the next use's fresh mailbox, once its first message is in it.
                guard TestSupport.eventually(timeout: 20, { attendant.isAttending(use: n) }) else {
                    break
                }
                probes.append(
                    try Self.probe(
                        relayURL: relayURL, nameplate: nameplate, guess: guess, right: right, window: 3))
            }
            // The attendant's step timeout (1 s) has passed for the last probe.
            _ = TestSupport.eventually(timeout: 10) { attendant.ending != nil }
            print(
                "PasswordOracleTests probes: \(probes); failures counted: \(attendant.failures); ending: \(String(describing: attendant.ending))"
            )
            // What the prober saw is the same for the right guess as for the wrong ones.
            let seen = Set(probes.map(\.sawAbort))
            #expect(seen.count == 1, "the attendant answered a right guess differently: \(probes)")
            // Every probe counted, and the third burned the invite.
            #expect(attendant.failures == 3, "\(probes)")
            #expect(attendant.ending == .burned)
        }
    }
}
