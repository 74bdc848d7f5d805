import ClientCore
import Testing

/// The invite's life as a pure value: uses, the cap on failed attempts, expiry.
@Suite struct InvitePolicyTests {
    static let sam = JoinRequest(displayName: "Sam", deviceLabel: "laptop", publicKeys: "k")

    @Test func theFirstFailureBurnsByDefault() {
        var policy = InvitePolicy(uses: 3, expiresAt: 100)
        #expect(policy.end(now: 0) == nil)
        #expect(policy.record(.burned(.codeMismatch), now: 1) == .ended(.burned))
        #expect(policy.failuresLeft == 0 && policy.usesLeft == 3)
    }

    @Test func failuresAreCappedInTotalAcrossUses() {
        var policy = InvitePolicy(uses: 3, maxFailures: 3, expiresAt: 100)
        #expect(policy.record(.burned(.codeMismatch), now: 1) == .attendAgain)
        #expect(policy.record(.admitted(Self.sam), now: 2) == .attendAgain)
        #expect(policy.record(.burned(.protocolError("x")), now: 3) == .attendAgain)
        #expect(policy.failuresLeft == 1 && policy.usesLeft == 2)
        // The third failure, whatever happened between, burns it.
        #expect(policy.record(.burned(.codeMismatch), now: 4) == .ended(.burned))
        #expect(policy.end(now: 5) == .burned)
    }

    @Test func usesRunOutAndTimeRunsOut() {
        var policy = InvitePolicy(uses: 2, maxFailures: 5, expiresAt: 100)
        #expect(policy.record(.admitted(Self.sam), now: 1) == .attendAgain)
        // A declined request takes a use too.
        #expect(policy.record(.refused(Self.sam), now: 2) == .ended(.usedUp))
        var late = InvitePolicy(uses: 2, expiresAt: 100)
        #expect(late.end(now: 100) == .expired)
        #expect(late.record(.admitted(Self.sam), now: 150) == .ended(.expired))
    }

    @Test func nonsenseCapsAreRaisedToOne() {
        let policy = InvitePolicy(uses: 0, maxFailures: -4, expiresAt: 100)
        #expect(policy.uses == 1 && policy.maxFailures == 1)
    }
}
