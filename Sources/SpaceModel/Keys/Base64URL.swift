/// Base64url without padding (RFC 4648 §5), the encoding of every byte string in Eleven's JSON.
///
/// Decoding is strict: no padding, no whitespace, no characters outside the alphabet, and unused
/// trailing bits must be zero, so each byte string has exactly one text form.
public enum Base64URL {
    private static let alphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    /// Encodes bytes as base64url without padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let n = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(n >> 18 & 63)])
            output.append(alphabet[Int(n >> 12 & 63)])
            output.append(alphabet[Int(n >> 6 & 63)])
            output.append(alphabet[Int(n & 63)])
            index += 3
        }
        let rest = input.count - index
        if rest == 1 {
            let n = UInt32(input[index]) << 16
            output.append(alphabet[Int(n >> 18 & 63)])
            output.append(alphabet[Int(n >> 12 & 63)])
        } else if rest == 2 {
            let n = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(n >> 18 & 63)])
            output.append(alphabet[Int(n >> 12 & 63)])
            output.append(alphabet[Int(n >> 6 & 63)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes strict base64url without padding; `nil` for anything else.
    public static func decode(_ text: String) -> [UInt8]? {
        decode(utf8: Array(text.utf8)[...])
    }

    /// ``decode(_:)`` of a text's UTF-8 bytes.
    package static func decode(utf8 input: ArraySlice<UInt8>) -> [UInt8]? {
        if input.count % 4 == 1 { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for char in input {
            let value = reverse[Int(char)]
            if value == 0xFF { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits must be zero: one canonical text per byte string.
        if accumulator != 0 { return nil }
        return output
    }
}
