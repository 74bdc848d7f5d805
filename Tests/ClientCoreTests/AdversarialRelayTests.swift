import Adversaries
import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import Support
import TestSupport
import Testing

// Property tests of short-code joins through `AdversarialRelay` in front of a real
// `eleven-relay`, driving the real ClientCore attendant (`InviteAttendance`) and joiner
// (`JoinRunner`) over real sockets. Each test prints how many runs it made and what the
// adversary did, so reports can cite the counts.

/// What one run saw that it should not have.
struct RunReport: Sendable {
    var violations: [String] = []
    var counts: [String: Int] = [:]

    mutating func check(_ condition: Bool, _ what: @autoclosure () -> String) {
        if !condition { violations.append(what()) }
    }

    static func merge(_ reports: [RunReport]) -> RunReport {
        var all = RunReport()
        for report in reports {
            all.violations += report.violations
            all.counts.merge(report.counts, uniquingKeysWith: +)
        }
        return all
    }

    var summary: String {
        counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}

enum AdversarialRuns {
    static let request = JoinRequest(
        displayName: "Sam", deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys-of-sam"))

    /// Random code words (2 or 3 of them), as the SPAKE2 password sees them.
    static func words(_ rng: inout SeededRandom) -> String {
        let bytes = rng.bytes(count: 7)
        return (0..<(2 + Int(bytes[6] % 2))).map { i in
            "w\(Int(bytes[2 * i]) << 3 | Int(bytes[2 * i + 1] & 7))"
        }
        .joined(separator: "-")
    }

    /// Stand-ins for what a grant carries that no wrong guess may see.
    static func grant(_ run: Int) -> [UInt8] {
        Array(#"{"device_token":"TOKEN-\#(run)","wraps":["THREADKEY-\#(run)"]}"#.utf8)
    }

    /// Runs `count` bodies, `width` at a time, each on a thread of its own.
    static func parallel<T: Sendable>(_ count: Int, width: Int, _ body: @escaping @Sendable (Int) -> T) -> [T]
    {
        let results = Handoff<[Int: T]>()
        let lock = NSLock()
        results.put([:])
        let slots = DispatchSemaphore(value: width)
        let group = DispatchGroup()
        for index in 0..<count {
            slots.wait()
            group.enter()
            let thread = Thread {
                let result = body(index)
                lock.withLock {
                    results.put((results.take(timeout: 0) ?? [:]).merging([index: result]) { $1 })
                }
                slots.signal()
                group.leave()
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
        group.wait()
        let all = results.take(timeout: 0) ?? [:]
        return (0..<count).compactMap { all[$0] }
    }

    /// An attendant on another thread: allocates through `url`, attends one use.
    struct Attending: Sendable {
        let nameplate: Rendezvous.Nameplate
        let outcome: Handoff<Result<InviteAttendance.Outcome, JoinRunError>>
        let decided: Handoff<(JoinRequest, [UInt8])>
    }

    static func attend(
        url: String, words: String, seed: UInt8, grant: [UInt8], deadline: Duration = .seconds(20)
    ) throws -> Attending {
        let (connection, nameplate) = try InviteAttendance.allocate(relayURL: url, timeout: .seconds(20))
        let outcome = Handoff<Result<InviteAttendance.Outcome, JoinRunError>>()
        let decided = Handoff<(JoinRequest, [UInt8])>()
        nonisolated(unsafe) let owned = connection
        Thread.detachNewThread {
            do throws(JoinRunError) {
                let result = try InviteAttendance.attendOne(
                    on: owned, words: words, binding: JoinBinding(intent: .join, nameplate: nameplate),
                    seed: SecretBytes(Array(repeating: seed, count: 32)), use: 0, published: false,
                    inviterName: "Paul", deadline: .now + deadline
                ) { request, verifier in
                    decided.put((request, verifier))
                    return .approve(grant: grant)
                }
                outcome.put(.success(result))
            } catch {
                outcome.put(.failure(error))
            }
        }
        return Attending(nameplate: nameplate, outcome: outcome, decided: decided)
    }

    /// A joiner through `url`: the grant or the error, and the verifier if the code was accepted.
    static func join(
        url: String, nameplate: Rendezvous.Nameplate, words: String, request: JoinRequest = request
    )
        -> (Result<[UInt8], JoinRunError>, [UInt8]?)
    {
        let verifier = Handoff<[UInt8]>()
        let result = Result { () throws(JoinRunError) -> [UInt8] in
            try JoinRunner.join(
                relayURL: url, nameplate: nameplate, words: words, request: request, timeout: .seconds(20)
            ) { progress in
                if case .codeAccepted(let v) = progress { verifier.put(v) }
            }
        }
        return (result, verifier.take(timeout: 0))
    }
}

// MARK: - Adversaries

/// An honest but hostile network: delays, duplicates and reorders mailbox messages, drops
/// frames (then the connection dies, as a real loss does) and cuts connections.
final class ChaosAdversary: RelayAdversary, @unchecked Sendable {
    private var rng: SeededRandom
    private var cutsLeft: Int
    private(set) var counts: [String: Int] = [:]

    init(seed: UInt64, maxCuts: Int) {
        rng = SeededRandom(seed: withUnsafeBytes(of: seed.littleEndian) { Array($0) })
        cutsLeft = maxCuts
    }

    private func roll(_ n: Int) -> Int {
        Int(rng.bytes(count: 2).withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) }) % n
    }

    private func note(_ what: String) { counts[what, default: 0] += 1 }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        let r = roll(100)
        if cutsLeft > 0 && r < 3 {
            cutsLeft -= 1
            note("drops")
            return [.silenceAndCut(afterMs: roll(20))]
        }
        if cutsLeft > 0 && r < 6 {
            cutsLeft -= 1
            note("cuts")
            return pass(frame) + [.silenceAndCut(afterMs: roll(30))]
        }
        let way = frame.direction
        guard frame.isMailboxMessage else {
            if r < 30 { note("delays") }
            return [.deliver(way, frame.text, delayMs: r < 30 ? roll(15) : 0, inOrder: true)]
        }
        switch r {
        case ..<30:
            note("duplicates")
            return [
                .deliver(way, frame.text, delayMs: 0, inOrder: true),
                .deliver(way, frame.text, delayMs: roll(20), inOrder: true),
            ]
        case ..<55:
            note("reorders")
            return [.deliver(way, frame.text, delayMs: 10 + roll(25), inOrder: false)]
        case ..<80:
            note("delays")
            return [.deliver(way, frame.text, delayMs: roll(25), inOrder: true)]
        default:
            return pass(frame)
        }
    }
}

/// Eve, a man in the middle at the relay: the joiner's claims of Paul's nameplate go to a
/// mailbox of her own (same relay), where her attendant half, with her guess of the code and
/// Paul's nameplate in the binding, meets the joiner; her joiner half, with the same guess,
/// meets Paul. Each exchange is terminated separately.
final class RedirectingAdversary: RelayAdversary, @unchecked Sendable {
    private var inviterSides: Set<String> = []
    private var sideOf: [Int: String] = [:]
    private var redirect: (from: String, to: String)?
    private(set) var rewritten = 0

