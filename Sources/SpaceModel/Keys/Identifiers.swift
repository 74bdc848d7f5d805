import PAKE

/// What an ``Identifier`` names; only used as a type tag so different ids cannot be mixed up.
public protocol IdentifierKind: Sendable {
    /// A human word for error messages ("space id").
    static var noun: String { get }
}

/// The tag for ``SpaceID``.
public enum SpaceIDKind: IdentifierKind { public static let noun = "space id" }
/// The tag for ``ThreadID``.
public enum ThreadIDKind: IdentifierKind { public static let noun = "thread id" }
/// The tag for ``MemberID``.
public enum MemberIDKind: IdentifierKind { public static let noun = "member id" }
/// The tag for ``MessageID``.
public enum MessageIDKind: IdentifierKind { public static let noun = "message id" }

/// A 16-byte random identifier, written as 22 characters of base64url in JSON and URLs.
///
/// Clients choose ids (so they can be bound into signatures before a server sees them); servers
/// refuse duplicates.
public struct Identifier<Kind: IdentifierKind>: Hashable, Sendable, Comparable {
    /// Length of every identifier in bytes.
    public static var byteCount: Int { 16 }

    /// The raw bytes.
    public let bytes: [UInt8]

    /// Accepts exactly ``byteCount`` bytes.
    public init(bytes: some Collection<UInt8>) throws(KeyModelError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            throw KeyModelError(
                .invalidLength, "A \(Kind.noun) has \(Self.byteCount) bytes, not \(array.count).")
        }
        self.bytes = array
    }

    /// Parses the base64url text form.
    public init(base64URL text: String) throws(KeyModelError) {
        guard let decoded = Base64URL.decode(text) else {
            throw KeyModelError(.invalidEncoding, "That \(Kind.noun) is not valid base64url.")
        }
        try self.init(bytes: decoded)
    }

    /// A fresh random identifier.
    public static func random() -> Self {
        // Length is right by construction.
        try! Self(bytes: SecretBytes.randomBytes(byteCount))
    }

    /// The base64url text form.
    public var base64URL: String { Base64URL.encode(bytes) }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}

extension Identifier: CustomStringConvertible {
    public var description: String { base64URL }
}

extension Identifier: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(base64URL: text)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(base64URL)
    }
}

/// Identifies a space (chosen by its creator).
public typealias SpaceID = Identifier<SpaceIDKind>
/// Identifies a thread within a space (chosen by its creator).
public typealias ThreadID = Identifier<ThreadIDKind>
/// Identifies a member of a space (chosen by whoever adds the member).
public typealias MemberID = Identifier<MemberIDKind>
/// Identifies a message within a thread (chosen by its author).
public typealias MessageID = Identifier<MessageIDKind>
