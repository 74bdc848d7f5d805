/// The codes of a ``SpaceClientError`` that callers act on, matched by case, never by text. The
/// spelling (``SpaceClientError/code``, what `--json` prints and the server sends) stays the
/// wire's; a code no caller acts on is ``other(_:)`` with its spelling.
public enum SpaceErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The device or member is in the space already (a client's own check, or the server's).
    case alreadyMember
    /// The vault changed since the version the write was based on.
    case versionConflict
    /// The vault key changed generation meanwhile.
    case keyRotated
    /// The wraps did not cover exactly the account's devices.
    case devicesChanged
    /// The approval request is gone (answered or expired).
    case unknownApproval
    /// A field the request needs is missing (an older server that knows fewer fields).
    case missingField
    /// More events (or inbox notes) in one request than the server takes.
    case tooManyEvents, tooManyNotes
    /// A wrong email code; ``SpaceClientError/triesLeft`` says how many tries remain.
    case codeInvalid
    /// A home session that ended: expired, not valid here, or not sent.
    case sessionExpired, sessionInvalid, sessionMissing
    /// A membership event that does not follow the server's chain: the chain moved on.
    case eventOutOfOrder, eventChainBroken
    /// A thread was created while joining: the invite's keys changed.
    case inviteKeysChanged
    /// A thread was created since the thread list an admission's keys were chosen from.
    case threadsChanged
    /// What the command line named or gave was wrong, whichever side noticed.
    case invalidURL, unknownThread, messageTooLarge, bodyTooLarge, invalidField
    /// Signing in by email: the code ran out, the address was not proved, too many tries, no
    /// mail on this server, an address it does not take.
    case codeExpired, emailNotProved, tooManyAttempts, emailUnavailable, invalidAddress
    /// This device was removed from its account.
    case deviceRevoked
    /// The server did not answer in time (the client's own code).
    case timedOut
    /// A full-length link that cannot be used: unknown, expired, used, its inviter gone, a claim
    /// that does not check out, or a payload that cannot be read.
    case unknownInvite, inviteExpired, inviteUsed, inviterRemoved, claimInvalid, inviteUnreadable
    /// A sign-in challenge the server does not take (expired, used, altered, for another
    /// member, or from before a restart with another key): ask for a fresh one.
    case challengeInvalid
    /// Any other code, as spelled.
    case other(String)

    /// Every case but ``other(_:)``.
    public static let known: [SpaceErrorCode] = [
        .alreadyMember, .versionConflict, .keyRotated, .devicesChanged, .unknownApproval, .missingField,
        .tooManyEvents, .tooManyNotes, .codeInvalid, .sessionExpired, .sessionInvalid, .sessionMissing,
        .eventOutOfOrder,
        .eventChainBroken, .inviteKeysChanged, .invalidURL, .unknownThread, .messageTooLarge, .bodyTooLarge,
        .invalidField, .codeExpired, .emailNotProved, .tooManyAttempts, .emailUnavailable, .invalidAddress,
        .deviceRevoked, .timedOut, .unknownInvite, .inviteExpired, .inviteUsed, .inviterRemoved,
        .claimInvalid,
        .inviteUnreadable, .challengeInvalid, .threadsChanged,
    ]

    public init(_ spelling: String) {
        self = Self.known.first { $0.spelling == spelling } ?? .other(spelling)
    }

    /// The wire spelling.
    public var spelling: String {
        switch self {
        case .alreadyMember: "already_member"
        case .versionConflict: "version_conflict"
        case .keyRotated: "key_rotated"
        case .devicesChanged: "devices_changed"
        case .unknownApproval: "unknown_approval"
        case .missingField: "missing_field"
        case .tooManyEvents: "too_many_events"
        case .tooManyNotes: "too_many_notes"
        case .codeInvalid: "code_invalid"
        case .sessionExpired: "session_expired"
        case .sessionInvalid: "session_invalid"
        case .sessionMissing: "session_missing"
        case .eventOutOfOrder: "event_out_of_order"
        case .eventChainBroken: "event_chain_broken"
        case .inviteKeysChanged: "invite_keys_changed"
        case .threadsChanged: "threads_changed"
        case .invalidURL: "invalid_url"
        case .unknownThread: "unknown_thread"
        case .messageTooLarge: "message_too_large"
        case .bodyTooLarge: "body_too_large"
        case .invalidField: "invalid_field"
        case .codeExpired: "code_expired"
        case .emailNotProved: "email_not_proved"
        case .tooManyAttempts: "too_many_attempts"
        case .emailUnavailable: "email_unavailable"
        case .invalidAddress: "invalid_address"
        case .deviceRevoked: "device_revoked"
        case .timedOut: "timed_out"
        case .unknownInvite: "unknown_invite"
        case .inviteExpired: "invite_expired"
        case .inviteUsed: "invite_used"
        case .inviterRemoved: "inviter_removed"
        case .claimInvalid: "claim_invalid"
        case .inviteUnreadable: "invite_unreadable"
        case .challengeInvalid: "challenge_invalid"
        case .other(let spelling): spelling
        }
    }

    /// A home session that ended: sign in again (renew) and retry once.
    public var isSessionEnded: Bool { [.sessionExpired, .sessionInvalid, .sessionMissing].contains(self) }

    public var description: String { spelling }
}

extension SpaceClientError {
    /// ``code`` as a case to match on.
    public var typedCode: SpaceErrorCode { SpaceErrorCode(code) }
}