    func redirect(from: Rendezvous.Nameplate, to: Rendezvous.Nameplate) {
        redirect = (from.value, to.value)
    }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        guard frame.direction == .toRelay else { return pass(frame) }
        switch frame.type {
        case "bind": sideOf[frame.link] = frame.side
        case "allocate": if let side = sideOf[frame.link] { inviterSides.insert(side) }
        case "claim", "release":
            if let redirect, frame.nameplate == redirect.from, let side = sideOf[frame.link],
                !inviterSides.contains(side)
            {
                rewritten += 1
                return [
                    .deliver(
                        .toRelay, frame.replacing("nameplate", with: redirect.to), delayMs: 0, inOrder: true)
                ]
            }
        default: break
        }
        return pass(frame)
    }
}

/// Replaces bodies: each mailbox message whose body is a key of `swaps` gets the value instead
/// (splices between sessions, replays of a recorded session), and `holdUntilSwappable` holds a
/// phase's messages until its swap partner is known. Optionally flips one bit of the n-th body.
final class SubstitutingAdversary: RelayAdversary, @unchecked Sendable {
    /// Phases whose bodies are swapped between the two sessions, as they are seen.
    private let swappedPhases: Set<Rendezvous.Phase>
    private var firstSeen: [Rendezvous.Phase: [UInt8]] = [:]
    private var swaps: [[UInt8]: [UInt8]] = [:]
    private var paired: Set<Rendezvous.Phase> = []
    private var held: [(RelayFrame, Rendezvous.Phase, [UInt8])] = []
    /// Flip one bit of the `flipAt`-th mailbox message body (counted over both directions).
    private let flipAt: Int?
    private let flipBit: Int
    private var seen = 0
    private(set) var substituted = 0

