/// Why the bot could not do something: a stable machine-readable `code` and a sentence a person
/// can act on. Never carries a secret.
public struct BotError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The key that seals the bot's private keys is missing or wrong.
        case key
        /// The state file is missing, damaged or not the bot's.
        case state
        /// The space server or relay cannot be reached or refused.
        case unavailable
        /// The caller asked for something impossible (bad arguments).
        case usage
    }

    /// The bot's own codes; the raw values are what `--json` prints (`docs/errors.md`).
    public enum Code: String, CaseIterable, Sendable {
        case alreadyJoined = "already_joined"
        case joinFailed = "join_failed"
        case keyInvalid = "key_invalid"
        case keyMissing = "key_missing"
        case keyUnwritable = "key_unwritable"
        case keyWrong = "key_wrong"
        case notJoined = "not_joined"
        case notMember = "not_member"
        case stateCorrupt = "state_corrupt"
        case stateMissing = "state_missing"
        case stateUnwritable = "state_unwritable"
    }

    public let kind: Kind
    /// What scripts see: one of ``Code``, or the code of the error this one reports (a typed
    /// code's raw value, or a server's code as it sent it).
    public let code: String
    public let message: String

    public init(_ kind: Kind, code: Code, _ message: String) {
        self.init(kind, reporting: code.rawValue, message)
    }

    /// An error that passes on another's `code` (a join's, a server's, a file's).
    public init(_ kind: Kind, reporting code: String, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
