/// Identifiers of the Magic Wormhole mailbox protocol v1, shared by the relay (which checks and
/// stores them) and the clients (which send and resume them). Each is its own type so a nameplate
/// can never be passed where a mailbox id or a side is expected; all are opaque strings on the
/// wire. The client's state files hold them as `{"value": …}` (the synthesized `Codable`), so the
/// stored property keeps that name.

/// The application scope chosen by clients (`lothar.com/wormhole/text-or-file-xfer`,
/// `elevenmessenger.com/join`, …). Nameplates and mailboxes of different AppIDs never meet.
public struct AppID: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let value: String
    public init(_ value: String) { self.value = value }
    public init(stringLiteral value: String) { self.value = value }
    public var description: String { value }
}

/// One client session's random identifier (10 lowercase hex characters, as every known client).
public struct Side: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let value: String
    public init(_ value: String) { self.value = value }
    public init(stringLiteral value: String) { self.value = value }
    public var description: String { value }

    /// A fresh side: 5 random bytes as hex.
    public static func random<R: RandomNumberGenerator>(using rng: inout R) -> Side {
        let digits = Array("0123456789abcdef".utf8)
        // One draw of eight bytes, five of them used: a draw per byte from the system's
        // generator was a `getrandom` system call each.
        let random = rng.next()
        var text: [UInt8] = []
        for index in 0..<5 {
            let byte = UInt8(truncatingIfNeeded: random >> (8 * index))
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return Side(String(decoding: text, as: UTF8.self))
    }
}

/// A short decimal name (`7` in `7-guitarist-revenge`, `42` in `coral-piano-42`) that points at
/// a mailbox. It says nothing about a code's words.
///
/// The relay accepts only ASCII digits (``init(validating:)``: `^[0-9]+$`, at most
/// ``maximumLength`` characters); the reference server's `\d` also admits other Unicode digits,
/// which no client produces. ``init(_:)`` takes the text as given: a relay's answer, a stored
/// value. Eleven's codes narrow it further (`WordCodes`: one to six digits, positive).
public struct Nameplate: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public let value: String
    /// The reference server's limit for claimed nameplates.
    public static let maximumLength = 40

    /// The text as given, unchecked (what a relay answered, what a store wrote).
    public init(_ value: String) { self.value = value }

    /// A validated nameplate, or nil when `value` is empty, too long or not all digits.
    public init?(validating value: String) {
        guard !value.isEmpty, value.utf8.count <= Self.maximumLength,
            value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
        else { return nil }
        self.value = value
    }

    /// A nameplate from a number (decimal, no leading zeros: the form the relay allocates).
    public init(number: Int) { self.value = String(number) }

    public static func < (lhs: Nameplate, rhs: Nameplate) -> Bool { lhs.value < rhs.value }
    public var description: String { value }
}

/// The long random name of a mailbox (13 lowercase base32 characters when the relay makes it;
/// clients may open any string as a standalone mailbox).
public struct MailboxID: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let value: String
    public init(_ value: String) { self.value = value }
    public init(stringLiteral value: String) { self.value = value }
    public var description: String { value }
}

/// The label of a client-to-client message (`pake`, `version`, `0`, …). Each side uses each
/// phase once.
public struct Phase: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let value: String
    public init(_ value: String) { self.value = value }
    public init(stringLiteral value: String) { self.value = value }
    public var description: String { value }
    public static let pake = Phase("pake")
    public static let version = Phase("version")
}

/// How a side feels when it closes a mailbox; the relay only counts these (and accepts any
/// text, so it keeps what a client sent).
public enum Mood: String, Sendable, Codable {
    case happy, lonely, scary, errory
}

/// Where a connection comes from, as the relay saw it (after trusted-proxy headers); the
/// welcome's `your-address`.
public struct ClientAddress: Hashable, Sendable {
    public enum Family: Sendable { case ipv4, ipv6 }
    public let family: Family
    /// The textual address (`127.0.0.1`, `2001:db8::1`).
    public let host: String
    public let port: Int

    public init(family: Family, host: String, port: Int) {
        self.family = family
        self.host = host
        self.port = port
    }
}

/// A point in time: seconds since the Unix epoch, as `server_tx` and `server_rx` carry it
/// (the relay's clock).
public struct RelayInstant: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let secondsSince1970: Double
    public init(secondsSince1970: Double) { self.secondsSince1970 = secondsSince1970 }
    public static func < (lhs: RelayInstant, rhs: RelayInstant) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }
    public static func + (lhs: RelayInstant, seconds: Double) -> RelayInstant {
        RelayInstant(secondsSince1970: lhs.secondsSince1970 + seconds)
    }
    /// Seconds from `earlier` to `self`.
    public func seconds(since earlier: RelayInstant) -> Double {
        secondsSince1970 - earlier.secondsSince1970
    }
    public var description: String { String(secondsSince1970) }
}
