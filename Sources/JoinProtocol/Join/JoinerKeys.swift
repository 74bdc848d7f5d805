import SpaceModel

/// The joiner's public keys as its request carries them (`public_keys`, the key model's one-line
/// text form), read once where the message is read. Text that is not two valid keys is kept as
/// sent, with why: the attendant refuses it as it always has (a refusal the joiner can read, and
/// the same count against the invite), not as a broken message.
public enum JoinerKeys: Equatable, Sendable {
    /// Keys that parse; `text` is exactly what was sent (or what ``MemberPublicKeys/text`` wrote).
    case valid(MemberPublicKeys, text: String)
    /// Text that does not parse as keys, and the key model's reason.
    case unusable(text: String, problem: KeyModelError)

    /// Reads the text form.
    public init(text: String) {
        do throws(KeyModelError) {
            self = .valid(try MemberPublicKeys(text: text), text: text)
        } catch {
            self = .unusable(text: text, problem: error)
        }
    }

    /// This device's own keys, to send.
    public init(_ keys: MemberPublicKeys) { self = .valid(keys, text: keys.text) }

    /// The text form, as sent and as stored.
    public var text: String {
        switch self {
        case .valid(_, let text), .unusable(let text, _): text
        }
    }

    /// The keys, or the key model's reason they are unusable.
    public func keys() throws(KeyModelError) -> MemberPublicKeys {
        switch self {
        case .valid(let keys, _): return keys
        case .unusable(_, let problem): throw problem
        }
    }
}

/// Stored as its text (the form pending joins have always saved), and read back through
/// ``init(text:)``.
extension JoinerKeys: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(text: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
