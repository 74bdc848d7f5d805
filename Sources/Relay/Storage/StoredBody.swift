/// How the SQLite store keeps a message body. Clients send bodies as lowercase hex of
/// ciphertext; kept as the bytes the hex spells, a body takes half the room, and a join's
/// grant (about 10 KB of hex) needs one overflow page instead of three, each written when the
/// message is added and again when secure delete wipes it. Any other body (empty, odd length,
/// uppercase, not hex) is kept as the text it is, so what loads is exactly what was added.
///
/// Both directions run on the store's queue for every message, bodies up to the relay's
/// limits: they work on the UTF-8 buffer with a table, not character by character.
enum StoredBody {
    /// The bytes a lowercase hex body spells; nil for any other body.
    static func bytes(_ body: String) -> [UInt8]? {
        var body = body
        return body.withUTF8 { utf8 -> [UInt8]? in
            guard !utf8.isEmpty, utf8.count % 2 == 0 else { return nil }
            var valid = true
            let bytes = [UInt8](unsafeUninitializedCapacity: utf8.count / 2) { buffer, count in
                var index = 0
                while index < buffer.count {
                    let high = values[Int(utf8[2 * index])]
                    let low = values[Int(utf8[2 * index + 1])]
                    guard high < 16, low < 16 else {
                        valid = false
                        break
                    }
                    buffer[index] = high << 4 | low
                    index += 1
                }
                count = index
            }
            return valid ? bytes : nil
        }
    }

    /// The lowercase hex body that `bytes` were kept for.
    static func hex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digits[Int(byte >> 4)]
                buffer[2 * index + 1] = digits[Int(byte & 0x0f)]
            }
            return bytes.count * 2
        }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Each byte's value as a lowercase hex digit, 0xff where it is none (uppercase is not
    /// taken, so that it loads back unchanged).
    private static let values: [UInt8] = (0..<256).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        default: 0xff
        }
    }
}
