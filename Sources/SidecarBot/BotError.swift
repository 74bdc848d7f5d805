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

    public let kind: Kind
    public let code: String
    public let message: String

    public init(_ kind: Kind, code: String, _ message: String) {
        self.kind = kind
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