    init(swapping phases: Set<Rendezvous.Phase> = [], flipAt: Int? = nil, flipBit: Int = 0) {
        swappedPhases = phases
        self.flipAt = flipAt
        self.flipBit = flipBit
    }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        guard frame.isMailboxMessage, let phase = frame.phase, var body = frame.body else {
            return pass(frame)
        }
        if frame.direction == .toRelay {
            defer { seen += 1 }
            if seen == flipAt, !body.isEmpty {
                body[flipBit / 8 % body.count] ^= UInt8(1 << (flipBit % 8))
                substituted += 1
                return [.deliver(.toRelay, frame.replacingBody(body), delayMs: 0, inOrder: true)]
            }
            if swappedPhases.contains(phase) {
                if let first = firstSeen[phase], first != body, swaps[first] == nil, swaps[body] == nil,
                    !paired.contains(phase)
                {
                    paired.insert(phase)
                    swaps[first] = body
                    swaps[body] = first
                    return pass(frame) + releaseHeld(proxy)
                }
                if firstSeen[phase] == nil { firstSeen[phase] = body }
            }
            return pass(frame)
        }
        guard swappedPhases.contains(phase), frame.side != nil else { return pass(frame) }
        // A client's own echo is not swapped: only what it receives from its peer.
        if let other = swaps[body] {
            substituted += 1
            return [.deliver(.toClient, frame.replacingBody(other), delayMs: 0, inOrder: true)]
        }
        if firstSeen[phase] == body || swaps.isEmpty {
            held.append((frame, phase, body))
            return []
        }
        return pass(frame)
    }

    private func releaseHeld(_ proxy: AdversarialRelay) -> [RelayEmission] {
        let waiting = held
        held = []
        for (frame, _, body) in waiting {
            let text = swaps[body].map { frame.replacingBody($0) } ?? frame.text
            if swaps[body] != nil { substituted += 1 }
            proxy.inject(link: frame.link, .toClient, text)
        }
        return []
    }
}

final class PassingAdversary: RelayAdversary, @unchecked Sendable {
    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] { pass(frame) }
}

// MARK: - Tests

