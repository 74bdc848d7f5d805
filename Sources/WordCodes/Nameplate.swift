@_exported import struct Mailbox.Nameplate

/// A code's nameplate is the mailbox protocol's ``Nameplate`` (one definition, in `Mailbox`),
/// narrowed to what Eleven's relay allocates and a person types: a positive decimal of at most
/// six digits, written without leading zeros. It says nothing about the code's words.
extension Nameplate {
    /// Largest nameplate in a code: six decimal digits.
    public static let maximum = 999_999

    /// A code's nameplate, or nil unless 1 ≤ value ≤ 999 999.
    public init?(_ value: Int) {
        guard (1...Self.maximum).contains(value) else { return nil }
        self.init(number: value)
    }

    /// Parses exactly one to six ASCII digits with a positive value ("42", "007" is 7).
    public init(parsing text: String) throws(CodeError) {
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.count <= 6,
            digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw .invalidNameplate(text) }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard let nameplate = Nameplate(value) else { throw .invalidNameplate(text) }
        self = nameplate
    }
}
