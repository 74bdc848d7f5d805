/// Base58 with the Bitcoin alphabet (no `0`, `O`, `I`, `l`), the text form of an invite link's
/// secret. Leading zero bytes are written as `1`; the rest is the big-endian number in base 58.
///
/// Decoding is strict: only alphabet characters, and a length limit so hostile input cannot make
/// the quadratic conversion slow.
public enum Base58 {
    static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)

    private static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, char) in alphabet.enumerated() { table[Int(char)] = Int8(index) }
        return table
    }()

    /// The longest text ``decode(_:)`` accepts (enough for 64 bytes).
    public static let maximumTextLength = 90

    /// Why a text is not base58.
    public enum DecodeError: Error, Equatable, Sendable {
        /// The character at this offset (0-based, in UTF-8 bytes) is not in the alphabet.
        case invalidCharacter(offset: Int)
        /// Longer than ``maximumTextLength``.
        case tooLong(length: Int)
    }

    /// Encodes bytes.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        let zeros = input.prefix { $0 == 0 }.count
        // Base-58 digits, least significant first.
        var digits: [UInt8] = []
        digits.reserveCapacity(input.count * 138 / 100 + 1)
        for byte in input[zeros...] {
            var carry = Int(byte)
            for index in digits.indices {
                carry += Int(digits[index]) << 8
                digits[index] = UInt8(carry % 58)
                carry /= 58
            }
            while carry > 0 {
                digits.append(UInt8(carry % 58))
                carry /= 58
            }
        }
        var output = [UInt8](repeating: alphabet[0], count: zeros)
        output.append(contentsOf: digits.reversed().map { alphabet[Int($0)] })
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes text made by ``encode(_:)``; every other text is an error.
    public static func decode(_ text: some StringProtocol) throws(DecodeError) -> [UInt8] {
        let input = Array(text.utf8)
        guard input.count <= maximumTextLength else { throw .tooLong(length: input.count) }
        let ones = input.prefix { $0 == alphabet[0] }.count
        // Bytes, least significant first.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(input.count)
        for (offset, char) in input.enumerated().dropFirst(ones) {
            let value = reverse[Int(char)]
            guard value >= 0 else { throw .invalidCharacter(offset: offset) }
            var carry = Int(value)
            for index in bytes.indices {
                carry += Int(bytes[index]) * 58
                bytes[index] = UInt8(carry & 0xFF)
                carry >>= 8
            }
            while carry > 0 {
                bytes.append(UInt8(carry & 0xFF))
                carry >>= 8
            }
        }
        return [UInt8](repeating: 0, count: ones) + bytes.reversed()
    }
}
