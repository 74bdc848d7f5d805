/// Why an invite no longer works. The attendant leaves it in a fresh mailbox on the invite's
/// nameplate (phase `ended`) instead of a key-agreement message, so a joiner who arrives late
/// hears at once why (`docs/join-protocol.md`, "Ended invites"). The notice is not
/// authenticated: forging it only denies service, which a relay can do anyway; it carries no
/// key-agreement message, so it offers no guess.
public enum InviteEnd: String, Sendable, Equatable, Codable, CaseIterable {
    /// The invite's time ran out.
    case expired
    /// Every use was taken.
    case usedUp = "used_up"
    /// Wrong codes used up the invite's failed attempts.
    case burned
    /// The inviter stopped attending it (Ctrl-C, SIGTERM): nobody answers the code now.
    case left
    /// A reason this client does not know (a newer attendant).
    case ended

    static let version: UInt8 = 1

    /// The body of the `ended` message: `0x01 ‖ reason (UTF-8)`.
    public var notice: [UInt8] { [Self.version] + Array(rawValue.utf8) }

    /// Reads a notice; anything unreadable is the generic `.ended`.
    public init(notice body: [UInt8]) {
        guard body.first == Self.version, body.count <= 64,
            let reason = String(validating: body.dropFirst(), as: UTF8.self)
        else {
            self = .ended
            return
        }
        self = InviteEnd(rawValue: reason) ?? .ended
    }

    /// A stable machine-readable code.
    public var code: String {
        switch self {
        case .expired: "invite_expired"
        case .usedUp: "invite_used_up"
        case .burned: "invite_burned"
        case .left: "inviter_left"
        case .ended: "invite_ended"
        }
    }

    /// What the joiner is told.
    public var message: String {
        switch self {
        case .expired: "That invite has expired. Ask for a new one."
        case .usedUp: "That invite has been used as many times as it allows. Ask for a new one."
        case .burned: "That invite no longer works: someone tried a wrong code for it. Ask for a new one."
        case .left: "The inviter stopped attending this invite. Ask them for a new one."
        case .ended: "That invite no longer works. Ask for a new one."
        }
    }
}

extension Rendezvous.Phase {
    /// The attendant's notice that the invite ended (an ``InviteEnd``), left where the
    /// key-agreement message would be.
    public static let ended = Rendezvous.Phase("ended")

    /// The joiner's notice that it stopped waiting (Ctrl-C, SIGTERM), so the attendant stops
    /// attending that joiner at once instead of at its time limit. Not authenticated: forging it
    /// only ends one use early, which a relay can do anyway; a joiner who leaves before proving
    /// the code keeps its failure counted (`InviteAttendant`).
    public static let left = Rendezvous.Phase("left")
}
