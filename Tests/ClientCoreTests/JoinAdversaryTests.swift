import ClientCore
import Foundation
import JoinProtocol
import PAKE
import Testing

/// Property tests of the join sessions (JoinerSession, AttendantSession) against a relay that
/// reads, drops, delays, duplicates, reorders, replays and substitutes every message, and runs
/// its own SPAKE2 with a guessed code against each side. The relay is simulated as a mailbox
/// log per direction; the client's mailbox layer (de-duplication by phase, replay of the whole
/// mailbox after a reconnect) is modelled as RendezvousMachine does it.
@Suite struct JoinAdversaryTests {
    // MARK: Model

    enum Side { case joiner, attendant }

    /// One side's inbox as the mailbox layer delivers it: each phase at most once.
    struct Inbox {
        var seen: Set<String> = []
        mutating func accept(_ phase: Rendezvous.Phase) -> Bool { seen.insert(phase.value).inserted }
    }

    static let binding = JoinBinding(intent: .join, nameplate: Rendezvous.Nameplate("7"))

    static func code(_ rng: inout SeededRandom) -> String {
        let b = rng.bytes(count: 6)
        let w = { (i: Int) in "w\((Int(b[i]) << 3 | Int(b[i + 1] & 7)))" }
        return "\(w(0))-\(w(2))-\(w(4))"
    }

    static func request(_ name: String) -> JoinRequest {
        JoinRequest(displayName: name, deviceLabel: "laptop", publicKeys: JoinerKeys(text: "keys-of-\(name)"))
    }

