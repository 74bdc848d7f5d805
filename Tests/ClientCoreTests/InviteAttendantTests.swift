import ClientCore
import Foundation
import JoinProtocol
import Mailbox
import SpaceModel
import TestSupport
import Testing

/// An invite's whole life as a pure machine (``InviteAttendant``): events in, actions out, no
/// sockets, in the style of the relay's `RulesTests`. Uses, the cap on failed attempts, burns,
/// expiry, restarts.
@Suite struct InviteAttendantTests {
    static let np = Rendezvous.Nameplate("42")
    static let keys = JoinerKeys(text: "ed25519:sam x25519:sam")

    static func connection(_ n: Int = 0) -> RendezvousMachine {
        RendezvousMachine(
            appID: JoinIntent.join.appID, side: Rendezvous.Side(String(format: "%010d", n)), start: .claim(np)
        )
    }

    /// A fresh invite allocated on nameplate 42 and attending use 0.
    static func attending(uses: Int = 1, maxFailures: Int = 1, expiresAt: Int64 = 1000) -> InviteAttendant {
        var a = InviteAttendant(policy: .init(uses: uses, maxFailures: maxFailures, expiresAt: expiresAt))
        #expect(a.resume(now: 0) == [.allocate])
        let actions = a.handle(.allocated(np, connection: connection()), now: 1)
        #expect(actions == [attend(0, until: expiresAt)])
        return a
    }

    static func attend(_ use: Int, _ n: Int = 0, keys: JoinerKeys? = nil, until: Int64 = 1000)
        -> InviteAttendant.Action
    {
        .attend(nameplate: np, use: use, connection: connection(n), until: until, admittingKeys: keys)
    }

