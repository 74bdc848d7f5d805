/// Why an attendant turns a joiner (or the bot an inviter's request) away: the reason code sent
/// in a join's `refusal` message and in the bot's notices. The joiner's client shows it as
/// `refused_<reason>` (`docs/errors.md`); the raw values are that wire spelling. What a joiner
/// receives stays text (``JoinMessage/refusal(reason:message:)``): a newer attendant may send a
/// reason this build does not know, and it is shown as sent.
public enum RefusalReason: String, CaseIterable, Sendable {
    /// A person said no: the use is spent.
    case declined
    /// The attendant could not reach its space server, or the invite is not ready yet.
    case unavailable
    /// The joiner's device is in the space already; nothing changed.
    case alreadyMember = "already_member"
    /// The inviter stopped attending.
    case left
    /// The join was interrupted on the attendant's side.
    case interrupted
    /// Too many joins at once.
    case busy
    /// The inviter lost the right to add members, or the invite was withdrawn.
    case revoked
    /// The invite's time ran out.
    case expired
    /// Every use of the invite was taken.
    case usedUp = "used_up"
    /// Wrong codes used up the invite's failed attempts.
    case burned
    /// An invite request the bot cannot accept (malformed, out of its limits, badly signed).
    case invalid
    /// An invite request that came too late: the bot drops it without telling the inviter, who
    /// attends the invite itself by then.
    case stale
}
