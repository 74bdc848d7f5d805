import Foundation
import Mailbox

/// The relay's own identifiers and addresses. The mailbox protocol's (``AppID``, ``Side``,
/// ``Nameplate``, ``MailboxID``, ``Phase``, ``ClientAddress``, ``RelayInstant``) live in
/// `Mailbox`, shared with the clients.

/// The glue's handle for one WebSocket connection. The core never interprets it.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "conn#\(rawValue)" }
}

extension ClientAddress {
    /// The key that per-address limits count against: the IPv4 host, or the /64 network of an
    /// IPv6 host (one subscriber usually holds a whole /64), without the port.
    public var source: SourceAddress {
        guard family == .ipv6, let prefix = Self.ipv6Prefix64(host) else { return SourceAddress(host) }
        return SourceAddress(prefix)
    }

    /// `2001:db8:1:2::/64` for any address in that network; nil when `text` is not IPv6.
    static func ipv6Prefix64(_ text: String) -> String? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &address) { Array($0.prefix(8)) }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
    }
}

/// The key of per-address limits (rate limits, open nameplates). Never stored on disk.
public struct SourceAddress: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
}