    /// One use from the joiner's first message to its end. A joiner who never proves the code
    /// (a wrong code, one who stops) keeps the failure counted when they spoke.
    static func use(
        _ a: inout InviteAttendant, _ outcome: InviteAttendant.UseOutcome, admitting: Bool = true,
        now: Int64 = 5
    ) -> [InviteAttendant.Action] {
        let failures = a.failures
        _ = a.handle(.joinerSpoke(connection: connection(a.use ?? 0)), now: now)
        #expect(a.failures == failures + 1, "counted before the joiner's message is looked at")
        switch outcome {
        case .wrongCode, .abandoned: break
        default:
            #expect(a.handle(.codeProven, now: now) == [])
            #expect(a.failures == failures, "given back once the code is proven")
        }
        if admitting { #expect(a.handle(.admitting(joinerKeys: keys), now: now) == []) }
        return a.handle(.useEnded(outcome), now: now)
    }

    @Test func aSingleUseInviteEndsWhenItsJoinerIsLetIn() {
        var a = Self.attending()
        #expect(a.usesLeft == 1)
        let actions = Self.use(&a, .admitted)
        #expect(
            actions == [
                .report(.joined), .leaveNotice(nameplate: Self.np, .usedUp), .report(.ended(.usedUp)),
            ])
        #expect(
            a.ending == .usedUp && a.taken == 1 && a.usesLeft == 0
                && a.state == .ended(.usedUp, nameplate: Self.np))
        // Nothing moves an ended invite.
        #expect(a.handle(.idle, now: 6) == [])
        #expect(a.handle(.useEnded(.admitted), now: 6) == [])
        #expect(a.resume(now: 6) == [])
    }

    @Test func eachUseGetsAFreshMailboxUntilTheUsesRunOut() {
        var a = Self.attending(uses: 3, maxFailures: 2)
        #expect(Self.use(&a, .admitted) == [.report(.joined), .prepare(nameplate: Self.np, use: 1)])
        #expect(a.handle(.prepared(connection: Self.connection(1)), now: 6) == [Self.attend(1, 1)])
        // A person's no spends the use; the attendant's own trouble does not.
        #expect(
            Self.use(&a, .declined, admitting: false) == [
                .report(.declined), .prepare(nameplate: Self.np, use: 2),
            ])
        _ = a.handle(.prepared(connection: Self.connection(2)), now: 7)
        #expect(Self.use(&a, .turnedAway) == [.report(.turnedAway), .prepare(nameplate: Self.np, use: 3)])
        #expect(a.taken == 2 && a.usesLeft == 1)
        _ = a.handle(.prepared(connection: Self.connection(3)), now: 8)
        // A joiner who spoke and stopped before proving the code: a failure, not a use.
        #expect(
            Self.use(&a, .abandoned, admitting: false) == [
                .report(
                    .wrongCode(.protocolError("the joiner stopped before proving the code"), failuresLeft: 1)),
                .prepare(nameplate: Self.np, use: 4),
            ])
        #expect(a.failures == 1 && a.taken == 2)
        _ = a.handle(.prepared(connection: Self.connection(4)), now: 9)
        let last = Self.use(&a, .admitted)
        #expect(last.last == .report(.ended(.usedUp)) && a.ending == .usedUp && a.taken == 3)
    }

    @Test func theFirstWrongCodeBurnsByDefault() {
        var a = Self.attending(uses: 3)
        let actions = Self.use(&a, .wrongCode(.codeMismatch), admitting: false)
        #expect(
            actions == [
                .report(.wrongCode(.codeMismatch, failuresLeft: 0)),
                .leaveNotice(nameplate: Self.np, .burned),
                .report(.ended(.burned)),
            ])
        #expect(a.ending == .burned && a.failures == 1 && a.usesLeft == 3)
    }

    @Test func failuresAreCappedInTotalAcrossUses() {
        var a = Self.attending(uses: 3, maxFailures: 3)
        #expect(
            Self.use(&a, .wrongCode(.codeMismatch), admitting: false) == [
                .report(.wrongCode(.codeMismatch, failuresLeft: 2)), .prepare(nameplate: Self.np, use: 1),
            ])
        _ = a.handle(.prepared(connection: Self.connection(1)), now: 6)
        _ = Self.use(&a, .admitted)
        _ = a.handle(.prepared(connection: Self.connection(2)), now: 7)
        _ = Self.use(&a, .wrongCode(.protocolError("x")), admitting: false)
        #expect(a.failuresLeft == 1 && a.usesLeft == 2 && a.isOpen)
        // The third failure, whatever happened between, burns it.
        _ = a.handle(.prepared(connection: Self.connection(3)), now: 8)
        #expect(Self.use(&a, .wrongCode(.codeMismatch), admitting: false).last == .report(.ended(.burned)))
        #expect(a.ending == .burned)
    }

    /// A joiner's attempt on this invite that a relay posing as the attendant answered, reported
    /// later by the joiner (issue #20 item 5): counted once, never for a joiner this invite heard
    /// itself, and the one that reaches the cap burns the invite.
    @Test func aReportedAttemptTheAttendantNeverSawCountsOnce() {
        var a = Self.attending(uses: 2, maxFailures: 2)
        // Sam speaks in the real mailbox (side "5a4d…"), proves the code and is let in.
        var heard = Self.connection()
        _ = heard.received(.message(side: Rendezvous.Side("5a4d000000"), phase: .pake, body: [1]))
        _ = a.handle(.joinerSpoke(connection: heard), now: 5)
        _ = a.handle(.codeProven, now: 5)
        #expect(a.hasSeen(Rendezvous.Side("5a4d000000")))
        // Sam's own attempt, reported: heard already, so nothing changes.
        #expect(a.handle(.attemptReported(side: Rendezvous.Side("5a4d000000")), now: 6) == [])
        #expect(a.failures == 0)
        // An attempt this invite never heard: one failure, once however often it is reported.
        let unseen = Rendezvous.Side("eeee000000")
        #expect(
            a.handle(.attemptReported(side: unseen), now: 6) == [.report(.attemptReported(failuresLeft: 1))])
        #expect(a.handle(.attemptReported(side: unseen), now: 7) == [])
        #expect(a.failures == 1 && a.isOpen)
        // The next unseen one reaches the cap: burned, the mailbox closed, the notice left.
        let actions = a.handle(.attemptReported(side: Rendezvous.Side("ffff000000")), now: 8)
        #expect(actions.first == .report(.attemptReported(failuresLeft: 0)))
        #expect(actions.contains(.leaveNotice(nameplate: Self.np, .burned)))
        #expect(actions.last == .report(.ended(.burned)))
        #expect(a.ending == .burned)
        // Whether a report is about this invite: its relay, nameplate and lifetime.
        let report = { (relay: String, nameplate: String, at: Int64) in
            JoinAttemptReport(
                relay: relay, nameplate: Rendezvous.Nameplate(nameplate), side: unseen, at: at,
                outcome: "code_mismatch")
        }
        #expect(a.isAbout(report("ws://r", "42", 500), relay: "ws://r", createdAt: 400))
        #expect(!a.isAbout(report("ws://other", "42", 500), relay: "ws://r", createdAt: 400))
        #expect(!a.isAbout(report("ws://r", "43", 500), relay: "ws://r", createdAt: 400))
        #expect(!a.isAbout(report("ws://r", "42", 10), relay: "ws://r", createdAt: 400), "before it existed")
        #expect(!a.isAbout(report("ws://r", "42", 2000), relay: "ws://r", createdAt: 400), "after it expired")
    }

    @Test func aUseIsTakenBeforeTheJoinerIsAddedAndGivenBackOnlyWhenSafe() {
        var a = Self.attending(uses: 2)
        _ = a.handle(.joinerSpoke(connection: Self.connection(7)), now: 2)
        #expect(a.handle(.admitting(joinerKeys: Self.keys), now: 3) == [])
        #expect(a.taken == 1)
        // Killed here: the saved machine resumes answering only that joiner, with the use taken.
        var restarted = Self.roundTrip(a)
        #expect(restarted.resume(now: 4) == [Self.attend(0, 7, keys: Self.keys)])
        #expect(restarted.taken == 1)
        // The joiner is seen not to be a member after a failed addition: the use goes back.
        #expect(a.handle(.admissionFailed, now: 5) == [])
        #expect(
            a.taken == 0
                && a.state
                    == .attending(nameplate: Self.np, use: 0, connection: Self.connection(7), attempt: false)
        )
        // When in doubt, it stays taken.
        _ = a.handle(.admitting(joinerKeys: Self.keys), now: 6)
        #expect(
            a.handle(.useEnded(.unconfirmed), now: 7) == [
                .report(.turnedAway), .prepare(nameplate: Self.np, use: 1),
            ])
        #expect(a.taken == 1)
    }

    /// One guess per code across restarts: the attempt is counted (and saved) when the joiner
    /// speaks, so an attendant killed between a wrong code and recording it finds it counted;
    /// the relay replaying the same joiner after the restart does not count it twice.
    @Test func aRestartNeitherForgetsNorDoublesAnAttempt() {
        var a = Self.attending(uses: 1, maxFailures: 2)
        _ = a.handle(.joinerSpoke(connection: Self.connection(5)), now: 2)
        #expect(a.failures == 1)
        var restarted = Self.roundTrip(a)
        #expect(restarted.resume(now: 3) == [Self.attend(0, 5)])
        _ = restarted.handle(.joinerSpoke(connection: Self.connection(5)), now: 4)
        #expect(restarted.failures == 1)
        let actions = restarted.handle(.useEnded(.wrongCode(.codeMismatch)), now: 5)
        #expect(actions.first == .report(.wrongCode(.codeMismatch, failuresLeft: 1)))
        #expect(restarted.failures == 1 && restarted.isOpen)
        // Killed before anything was decided, then never heard from again: still counted.
        var silent = Self.attending(uses: 1, maxFailures: 1)
        _ = silent.handle(.joinerSpoke(connection: Self.connection(6)), now: 2)
        var back = Self.roundTrip(silent)
        #expect(back.handle(.useEnded(.abandoned), now: 9).last == .report(.ended(.burned)))
    }

    @Test func timeRunsOut() {
        var a = Self.attending(uses: 2, expiresAt: 100)
        // Nobody came before the deadline: attend again while there is time.
        #expect(a.handle(.idle, now: 50) == [Self.attend(0, until: 100)])
        // At the expiry second the mailbox is closed, the notice left, the inviter told.
        #expect(
            a.handle(.idle, now: 100) == [
                .closeMailbox(Self.connection()), .leaveNotice(nameplate: Self.np, .expired),
                .report(.ended(.expired)),
            ])
        #expect(a.ending == .expired)
        // A use that ends after the expiry ends the invite too.
        var late = Self.attending(uses: 2, expiresAt: 100)
        let actions = Self.use(&late, .admitted, now: 150)
        #expect(actions.first == .report(.joined) && actions.last == .report(.ended(.expired)))
        // So does resuming an invite whose time is up before anything was allocated.
        var never = InviteAttendant(policy: .init(uses: 1, expiresAt: 10))
        #expect(never.resume(now: 10) == [.report(.ended(.expired))])
    }

    @Test func refusalsThatEndTheInviteAndCancelling() {
        var revoked = Self.attending(uses: 3)
        // The joiner was told and the mailbox closed: only a cancelled invite leaves no notice.
        #expect(Self.use(&revoked, .invalidated(.cancelled)) == [.report(.ended(.cancelled))])
        #expect(revoked.ending == .cancelled && revoked.taken == 0)
        var expired = Self.attending(uses: 3)
        #expect(
            Self.use(&expired, .invalidated(.expired), admitting: false) == [
                .leaveNotice(nameplate: Self.np, .expired), .report(.ended(.expired)),
            ])
        var cancelled = Self.attending()
        #expect(
            cancelled.handle(.cancel, now: 3) == [
                .closeMailbox(Self.connection()), .report(.ended(.cancelled)),
            ])
        var preparing = Self.attending(uses: 2)
        _ = Self.use(&preparing, .admitted)
        #expect(preparing.handle(.cancel, now: 3) == [.report(.ended(.cancelled))])
    }

    @Test func eventsThatDoNotBelongAreIgnored() {
        var a = InviteAttendant(policy: .init(uses: 2, expiresAt: 100))
        // A use's end before there is a use, an admission before anyone spoke twice: ignored,
        // the step asked again.
        #expect(a.handle(.useEnded(.admitted), now: 1) == [.allocate])
        #expect(a.handle(.prepared(connection: Self.connection()), now: 1) == [.allocate])
        #expect(a.taken == 0 && a.state == .allocating)
        _ = a.handle(.allocated(Self.np, connection: Self.connection()), now: 2)
        #expect(a.handle(.admissionFailed, now: 3) == [Self.attend(0, until: 100)])
        #expect(a.taken == 0)
        _ = a.handle(.admitting(joinerKeys: Self.keys), now: 3)
        #expect(
            a.handle(.admitting(joinerKeys: JoinerKeys(text: "other")), now: 3) == [
                Self.attend(0, keys: Self.keys, until: 100)
            ]
        )
        #expect(a.taken == 1)
    }

    @Test func nonsenseCapsAreRaisedToOne() {
        let policy = InviteAttendant.Policy(uses: 0, maxFailures: -4, expiresAt: 100)
        #expect(policy.uses == 1 && policy.maxFailures == 1)
    }

    /// Random lives: whatever happens, the counts stay within the policy, an invite ends exactly
    /// when a cap is reached or time is up, and a restart (the saved form) changes nothing.
    @Test func randomLivesKeepTheRules() {
        var rng = SplitMix64(seed: 20_261_202)
        for run in 0..<500 {
            let uses = Int.random(in: 1...4, using: &rng)
            let maxFailures = Int.random(in: 1...3, using: &rng)
            var a = InviteAttendant(policy: .init(uses: uses, maxFailures: maxFailures, expiresAt: 60))
            var admitted = 0
            var now: Int64 = 0
            for _ in 0..<40 where a.isOpen {
                now += Int64.random(in: 0...3, using: &rng)
                let event: InviteAttendant.Event
                switch Int.random(in: 0..<10, using: &rng) {
                case 9: event = .codeProven
                case 0: event = .allocated(Self.np, connection: Self.connection())
                case 1: event = .prepared(connection: Self.connection(1))
                case 2: event = .joinerSpoke(connection: Self.connection(2))
                case 3: event = .admitting(joinerKeys: Self.keys)
                case 4: event = .admissionFailed
                case 5: event = .idle
                case 6: event = .useEnded(.wrongCode(.codeMismatch))
                case 7: event = .useEnded(.admitted)
                default:
                    event = .useEnded(
                        [.declined, .turnedAway, .abandoned, .unconfirmed].randomElement(using: &rng)!)
                }
                let actions = a.handle(event, now: now)
                if actions.contains(.report(.joined)) { admitted += 1 }
                a = Self.roundTrip(a)
                #expect(a.taken <= uses && a.failures <= maxFailures, "run \(run)")
                #expect(admitted <= a.taken, "run \(run)")
                switch a.ending {
                case .burned?: #expect(a.failures == maxFailures, "run \(run)")
                case .usedUp?: #expect(a.taken == uses, "run \(run)")
                case .expired?: #expect(now >= 60, "run \(run)")
                case .cancelled?: Issue.record("run \(run): nothing cancelled it")
                case nil:
                    // An attempt in flight is counted before it is decided.
                    // So is the use of a joiner being added.
                    var pending = 0
                    var adding = 0
                    if case .attending(_, _, _, true) = a.state { pending = 1 }
                    if case .admitting = a.state { adding = 1 }
                    #expect(a.failures - pending < maxFailures && a.taken - adding < uses, "run \(run)")
                }
            }
        }
    }

    static func roundTrip(_ a: InviteAttendant) -> InviteAttendant {
        let data = try! JSONEncoder().encode(a)
        let back = try! JSONDecoder().decode(InviteAttendant.self, from: data)
        #expect(back == a)
        return back
    }

    /// A pending invite saved before the attendant machine (`eleven invite --detach` of an
    /// earlier version) resumes with its counts.
    @Test func olderPendingInvitesStillOpen() throws {
        let machine = Self.connection(3)
        let machineJSON = String(decoding: try JSONEncoder().encode(machine), as: UTF8.self)
        let old = """
            {"id":"abc","space":"\(SpaceID.random().base64URL)","spaceName":"Family","relay":"ws://127.0.0.1:1/v1",
             "nameplate":"42","secret":{"words":"coral-piano","seed":"AwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwM"},
             "machine":\(machineJSON),"use":2,"usesLeft":1,"createdAt":1,"expiresAt":500,
             "policy":{"uses":4,"maxFailures":3,"expiresAt":500,"taken":2,"failures":1}}
            """
        let invite = try JSONDecoder().decode(PendingInvite.self, from: Data(old.utf8))
        #expect(invite.code == "coral-piano-42" && invite.expiresAt == 500)
        #expect(
            invite.attendant.state
                == .attending(nameplate: Self.np, use: 2, connection: machine, attempt: false))
        #expect(invite.attendant.taken == 2 && invite.attendant.failures == 1)
        #expect(invite.attendant.policy == .init(uses: 4, maxFailures: 3, expiresAt: 500))
    }
}