@Suite(.serialized) struct AdversarialRelayTests {
    /// Starts eleven-relay, runs `body` with its URL, stops it.
    func withRelay(_ body: @escaping @Sendable (String) throws -> RunReport) async throws -> RunReport {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let relay = try AdversarialRelayFixture.startRelay(in: dir)
            defer { relay.stop() }
            return try body("ws://127.0.0.1:\(relay.port)/v1")
        }
    }

    @Test func honestJoinsUnderDropDelayDuplicateReorderAndReconnectAlwaysComplete() async throws {
        let runs = 60
        let report = try await withRelay { relayURL in
            RunReport.merge(
                AdversarialRuns.parallel(runs, width: 6) { run in
                    var report = RunReport()
                    do {
                        var rng = SeededRandom(seed: [UInt8(run), 1])
                        let words = AdversarialRuns.words(&rng)
                        let chaos = ChaosAdversary(seed: UInt64(run), maxCuts: 3)
                        let proxy = try AdversarialRelay(upstream: relayURL, adversary: chaos)
                        defer { proxy.stop() }
                        let grant = AdversarialRuns.grant(run)
                        let paul = try AdversarialRuns.attend(
                            url: proxy.url, words: words, seed: UInt8(run), grant: grant)
                        let (result, samVerifier) = AdversarialRuns.join(
                            url: proxy.url, nameplate: paul.nameplate, words: words)
                        report.check((try? result.get()) == grant, "run \(run): joiner got \(result)")
                        let outcome = paul.outcome.take(timeout: 25)
                        report.check(
                            (try? outcome?.get()) == .admitted(AdversarialRuns.request),
                            "run \(run): attendant \(String(describing: outcome))")
                        let paulVerifier = paul.decided.take(timeout: 0)?.1
                        report.check(
                            samVerifier != nil && samVerifier == paulVerifier, "run \(run): verifiers")
                        report.counts = chaos.counts
                        report.counts["runs"] = 1
                    } catch {
                        report.violations.append("run \(run): \(error)")
                    }
                    return report
                })
        }
        print("adversarial relay, honest runs: \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs)
        // The schedules did exercise every kind of interference.
        for kind in ["drops", "cuts", "delays", "duplicates", "reorders"] {
            #expect((report.counts[kind] ?? 0) > 0, "no \(kind)")
        }
    }

    /// Eve runs her own SPAKE2 against each side. `rightGuess`: she knows the code.
    /// `checkNotice`: then leave the end notice and try again (runs must not overlap: a freed
    /// nameplate may be handed to another run's invite meanwhile).
    static func manInTheMiddle(relayURL: String, run: Int, rightGuess: Bool, checkNotice: Bool = false) throws
        -> RunReport
    {
        var report = RunReport()
        var rng = SeededRandom(seed: [UInt8(run), rightGuess ? 2 : 3])
        let words = AdversarialRuns.words(&rng)
        let other = AdversarialRuns.words(&rng)
        let guess = rightGuess ? words : other == words ? other + "-x" : other
        let eve = RedirectingAdversary()
        let proxy = try AdversarialRelay(upstream: relayURL, adversary: eve)
        defer { proxy.stop() }
        let grant = AdversarialRuns.grant(run)
        let paul = try AdversarialRuns.attend(url: proxy.url, words: words, seed: UInt8(run), grant: grant)
        let nameplate = paul.nameplate

        // Eve's mailbox for the joiner, directly on the relay.
        let (eveConnection, eveNameplate) = try InviteAttendance.allocate(
            relayURL: relayURL, timeout: .seconds(20))
        eve.redirect(from: nameplate, to: eveNameplate)
        let eveGot = Handoff<Result<[UInt8], JoinRunError>>()
        let eveHalf = Handoff<Result<InviteAttendance.Outcome, JoinRunError>>()
        nonisolated(unsafe) let owned = eveConnection
        let eveAsJoiner: @Sendable (JoinRequest) -> Result<[UInt8], JoinRunError> = { request in
            let got = AdversarialRuns.join(
                url: relayURL, nameplate: nameplate, words: guess, request: request
            ).0
            eveGot.put(got)
            return got
        }
        Thread.detachNewThread {
            eveHalf.put(
                Result { () throws(JoinRunError) in
                    try InviteAttendance.attendOne(
                        on: owned, words: guess, binding: JoinBinding(intent: .join, nameplate: nameplate),
                        seed: SecretBytes(Array(repeating: 0xEE, count: 32)), use: 0, published: false,
                        inviterName: "Paul", deadline: .now + .seconds(20)
                    ) { samsRequest, _ in
                        // Eve asks Paul in Sam's name and passes on whatever she gets.
                        switch eveAsJoiner(samsRequest) {
                        case .success(let got): return .approve(grant: got)
                        case .failure: return .refuse(reason: .declined, message: "The inviter declined.")
                        }
                    }
                })
        }
        let eveFirst = !rightGuess && run % 2 == 0
        if eveFirst {
            // A wrong guesser may try Paul first, in her own name.
            _ = eveAsJoiner(
                JoinRequest(displayName: "Eve", deviceLabel: "x", publicKeys: JoinerKeys(text: "keys-of-eve"))
            )
        }
        let (samResult, samVerifier) = AdversarialRuns.join(
            url: proxy.url, nameplate: nameplate, words: words)
        if !rightGuess && !eveFirst {
            _ = eveAsJoiner(
                JoinRequest(displayName: "Eve", deviceLabel: "x", publicKeys: JoinerKeys(text: "keys-of-eve"))
            )
        }
        let paulOutcome = paul.outcome.take(timeout: 25)
        let paulDecided = paul.decided.take(timeout: 0)
        let eveResult = eveGot.take(timeout: 5)
        _ = eveHalf.take(timeout: 25)
        report.check(eve.rewritten > 0, "run \(run): Eve redirected nothing")
        if rightGuess {
            // Both exchanges complete and look honest: Paul let "Sam" in, Sam got Paul's grant.
            report.check((try? samResult.get()) == grant, "run \(run): Sam got \(samResult)")
            report.check((try? paulOutcome?.get()) == .admitted(AdversarialRuns.request), "run \(run): Paul")
            report.check((try? eveResult?.get()) == grant, "run \(run): Eve should have got the grant")
            // Only the verification words tell.
            let samWords = VerificationWords.words(for: samVerifier ?? [])
            let paulWords = VerificationWords.words(for: paulDecided?.1 ?? [])
            report.check(samWords.count == 3 && paulWords.count == 3, "run \(run): words missing")
            report.check(samWords != paulWords, "run \(run): the words matched through a MITM")
            report.counts["detected by the words"] = samWords != paulWords ? 1 : 0
        } else {
            // Paul burned the invite, was never asked, sent nothing secret.
            report.check(
                (try? paulOutcome?.get()) == .burned(.codeMismatch),
                "run \(run): Paul \(String(describing: paulOutcome))")
            report.check(paulDecided == nil, "run \(run): Paul was asked")
            // Eve got nothing: no grant, so no thread key and no device token.
            report.check(
                (try? eveResult?.get()) == nil, "run \(run): Eve got \(String(describing: eveResult))")
            report.check(
                { if case .failure(.failed(.codeMismatch)) = eveResult { true } else { false } }(),
                "run \(run): Eve \(String(describing: eveResult))")
            // Sam never accepted a key and was told the code did not match.
            report.check(samVerifier == nil, "run \(run): Sam accepted a key")
            report.check(
                {
                    if case .failure(.failed(.codeMismatch)) = samResult { true } else { false }
                }(), "run \(run): Sam \(samResult)")
            // The attendant's policy ends the invite and leaves the notice: Sam, trying again
            // with the right code, hears at once that it was burned.
            if checkNotice {
                var attendant = InviteAttendant(
                    policy: .init(uses: 1, expiresAt: Int64(Date().timeIntervalSince1970) + 600),
                    state: .attending(
                        nameplate: nameplate, use: 0,
                        connection: RendezvousMachine(
                            appID: JoinIntent.join.appID, side: Rendezvous.Side("0123456789"),
                            start: .claim(nameplate)), attempt: false),
                    taken: 0, failures: 0)
                if case .burned(let failure)? = try? paulOutcome?.get() {
                    _ = attendant.handle(.useEnded(.wrongCode(failure)), now: 0)
                }
                report.check(attendant.ending == .burned, "run \(run): the attendant did not burn the invite")
                try InviteAttendance.leaveEndNotice(relayURL: relayURL, nameplate: nameplate, end: .burned)
                let (again, _) = AdversarialRuns.join(url: relayURL, nameplate: nameplate, words: words)
                report.check(
                    { if case .failure(.failed(.inviteEnded(.burned))) = again { true } else { false } }(),
                    "run \(run): late joiner \(again)")
            }
            report.counts["burned"] = 1
        }
        report.counts["runs"] = 1
        report.counts["redirected frames"] = eve.rewritten
        return report
    }

    @Test func aManInTheMiddleWithAWrongGuessGetsNothingAndBurnsTheInvite() async throws {
        let runs = 100
        let report = try await withRelay { relayURL in
            RunReport.merge(
                AdversarialRuns.parallel(runs, width: 8) { run in
                    do {
                        return try Self.manInTheMiddle(relayURL: relayURL, run: run, rightGuess: false)
                    } catch {
                        return RunReport(violations: ["run \(run): \(error)"])
                    }
                })
        }
        print("adversarial relay, MITM with a wrong guess: \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs && report.counts["burned"] == runs)
    }

    /// After a wrong guess the attendant's policy ends the invite and leaves the `ended` notice:
    /// the right code afterwards is told at once that the invite was burned. One run at a time.
    @Test func aBurnedInviteTellsLateJoinersSo() async throws {
        let runs = 20
        let report = try await withRelay { relayURL in
            RunReport.merge(
                try (100..<(100 + runs)).map {
                    try Self.manInTheMiddle(relayURL: relayURL, run: $0, rightGuess: false, checkNotice: true)
                })
        }
        print("adversarial relay, burned invites with a late joiner: \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs && report.counts["burned"] == runs)
    }

    @Test func aManInTheMiddleWithTheRightGuessIsDetectedOnlyByTheVerificationWords() async throws {
        let runs = 40
        let report = try await withRelay { relayURL in
            RunReport.merge(
                AdversarialRuns.parallel(runs, width: 8) { run in
                    do {
                        return try Self.manInTheMiddle(relayURL: relayURL, run: run, rightGuess: true)
                    } catch {
                        return RunReport(violations: ["run \(run): \(error)"])
                    }
                })
        }
        print("adversarial relay, MITM with the right guess: \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs && report.counts["detected by the words"] == runs)
    }

    /// A recorded honest session, replayed into later sessions of the same code: the joiner's
    /// messages to a new attendant (burned, never asked), the attendant's to a new joiner (no
    /// key accepted, no grant).
    @Test func replaysFromAnEarlierSessionFail() async throws {
        let runs = 40
        let report = try await withRelay { relayURL in
            RunReport.merge(
                AdversarialRuns.parallel(runs, width: 8) { run in
                    var report = RunReport()
                    do {
                        var rng = SeededRandom(seed: [UInt8(run), 4])
                        let words = AdversarialRuns.words(&rng)
                        // Session 1, honest, recorded by the relay.
                        let recorder = try AdversarialRelay(upstream: relayURL, adversary: PassingAdversary())
                        defer { recorder.stop() }
                        let first = try AdversarialRuns.attend(
                            url: recorder.url, words: words, seed: 1, grant: AdversarialRuns.grant(run))
                        let (firstResult, _) = AdversarialRuns.join(
                            url: recorder.url, nameplate: first.nameplate, words: words)
                        report.check((try? firstResult.get()) != nil, "run \(run): session 1 failed")
                        _ = first.outcome.take(timeout: 25)
                        var fromJoiner: [(Rendezvous.Phase, [UInt8])] = []
                        var fromAttendant: [(Rendezvous.Phase, [UInt8])] = []
                        let frames = recorder.frames
                        let attendantLinks = Set(frames.filter { $0.type == "allocate" }.map(\.link))
                        for frame in frames where frame.direction == .toRelay && frame.type == "add" {
                            guard let phase = frame.phase, let body = frame.body else { continue }
                            if attendantLinks.contains(frame.link) {
                                fromAttendant.append((phase, body))
                            } else {
                                fromJoiner.append((phase, body))
                            }
                        }
                        report.check(
                            fromAttendant.contains { $0.0 == .grant }, "run \(run): no grant recorded")

                        // (a) The joiner's messages replayed to a new attendant with the same words.
                        let second = try AdversarialRuns.attend(
                            url: relayURL, words: words, seed: 2, grant: AdversarialRuns.grant(run))
                        let replayer = try InviteAttendance.reclaim(
                            relayURL: relayURL, nameplate: second.nameplate)
                        for (phase, body) in fromJoiner { try? replayer.send(phase: phase, body: body) }
                        try? replayer.waitUntilEchoed(timeout: .seconds(10))
                        let outcome = second.outcome.take(timeout: 25)
                        replayer.close(mood: .lonely, timeout: .seconds(2))
                        report.check(
                            (try? outcome?.get()) == .burned(.codeMismatch),
                            "run \(run): replay to the attendant: \(String(describing: outcome))")
                        report.check(
                            second.decided.take(timeout: 0) == nil, "run \(run): attendant was asked")

                        // (b) The attendant's messages replayed to a new joiner by a relay that
                        // hides the real attendant (nobody else is on this nameplate).
                        let empty = try InviteAttendance.allocate(relayURL: relayURL, timeout: .seconds(20))
                        let side = Rendezvous.Side("abcdef0123")
                        let proxy = try AdversarialRelay(
                            upstream: relayURL,
                            adversary: ReplayingAdversary(side: side.value, messages: fromAttendant))
                        defer { proxy.stop() }
                        let (result, verifier) = AdversarialRuns.join(
                            url: proxy.url, nameplate: empty.nameplate, words: words)
                        empty.connection.close(mood: .lonely, timeout: .seconds(2))
                        report.check(verifier == nil, "run \(run): joiner accepted a replayed key")
                        report.check((try? result.get()) == nil, "run \(run): joiner got a replayed grant")
                        report.counts["replays"] = 2
                        report.counts["runs"] = 1
                    } catch {
                        report.violations.append("run \(run): \(error)")
                    }
                    return report
                })
        }
        print("adversarial relay, replays of a recorded session: \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs)
    }

    /// Two sessions with the same words on two nameplates at once: a relay that swaps their
    /// key-agreement messages gets both invites burned; one that swaps their grants gets both
    /// refused by the joiners. Nobody accepts the other session's messages.
    @Test(arguments: [Rendezvous.Phase.pake, .grant])
    func crossSessionSplicesFail(phase: Rendezvous.Phase) async throws {
        let runs = 20
        let report = try await withRelay { relayURL in
            RunReport.merge(
                AdversarialRuns.parallel(runs, width: 4) { run in
                    var report = RunReport()
                    do {
                        var rng = SeededRandom(seed: [UInt8(run), 5])
                        let words = AdversarialRuns.words(&rng)
                        let splicer = SubstitutingAdversary(swapping: [phase])
                        let proxy = try AdversarialRelay(upstream: relayURL, adversary: splicer)
                        defer { proxy.stop() }
                        let sessions = try [10, 11].map {
                            try AdversarialRuns.attend(
                                url: proxy.url, words: words, seed: UInt8($0),
                                grant: AdversarialRuns.grant($0))
                        }
                        let joined = AdversarialRuns.parallel(2, width: 2) { i in
                            AdversarialRuns.join(
                                url: proxy.url, nameplate: sessions[i].nameplate, words: words)
                        }
                        for (i, (result, verifier)) in joined.enumerated() {
                            // A joiner the splice missed (the proxy swaps the first messages of
                            // each kind it sees, and an echo can come first) may finish, but only
                            // with its own session's grant: nobody accepts the other session's.
                            if let grant = try? result.get() {
                                report.check(
                                    grant == AdversarialRuns.grant(10 + i),
                                    "run \(run): joiner \(i) accepted the other session's grant")
                                report.counts["missed by the splice", default: 0] += 1
                                _ = sessions[i].outcome.take(timeout: 25)
                                continue
                            }
                            if phase == .pake {
                                report.check(
                                    verifier == nil, "run \(run): joiner \(i) accepted a spliced key")
                                let outcome = sessions[i].outcome.take(timeout: 25)
                                let burned: Bool = {
                                    if case .success(.burned) = outcome { true } else { false }
                                }()
                                report.check(
                                    burned, "run \(run): attendant \(i) \(String(describing: outcome))")
                            } else {
                                report.check(
                                    {
                                        if case .failure(.failed(.protocolError)) = result {
                                            true
                                        } else {
                                            false
                                        }
                                    }(),
                                    "run \(run): joiner \(i) \(result)")
                                _ = sessions[i].outcome.take(timeout: 25)
                            }
                        }
                        report.check(splicer.substituted >= 2, "run \(run): nothing was spliced")
                        report.counts["runs"] = 1
                        report.counts["spliced messages"] = splicer.substituted
                    } catch {
                        report.violations.append("run \(run): \(error)")
                    }
                    return report
                })
        }
        print("adversarial relay, cross-session splices of '\(phase)': \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs)
        // The splice reached nearly every joiner.
        #expect((report.counts["missed by the splice"] ?? 0) <= runs / 5, "\(report.summary)")
    }

    /// One bit of one message flipped in flight, anywhere in the exchange: the join either
    /// fails or ends with exactly the attendant's grant and request; never an altered one.
    @Test func aSubstitutedMessageNeverYieldsAnAlteredResult() async throws {
        let runs = 40
        let report = try await withRelay { relayURL in
            RunReport.merge(
                AdversarialRuns.parallel(runs, width: 8) { run in
                    var report = RunReport()
                    do {
                        var rng = SeededRandom(seed: [UInt8(run), 6])
                        let words = AdversarialRuns.words(&rng)
                        let pick = rng.bytes(count: 3)
                        // Five mailbox messages go to the relay in a join: pake ×2, confirm ×2, request.
                        let flipper = SubstitutingAdversary(
                            flipAt: Int(pick[0]) % 5, flipBit: Int(pick[1]) << 8 | Int(pick[2]))
                        let proxy = try AdversarialRelay(upstream: relayURL, adversary: flipper)
                        defer { proxy.stop() }
                        let grant = AdversarialRuns.grant(run)
                        let paul = try AdversarialRuns.attend(
                            url: proxy.url, words: words, seed: UInt8(run), grant: grant,
                            deadline: .seconds(2))
                        let (result, _) = AdversarialRuns.join(
                            url: proxy.url, nameplate: paul.nameplate, words: words)
                        if let got = try? result.get() {
                            report.check(got == grant, "run \(run): an altered grant")
                            report.counts["completed (flip in ignored bytes)", default: 0] += 1
                        } else {
                            report.counts["failed safely", default: 0] += 1
                        }
                        _ = paul.outcome.take(timeout: 10)
                        if let (request, _) = paul.decided.take(timeout: 0) {
                            report.check(request == AdversarialRuns.request, "run \(run): an altered request")
                        }
                        report.counts["runs"] = 1
                        report.counts["flipped"] = flipper.substituted
                    } catch {
                        report.violations.append("run \(run): \(error)")
                    }
                    return report
                })
        }
        print("adversarial relay, one flipped bit: \(report.summary)")
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.counts["runs"] == runs && report.counts["flipped"] == runs)
    }
}

/// A relay that answers a joiner's `open` with a recorded attendant's messages.
final class ReplayingAdversary: RelayAdversary, @unchecked Sendable {
    let side: String
    let messages: [(Rendezvous.Phase, [UInt8])]

    init(side: String, messages: [(Rendezvous.Phase, [UInt8])]) {
        self.side = side
        self.messages = messages
    }

    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] {
        guard frame.direction == .toRelay, frame.type == "open" else { return pass(frame) }
        return pass(frame)
            + messages.map {
                .deliver(
                    .toClient, RelayFrame.message(side: side, phase: $0.0, body: $0.1), delayMs: 20,
                    inOrder: true)
            }
    }
}
