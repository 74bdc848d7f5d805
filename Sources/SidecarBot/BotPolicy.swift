import ClientCore
import JoinProtocol
import SpaceModel

/// How the bot runs: where, how fast it looks, and the limits of its policy.
public struct BotConfiguration: Sendable {
    /// The join relay (`ws://…/v1`).
    public var relay: String
    /// How often the inbox is read when nothing arrives.
    public var pollInterval: Duration = .milliseconds(100)
    /// The longest wait for a joiner's next message once they started.
    public var stepTimeout: Duration = .seconds(30)
    /// How long an inviter has to sign the invite record after the nameplate went back.
    public var recordTimeout: Int64 = 120
    /// How long the inviter has to answer "Let Sam join?" (policy "ask").
    public var askTimeout: Duration = .seconds(600)
    /// Joins admitted per minute across the space (0: no limit).
    public var joinsPerMinute: Int = 600
    public var maxUses = 100
    public var maxLifetime: Int64 = 30 * 86_400
    public var maxFailures = 10
    /// The oldest invite request the bot attends (seconds): an inviter whose bot did not answer
    /// in time attends the invite itself, so a request found later is dropped.
    public var maxRequestAge: Int64 = 30

    public init(relay: String) {
        self.relay = relay
    }
}

/// Why the bot turns something down: a reason code and a sentence for people.
public struct BotRefusal: Equatable, Sendable {
    public let reason: RefusalReason
    public let message: String

    public init(_ reason: RefusalReason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// What this refusal does to the invite: a declined joiner spent the use; an inviter who
    /// lost the right, or an invite past its time or uses, ends it; anything else is the
    /// bot's own trouble and the joiner may try again.
    public var attendant: AttendantRefusal {
        let kind: AttendantRefusal.Kind =
            switch reason {
            case .declined: .declined
            case .revoked: .invalidated(.cancelled)
            case .expired: .invalidated(.expired)
            case .usedUp: .invalidated(.usedUp)
            case .unavailable, .alreadyMember, .left, .interrupted, .busy, .burned, .invalid, .stale:
                .turnedAway
            }
        return AttendantRefusal(kind, reason: reason, message)
    }
}

/// The bot's rules, without I/O: what it accepts from members and whom it lets in.
public enum BotPolicy {
    /// Checks an invite request: its sender must currently hold the right to add members in the
    /// verified roster (never the server's word), and the policy must be within limits.
    public static func checkRequest(
        _ note: AttendantNote, sender: MemberID, roster: Roster, now: Int64, configuration: BotConfiguration
    ) -> BotRefusal? {
        guard note.type == .inviteRequest, let uses = note.uses, let expiresAt = note.expiresAt else {
            return BotRefusal(.invalid, "That is not an invite request.")
        }
        if let createdAt = note.createdAt, now - createdAt > configuration.maxRequestAge {
            return BotRefusal(.stale, "The invite request came too late; the inviter attends it.")
        }
        if let refusal = checkInviter(sender, roster: roster) { return refusal }
        guard (1...configuration.maxUses).contains(uses) else {
            return BotRefusal(.invalid, "An invite may be used 1 to \(configuration.maxUses) times.")
        }
        guard expiresAt > now, expiresAt - now <= configuration.maxLifetime else {
            return BotRefusal(.invalid, "The invite's expiry is in the past or too far ahead.")
        }
        guard (1...configuration.maxFailures).contains(note.maxFailures ?? 1) else {
            return BotRefusal(.invalid, "The failed-attempt cap is 1 to \(configuration.maxFailures).")
        }
        guard let words = note.words, words.split(separator: "-").count >= 2,
            words.allSatisfy({ $0 == "-" || ($0.isASCII && $0.isLowercase) })
        else {
            return BotRefusal(.invalid, "The invite's words are malformed.")
        }
        return nil
    }

    /// The inviter must be a current member holding the `invite` or `admin` right.
    public static func checkInviter(_ inviter: MemberID, roster: Roster) -> BotRefusal? {
        guard roster.members[inviter] != nil else {
            return BotRefusal(.revoked, "The inviter is no longer a member of the space.")
        }
        let rights = roster.rights(of: inviter)
        guard rights.contains(.admin) || rights.contains(.invite) else {
            return BotRefusal(.revoked, "The inviter may not add members to the space.")
        }
        return nil
    }

    /// Checks the inviter's signed record against the request the bot accepted: the same
    /// invite, signed with the inviter's key. Whether the inviter may still add members is
    /// checked when someone joins (a revoked inviter's joiner is told so). `memo`: signatures
    /// this process verified (each record is checked again for every joiner it brings).
    public static func checkRecord(
        _ record: SignedInvite, for invite: BotInvite, roster: Roster, memo: SignatureMemo? = nil
    ) -> BotRefusal? {
        guard record.inviter == invite.inviter, record.nameplate == invite.nameplate,
            record.expiresAt == invite.expiresAt, record.uses == invite.uses, record.space == roster.space
        else {
            return BotRefusal(.invalid, "The signed invite does not match the request.")
        }
        guard let key = try? record.verifySignature(memo: memo),
            roster.everMember(invite.inviter)?.keys.signing == key
        else {
            return BotRefusal(.invalid, "The signed invite is not signed by the inviter.")
        }
        return nil
    }

    /// Whether a joiner who proved the code may come in now.
    public static func checkAdmission(
        _ invite: BotInvite, roster: Roster, now: Int64, memo: SignatureMemo? = nil
    ) -> BotRefusal? {
        if let refusal = checkInviter(invite.inviter, roster: roster) { return revoked(refusal) }
        guard let record = invite.record else {
            return BotRefusal(.unavailable, "The invite is not ready yet; try again in a moment.")
        }
        guard now <= invite.expiresAt else {
            return BotRefusal(.expired, "The invite has expired. Ask for a new one.")
        }
        guard invite.usesLeft > 0 else {
            return BotRefusal(.usedUp, "The invite has been used up. Ask for a new one.")
        }
        return checkInviteWorks(record, inviter: invite.inviter, roster: roster, memo: memo)
    }

    /// Whether `inviter` may still add members and their signed `record` still verifies on
    /// `roster`: ``checkAdmission(_:roster:now:)``'s part that other members' events change
    /// (asked again of a chain read after an admission was refused because it moved).
    public static func checkInviteWorks(
        _ record: SignedInvite, inviter: MemberID, roster: Roster, memo: SignatureMemo? = nil
    ) -> BotRefusal? {
        if let refusal = checkInviter(inviter, roster: roster) { return revoked(refusal) }
        do throws(KeyModelError) {
            try roster.checkInvite(record, memo: memo)
        } catch {
            return BotRefusal(.revoked, "The invite no longer verifies: \(error.message)")
        }
        return nil
    }

    private static func revoked(_ refusal: BotRefusal) -> BotRefusal {
        BotRefusal(
            .revoked, "\(refusal.message) The invite no longer works; ask a current member for a new one.")
    }
}

/// A per-space limit on admissions: at most `limit` in any `window` (a sliding window).
public struct JoinRateLimiter: Sendable {
    public let limit: Int
    public let window: Duration
    private var admitted: [ContinuousClock.Instant] = []

    public init(limit: Int, window: Duration = .seconds(60)) {
        self.limit = limit
        self.window = window
    }

    /// Records an admission at `now` when the limit allows it.
    public mutating func allow(now: ContinuousClock.Instant) -> Bool {
        guard limit > 0 else { return true }
        admitted.removeAll { now - $0 >= window }
        guard admitted.count < limit else { return false }
        admitted.append(now)
        return true
    }
}
