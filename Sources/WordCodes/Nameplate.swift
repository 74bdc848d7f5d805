/// The number the relay allocates for a rendezvous: a positive decimal of at most six digits.
/// It says nothing about the code's words.
public struct Nameplate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Largest nameplate: six decimal digits.
    public static let maximum = 999_999

    public let value: Int

    /// A nameplate, or nil unless 1 ≤ value ≤ 999 999.
    public init?(_ value: Int) {
        guard (1...Self.maximum).contains(value) else { return nil }
        self.value = value
    }

    /// Parses exactly one to six ASCII digits with a positive value ("42", "007").
    public init(parsing text: String) throws(CodeError) {
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.count <= 6,
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw .invalidNameplate(text) }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard let nameplate = Nameplate(value) else { throw .invalidNameplate(text) }
        self = nameplate
    }

    /// Decimal, no leading zeros: the form the relay uses.
    public var description: String { String(value) }

    public static func < (lhs: Nameplate, rhs: Nameplate) -> Bool { lhs.value < rhs.value }
}
