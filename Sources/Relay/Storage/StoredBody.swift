/// How the SQLite store keeps a message body. Clients send bodies as lowercase hex of
/// ciphertext; kept as the bytes the hex spells, a body takes half the room, and a join's
/// grant (about 10 KB of hex) needs one overflow page instead of three, each written when the
/// message is added and again when secure delete wipes it. Any other body (empty, odd length,
/// uppercase, not hex) is kept as the text it is, so what loads is exactly what was added.
enum StoredBody {
    /// The bytes a lowercase hex body spells; nil for any other body.
    static func bytes(_ body: String) -> [UInt8]? {
        let utf8 = body.utf8
        guard !utf8.isEmpty, utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for character in utf8 {
            guard let nibble = nibble(character) else { return nil }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return bytes
    }

    /// The lowercase hex body that `bytes` were kept for.
    static func hex(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// A lowercase hex digit's value; uppercase is not taken, so that it loads back unchanged.
    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
