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

/// Lowercase hexadecimal, as the mailbox protocol carries bodies. Every message of a join
/// passes through here both ways (a grant is kilobytes): both directions work on the bytes in
/// place, with tables, where a per-character switch and copies cost a joiner and the bot
/// 1–2% of their CPU (docs/bot.md, "Session 12").
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Each byte's value as a hex digit (either case), 0xFF for any other byte.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, digit) in "0123456789abcdef".utf8.enumerated() { table[Int(digit)] = UInt8(value) }
        for (value, digit) in "ABCDEF".utf8.enumerated() { table[Int(digit)] = UInt8(10 + value) }
        return table
    }()

    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        let input = Array(bytes)
        return String(unsafeUninitializedCapacity: input.count * 2) { out in
            digits.withUnsafeBufferPointer { digits in
                var at = 0
                for byte in input {
                    out[at] = digits[Int(byte >> 4)]
                    out[at + 1] = digits[Int(byte & 0x0F)]
                    at += 2
                }
            }
            return input.count * 2
        }
    }

    /// Decodes hex (either case); `nil` for odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { chars -> [UInt8]? in
            guard chars.count % 2 == 0 else { return nil }
            let count = chars.count / 2
            var valid = true
            let out = [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
                values.withUnsafeBufferPointer { values in
                    var index = 0
                    while index < count {
                        let high = values[Int(chars[2 * index])]
                        let low = values[Int(chars[2 * index + 1])]
                        // A non-digit's 0xFF has high bits a digit's value never has.
                        guard (high | low) & 0xF0 == 0 else {
                            valid = false
                            break
                        }
                        out[index] = high << 4 | low
                        index += 1
                    }
                    initialized = index
                }
            }
            return valid ? out : nil
        }
    }
}
