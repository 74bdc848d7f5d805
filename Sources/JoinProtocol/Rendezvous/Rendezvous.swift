import Foundation
import Mailbox

/// The mailbox protocol's identifiers, as the client's machines name them. Each is defined once,
/// in `Mailbox`, for the relay and the clients alike, as are the messages (`ClientMessage`,
/// `ServerMessage`) the machine sends and receives.
public enum Rendezvous {
    public typealias Side = Mailbox.Side
    public typealias Nameplate = Mailbox.Nameplate
    public typealias MailboxID = Mailbox.MailboxID
    public typealias Phase = Mailbox.Phase
    public typealias Mood = Mailbox.Mood
}

/// Lowercase hexadecimal, as the mailbox protocol carries bodies.
public enum Hex {
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex (either case); `nil` for odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
