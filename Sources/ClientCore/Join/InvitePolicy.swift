/// The life of a short-code invite, as a pure value: how many people may join with it, how many
/// failed attempts it tolerates in total, and until when it works. The attendant (`eleven
/// invite`, `eleven approve`, the bot) records each use's outcome and is told whether to attend
/// again or how the invite ended (``InviteEnd``, left for late joiners with
/// ``InviteAttendance/leaveEndNotice(relayURL:nameplate:intent:end:timeout:)``).
///
/// Every failed confirmation is one online guess, so `maxFailures` is the number of guesses a
/// man in the middle gets over the invite's whole life (`docs/join-protocol.md`).
public struct InvitePolicy: Codable, Sendable, Equatable {
    /// How many people may join (each approved or declined request takes one use).
    public let uses: Int
    /// Failed attempts (wrong codes, protocol violations) tolerated in total; the one that
    /// reaches this number burns the invite.
    public let maxFailures: Int
    /// Unix time after which the invite no longer works.
    public let expiresAt: Int64
    /// Uses taken so far.
    public private(set) var taken = 0
    /// Failed attempts so far.
    public private(set) var failures = 0

    /// What the attendant does after a use ended.
    public enum Next: Equatable, Sendable {
        /// Publish a fresh key-agreement message on the same nameplate and attend again.
        case attendAgain
        /// The invite is over.
        case ended(InviteEnd)
    }

    public static let defaultMaxFailures = 1
    public static let maxFailuresRange = 1...100

    public init(uses: Int, maxFailures: Int = defaultMaxFailures, expiresAt: Int64) {
        self.uses = max(1, uses)
        self.maxFailures = max(1, maxFailures)
        self.expiresAt = expiresAt
    }

    /// Uses still open.
    public var usesLeft: Int { max(0, uses - taken) }

    /// Failed attempts still tolerated.
    public var failuresLeft: Int { max(0, maxFailures - failures) }

    /// Why the invite no longer works at `now`, or nil while it does.
    public func end(now: Int64) -> InviteEnd? {
        if failures >= maxFailures { return .burned }
        if taken >= uses { return .usedUp }
        if now >= expiresAt { return .expired }
        return nil
    }

    /// Records how a use ended and says what comes next.
    public mutating func record(_ outcome: InviteAttendance.Outcome, now: Int64) -> Next {
        switch outcome {
        case .admitted, .refused: taken += 1
        case .burned: failures += 1
        }
        return end(now: now).map { .ended($0) } ?? .attendAgain
    }
}