    /// The grant carries stand-ins for the secrets that must never reach a wrong guesser.
    static func grant(_ seed: UInt64) -> [UInt8] {
        Array(#"{"device_token":"TOKEN-\#(seed)","wraps":["THREADKEY-\#(seed)"]}"#.utf8)
    }

    /// The result of one run.
    struct Result {
        var joinerGrant: [UInt8]?
        var joinerFailure: JoinFailure?
        var joinerRefusal: String?
        var joinerVerifier: [UInt8]?
        var attendantVerifier: [UInt8]?
        var attendantBurned: JoinFailure?
        var attendantRequests: [JoinRequest] = []
    }

    /// An honest joiner and attendant through a relay that only schedules: per step it delivers
    /// the next message of one direction, re-delivers an old one (duplicate), replays a whole
    /// mailbox (reconnect), or waits (delay). Each direction stays in the order it was stored, as
    /// in a mailbox; a relay that reorders within a direction is `reorderWithinADirection…`.
    static func honestRun(seed: UInt64, joinerWords: String? = nil) -> Result {
        var rng = SeededRandom(seed: seed)
        let words = code(&rng)
        var random = SeededRandom(seed: seed &+ 1)
        var joiner = JoinerSession(
            words: joinerWords ?? words, binding: binding, request: request("Sam"), using: &random)
        var attendant = AttendantSession(
            words: words, binding: binding, inviterName: "Paul", announceWaiting: true, using: &random)
        var logs: [Side: [(Rendezvous.Phase, [UInt8])]] = [.joiner: [], .attendant: []]
        var cursors: [Side: Int] = [.joiner: 0, .attendant: 0]
        var inboxes: [Side: Inbox] = [.joiner: Inbox(), .attendant: Inbox()]
        var result = Result()
        for case .send(let p, let b) in attendant.start { logs[.attendant]!.append((p, b)) }
        for case .send(let p, let b) in joiner.start { logs[.joiner]!.append((p, b)) }

        func toJoiner(_ phase: Rendezvous.Phase, _ body: [UInt8]) {
            guard inboxes[.joiner]!.accept(phase) else { return }
            for output in joiner.handle(phase: phase, body: body, using: &random) {
                switch output {
                case .send(let p, let b): logs[.joiner]!.append((p, b))
                case .codeAccepted(let v): result.joinerVerifier = v
                case .status, .codeSent, .codeProven: break
                case .granted(let g): result.joinerGrant = g
                case .refused(let r, _): result.joinerRefusal = r
                case .failed(let f): result.joinerFailure = f
                }
            }
        }
        func toAttendant(_ phase: Rendezvous.Phase, _ body: [UInt8]) {
            guard inboxes[.attendant]!.accept(phase) else { return }
            var outputs = attendant.handle(phase: phase, body: body, using: &random)
            while !outputs.isEmpty {
                let output = outputs.removeFirst()
                switch output {
                case .send(let p, let b): logs[.attendant]!.append((p, b))
                case .burned(let f): result.attendantBurned = f
                case .requestReceived(let r, let v):
                    result.attendantRequests.append(r)
                    result.attendantVerifier = v
                    outputs += attendant.approve(grant: grant(seed), using: &random)
                }
            }
        }
        var steps = 0
        while steps < 400 {
            steps += 1
            let done = (joiner.isFinished || result.joinerFailure != nil) && attendant.isFinished
            let pendingJ = cursors[.joiner]! < logs[.attendant]!.count
            let pendingA = cursors[.attendant]! < logs[.joiner]!.count
            if done && !pendingJ && !pendingA { break }
            switch rng.bytes(count: 1)[0] % 8 {
            case 0, 1, 2:
                if pendingJ {
                    let (p, b) = logs[.attendant]![cursors[.joiner]!]
                    cursors[.joiner]! += 1
                    toJoiner(p, b)
                }
            case 3, 4, 5:
                if pendingA {
                    let (p, b) = logs[.joiner]![cursors[.attendant]!]
                    cursors[.attendant]! += 1
                    toAttendant(p, b)
                }
            case 6:
                // Duplicate an already delivered message to a random side.
                let side: Side = rng.bytes(count: 1)[0] & 1 == 0 ? .joiner : .attendant
                let log = logs[side == .joiner ? .attendant : .joiner]!
                let upTo = cursors[side]!
                if upTo > 0 {
                    let (p, b) = log[Int(rng.bytes(count: 1)[0]) % upTo]
                    if side == .joiner { toJoiner(p, b) } else { toAttendant(p, b) }
                }
            default:
                // Connection lost: after the reconnect the relay replays the whole mailbox.
                let side: Side = rng.bytes(count: 1)[0] & 1 == 0 ? .joiner : .attendant
                cursors[side] = 0
            }
        }
        return result
    }

    // MARK: Honest runs

    @Test(arguments: 0..<120)
    func honestRunsUnderDelayDuplicateAndReconnectAlwaysComplete(seed: UInt64) {
        let r = Self.honestRun(seed: seed)
        #expect(r.joinerGrant == Self.grant(seed), "seed \(seed): \(String(describing: r.joinerFailure))")
        #expect(r.attendantBurned == nil)
        #expect(r.attendantRequests == [Self.request("Sam")])
        #expect(r.joinerVerifier != nil && r.joinerVerifier == r.attendantVerifier)
    }

    @Test(arguments: 0..<60)
    func aWrongCodeUnderAnyScheduleBurnsAndLeaksNothing(seed: UInt64) {
        var rng = SeededRandom(seed: seed ^ 0xAAAA)
        let wrong = Self.code(&rng)
        let r = Self.honestRun(seed: seed, joinerWords: wrong)
        #expect(r.joinerGrant == nil)
        #expect(r.attendantRequests.isEmpty)
        #expect(r.attendantBurned == .codeMismatch)
        #expect(r.joinerFailure == .codeMismatch)
        #expect(r.joinerVerifier == nil)
    }

    // MARK: A man in the middle with its own SPAKE2

    /// Eve sits in the relay: to the attendant she is a joiner, to Sam an attendant, each with
    /// her guess of the code. Returns what each honest side ended with and what Eve got.
    static func mitmRun(seed: UInt64, eveKnowsTheCode: Bool) -> (sam: Result, paul: Result, eveGot: [UInt8]?)
    {
        var rng = SeededRandom(seed: seed)
        let words = code(&rng)
        var guess = code(&rng)
        if eveKnowsTheCode { guess = words }
        var random = SeededRandom(seed: seed &+ 7)
        var sam = JoinerSession(words: words, binding: binding, request: request("Sam"), using: &random)
        var paul = AttendantSession(
            words: words, binding: binding, inviterName: "Paul", announceWaiting: true, using: &random)
        var eveAsJoiner = JoinerSession(
            words: guess, binding: binding, request: request("Eve"), using: &random)
        var eveAsAttendant = AttendantSession(
            words: guess, binding: binding, inviterName: "Paul", announceWaiting: true, using: &random)
        var samResult = Result()
        var paulResult = Result()
        var eveGot: [UInt8]?
        var eveRequest: JoinRequest?

        // Queues: Paul <-> Eve(joiner), Eve(attendant) <-> Sam.
        var toPaul: [(Rendezvous.Phase, [UInt8])] = []
        var toEveJ: [(Rendezvous.Phase, [UInt8])] = []
        var toEveA: [(Rendezvous.Phase, [UInt8])] = []
        var toSam: [(Rendezvous.Phase, [UInt8])] = []
        for case .send(let p, let b) in paul.start { toEveJ.append((p, b)) }
        for case .send(let p, let b) in eveAsJoiner.start { toPaul.append((p, b)) }
        for case .send(let p, let b) in eveAsAttendant.start { toSam.append((p, b)) }
        for case .send(let p, let b) in sam.start { toEveA.append((p, b)) }
        var steps = 0
        while steps < 200, !(toPaul.isEmpty && toEveJ.isEmpty && toEveA.isEmpty && toSam.isEmpty) {
            steps += 1
            if !toPaul.isEmpty {
                let (p, b) = toPaul.removeFirst()
                var outputs = paul.handle(phase: p, body: b, using: &random)
                while !outputs.isEmpty {
                    switch outputs.removeFirst() {
                    case .send(let p, let b): toEveJ.append((p, b))
                    case .burned(let f): paulResult.attendantBurned = f
                    case .requestReceived(let r, let v):
                        paulResult.attendantRequests.append(r)
                        paulResult.attendantVerifier = v
                        outputs += paul.approve(grant: grant(seed), using: &random)
                    }
                }
            }
            if !toEveJ.isEmpty {
                let (p, b) = toEveJ.removeFirst()
                for output in eveAsJoiner.handle(phase: p, body: b, using: &random) {
                    switch output {
                    case .send(let p, let b): toPaul.append((p, b))
                    case .granted(let g): eveGot = g
                    default: break
                    }
                }
            }
            if !toEveA.isEmpty {
                let (p, b) = toEveA.removeFirst()
                var outputs = eveAsAttendant.handle(phase: p, body: b, using: &random)
                while !outputs.isEmpty {
                    switch outputs.removeFirst() {
                    case .send(let p, let b): toSam.append((p, b))
                    case .requestReceived(let r, _):
                        eveRequest = r
                        // Eve passes on whatever she got from Paul (nothing when she guessed wrong).
                        outputs += eveAsAttendant.approve(grant: eveGot ?? Array("{}".utf8), using: &random)
                    case .burned:
                        // Eve's own confirmation check failed; she still tries a forged confirm.
                        toSam.append((.confirm, [1] + random.bytes(count: 32)))
                    }
                }
            }
            if !toSam.isEmpty {
                let (p, b) = toSam.removeFirst()
                for output in sam.handle(phase: p, body: b, using: &random) {
                    switch output {
                    case .send(let p, let b): toEveA.append((p, b))
                    case .codeAccepted(let v): samResult.joinerVerifier = v
                    case .granted(let g): samResult.joinerGrant = g
                    case .failed(let f): samResult.joinerFailure = f
                    case .refused(let r, _): samResult.joinerRefusal = r
                    case .status, .codeSent, .codeProven: break
                    }
                }
            }
        }
        _ = eveRequest
        return (samResult, paulResult, eveGot)
    }

    @Test(arguments: 0..<100)
    func aWrongGuessNeverYieldsAKeyOrTheGrantAndBurnsTheInvite(seed: UInt64) {
        let (sam, paul, eveGot) = Self.mitmRun(seed: seed, eveKnowsTheCode: false)
        // Paul: burned, never saw a request, never sent the grant.
        #expect(paul.attendantBurned == .codeMismatch)
        #expect(paul.attendantRequests.isEmpty)
        #expect(eveGot == nil)
        // Sam: never accepted a key (no verifier), failed with a code mismatch.
        #expect(sam.joinerVerifier == nil)
        #expect(sam.joinerGrant == nil)
        #expect(sam.joinerFailure == .codeMismatch)
    }

    @Test(arguments: 0..<40)
    func aRightGuessIsDetectedByTheVerificationWords(seed: UInt64) {
        let (sam, paul, eveGot) = Self.mitmRun(seed: seed, eveKnowsTheCode: true)
        // Eve with the right code completes both exchanges: only the words tell.
        #expect(eveGot == Self.grant(seed))
        #expect(paul.attendantRequests.map(\.displayName) == ["Eve"])
        let samWords = VerificationWords.words(for: sam.joinerVerifier ?? [])
        let paulWords = VerificationWords.words(for: paul.attendantVerifier ?? [])
        #expect(samWords.count == 3 && paulWords.count == 3)
        #expect(samWords != paulWords, "seed \(seed)")
    }

    // MARK: Replays, splices, substitutions

    /// A full honest transcript (both directions), for replays into later sessions.
    static func transcript(seed: UInt64, words: String) -> (
        toAttendant: [(Rendezvous.Phase, [UInt8])], toJoiner: [(Rendezvous.Phase, [UInt8])]
    ) {
        var random = SeededRandom(seed: seed)
        var joiner = JoinerSession(words: words, binding: binding, request: request("Sam"), using: &random)
        var attendant = AttendantSession(
            words: words, binding: binding, inviterName: "Paul", announceWaiting: true, using: &random)
        var toA: [(Rendezvous.Phase, [UInt8])] = []
        var toJ: [(Rendezvous.Phase, [UInt8])] = []
        for case .send(let p, let b) in attendant.start { toJ.append((p, b)) }
        for case .send(let p, let b) in joiner.start { toA.append((p, b)) }
        var iA = 0
        var iJ = 0
        while iA < toA.count || iJ < toJ.count {
            if iJ < toJ.count {
                let (p, b) = toJ[iJ]
                iJ += 1
                for case .send(let p, let b) in joiner.handle(phase: p, body: b, using: &random) {
                    toA.append((p, b))
                }
            }
            if iA < toA.count {
                let (p, b) = toA[iA]
                iA += 1
                var outs = attendant.handle(phase: p, body: b, using: &random)
                while !outs.isEmpty {
                    switch outs.removeFirst() {
                    case .send(let p, let b): toJ.append((p, b))
                    case .requestReceived: outs += attendant.approve(grant: grant(seed), using: &random)
                    case .burned: break
                    }
                }
            }
        }
        return (toA, toJ)
    }

    @Test(arguments: 0..<60)
    func replaysAndCrossSessionSplicesFail(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let words = Self.code(&rng)
        // Session 1 completed earlier with the same code (a multi-use invite) and was recorded.
        let old = Self.transcript(seed: seed &+ 100, words: words)
        #expect(old.toJoiner.contains { $0.0 == .grant })

        // (a) The recorded joiner messages replayed to a new attendant: burned, no request.
        var random = SeededRandom(seed: seed &+ 200)
        var attendant = AttendantSession(
            words: words, binding: Self.binding, inviterName: "Paul", announceWaiting: true, using: &random)
        var burned = false
        var requested = false
        for (p, b) in old.toAttendant {
            for output in attendant.handle(phase: p, body: b, using: &random) {
                if case .burned = output { burned = true }
                if case .requestReceived = output { requested = true }
            }
        }
        #expect(burned && !requested)

        // (b) The recorded attendant messages (grant included) replayed to a new joiner.
        var joiner = JoinerSession(
            words: words, binding: Self.binding, request: Self.request("Sam"), using: &random)
        var accepted = false
        var granted = false
        var failed = false
        for (p, b) in old.toJoiner {
            for output in joiner.handle(phase: p, body: b, using: &random) {
                if case .codeAccepted = output { accepted = true }
                if case .granted = output { granted = true }
                if case .failed = output { failed = true }
            }
        }
        #expect(!accepted && !granted && failed)

        // (c) A splice: a fresh honest session whose grant is swapped for session 1's grant, and
        // whose status is relabelled as a grant. Neither opens.
        let fresh = Self.transcript(seed: seed &+ 300, words: words)
        for substitute in [
            old.toJoiner.first { $0.0 == .grant }!.1,
            fresh.toJoiner.first { $0.0 == .status(0) }!.1,
        ] {
            var random = SeededRandom(seed: seed &+ 300)
            var joiner = JoinerSession(
                words: words, binding: Self.binding, request: Self.request("Sam"), using: &random)
            _ = AttendantSession(
                words: words, binding: Self.binding, inviterName: "Paul", announceWaiting: true,
                using: &random)
            var outcome: [JoinerSession.Output] = []
            for (p, b) in fresh.toJoiner {
                outcome += joiner.handle(phase: p, body: p == .grant ? substitute : b, using: &random)
            }
            #expect(!outcome.contains { if case .granted = $0 { return true } else { return false } })
            #expect(outcome.contains { if case .failed = $0 { return true } else { return false } })
        }
    }

    @Test(arguments: 0..<80)
    func aSubstitutedMessageNeverYieldsAnAlteredGrant(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let words = Self.code(&rng)
        let honest = Self.transcript(seed: seed &+ 1, words: words)
        // Replay the same deterministic session with one byte of one message changed.
        let direction = rng.bytes(count: 1)[0] & 1
        let messages = direction == 0 ? honest.toJoiner : honest.toAttendant
        let index = Int(rng.bytes(count: 1)[0]) % messages.count
        let body = messages[index].1
        let position = Int(rng.bytes(count: 2).withUnsafeBytes { $0.load(as: UInt16.self) }) % body.count
        var tampered = body
        tampered[position] ^= 1 << (rng.bytes(count: 1)[0] % 8)

        var random = SeededRandom(seed: seed &+ 1)
        var joiner = JoinerSession(
            words: words, binding: Self.binding, request: Self.request("Sam"), using: &random)
        var attendant = AttendantSession(
            words: words, binding: Self.binding, inviterName: "Paul", announceWaiting: true, using: &random)
        var toA: [(Rendezvous.Phase, [UInt8])] = []
        var toJ: [(Rendezvous.Phase, [UInt8])] = []
        var sentJ = 0
        var sentA = 0
        func tamper(_ list: inout [(Rendezvous.Phase, [UInt8])], _ sent: inout Int, _ dir: UInt8) {
            if dir == direction && sent == index { list[list.count - 1].1 = tampered }
            sent += 1
        }
        for case .send(let p, let b) in attendant.start {
            toJ.append((p, b))
            tamper(&toJ, &sentA, 0)
        }
        for case .send(let p, let b) in joiner.start {
            toA.append((p, b))
            tamper(&toA, &sentJ, 1)
        }
        var grantReceived: [UInt8]?
        var burned = false
        var iA = 0
        var iJ = 0
        while iA < toA.count || iJ < toJ.count {
            if iJ < toJ.count {
                let (p, b) = toJ[iJ]
                iJ += 1
                for output in joiner.handle(phase: p, body: b, using: &random) {
                    if case .send(let p, let b) = output {
                        toA.append((p, b))
                        tamper(&toA, &sentJ, 1)
                    }
                    if case .granted(let g) = output { grantReceived = g }
                }
            }
            if iA < toA.count {
                let (p, b) = toA[iA]
                iA += 1
                var outs = attendant.handle(phase: p, body: b, using: &random)
                while !outs.isEmpty {
                    switch outs.removeFirst() {
                    case .send(let p, let b):
                        toJ.append((p, b))
                        tamper(&toJ, &sentA, 0)
                    case .requestReceived: outs += attendant.approve(grant: Self.grant(seed), using: &random)
                    case .burned: burned = true
                    }
                }
            }
        }
        // Either the tampering was caught (no grant) or the grant is exactly Paul's.
        if let grantReceived {
            #expect(grantReceived == Self.grant(seed))
            // Only a flip in the unauthenticated part of a message that is ignored may pass.
            #expect(!burned)
        }
    }

    /// A relay that delivers each direction's messages newest first (the confirmation before
    /// the key-agreement message, the grant before the status): the sessions hold early
    /// messages for their turn, so the join completes as in order.
    @Test func reorderWithinADirectionIsHarmless() {
        for seed in UInt64(0)..<30 {
            var rng = SeededRandom(seed: seed)
            let words = Self.code(&rng)
            var random = SeededRandom(seed: seed &+ 5)
            var joiner = JoinerSession(
                words: words, binding: Self.binding, request: Self.request("Sam"), using: &random)
            var attendant = AttendantSession(
                words: words, binding: Self.binding, inviterName: "Paul", announceWaiting: true,
                using: &random)
            var toA: [(Rendezvous.Phase, [UInt8])] = []
            var toJ: [(Rendezvous.Phase, [UInt8])] = []
            for case .send(let p, let b) in joiner.start { toA.append((p, b)) }
            for case .send(let p, let b) in attendant.start { toJ.append((p, b)) }
            var granted: [UInt8]?
            var burned = false
            var held = 0
            var rounds = 0
            while !(toA.isEmpty && toJ.isEmpty) && rounds < 20 {
                rounds += 1
                let batchJ = toJ.reversed()
                toJ = []
                for (p, b) in batchJ {
                    for output in joiner.handle(phase: p, body: b, using: &random) {
                        if case .send(let p, let b) = output { toA.append((p, b)) }
                        if case .granted(let g) = output { granted = g }
                    }
                }
                let batchA = toA.reversed()
                held += batchA.count > 1 ? 1 : 0
                toA = []
                for (p, b) in batchA {
                    var outs = attendant.handle(phase: p, body: b, using: &random)
                    while !outs.isEmpty {
                        switch outs.removeFirst() {
                        case .send(let p, let b): toJ.append((p, b))
                        case .requestReceived:
                            outs += attendant.approve(grant: Self.grant(seed), using: &random)
                        case .burned: burned = true
                        }
                    }
                }
            }
            #expect(!burned && granted == Self.grant(seed), "seed \(seed)")
            // The joiner's pake and confirm did arrive reversed.
            #expect(held > 0)
        }
    }

    /// An `ended` notice instead of a key-agreement message ends the join with its reason, and so
    /// does one after it until the confirmation verified (a forged one only denies service, which
    /// the relay can do anyway).
    @Test func anEndedNoticeBeforeTheKeyAgreementEndsTheJoin() {
        for end in InviteEnd.allCases {
            var random = SeededRandom(seed: 3)
            var joiner = JoinerSession(
                words: "w1-w2", binding: Self.binding, request: Self.request("Sam"), using: &random)
            #expect(
                joiner.handle(phase: .ended, body: end.notice, using: &random) == [.failed(.inviteEnded(end))]
            )
            #expect(JoinFailure.inviteEnded(end).code == end.code)
        }
        var random = SeededRandom(seed: 4)
        var joiner = JoinerSession(
            words: "w1-w2", binding: Self.binding, request: Self.request("Sam"), using: &random)
        let attendant = AttendantSession(
            words: "w1-w2", binding: Self.binding, inviterName: nil, announceWaiting: false, using: &random)
        guard case .send(_, let pake) = attendant.start.first else { return }
        // The confirmation, announced first so the caller records the attempt before it goes out.
        let answer = joiner.handle(phase: .pake, body: pake, using: &random)
        #expect(answer.count == 2 && answer.first == .codeSent)
        #expect(answer.last.map { if case .send(.confirm, _) = $0 { true } else { false } } == true)
        // Until the confirmation verified the notice still ends the join: an attendant that
        // stopped attending leaves it in a mailbox it spoke in already (no guess is offered).
        #expect(
            joiner.handle(phase: .ended, body: InviteEnd.left.notice, using: &random) == [
                .failed(.inviteEnded(.left))
            ])
        #expect(
            InviteEnd(notice: [9, 1, 2]) == .ended
                && InviteEnd(notice: [1] + Array("used_up".utf8)) == .usedUp)
    }

    /// The same stored seed gives the same first message (so `eleven approve` resumes the
    /// invite after a restart); another seed or use gives another.
    @Test func derivedRandomnessResumesTheSameKeyAgreement() {
        let seed = SecretBytes(Array(repeating: 9, count: 32))
        func first(_ seed: SecretBytes, use: Int) -> [UInt8] {
            var derived = DerivedRandom(seed: seed, use: use)
            let session = AttendantSession(
                words: "w1-w2", binding: Self.binding, inviterName: nil, announceWaiting: false,
                using: &derived)
            guard case .send(_, let body) = session.start.first else { return [] }
            return body
        }
        #expect(first(seed, use: 0) == first(seed, use: 0))
        #expect(first(seed, use: 0) != first(seed, use: 1))
        #expect(first(seed, use: 0) != first(SecretBytes(Array(repeating: 8, count: 32)), use: 0))
    }
}
