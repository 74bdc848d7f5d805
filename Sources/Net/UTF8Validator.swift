/// Incremental UTF-8 validation (Unicode table 3-7), so a text message split across frames and
/// reads is checked as it arrives and fails as early as the first bad byte.
public struct UTF8Validator: Sendable {
    private var needed = 0
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    public init() {}

    /// True when the bytes so far end on a character boundary.
    public var isComplete: Bool { needed == 0 }

    /// Feeds more bytes; false as soon as they cannot be valid UTF-8.
    public mutating func feed<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        for byte in bytes {
            if needed == 0 {
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: needed = 1
                case 0xE0:
                    needed = 2
                    lower = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: needed = 2
                case 0xED:
                    needed = 2
                    upper = 0x9F
                case 0xF0:
                    needed = 3
                    lower = 0x90
                case 0xF1...0xF3: needed = 3
                case 0xF4:
                    needed = 3
                    upper = 0x8F
                default: return false
                }
            } else {
                guard byte >= lower && byte <= upper else { return false }
                lower = 0x80
                upper = 0xBF
                needed -= 1
            }
        }
        return true
    }

    /// Whether `bytes` are complete, valid UTF-8.
    public static func isValid<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        var v = UTF8Validator()
        return v.feed(bytes) && v.isComplete
    }
}
