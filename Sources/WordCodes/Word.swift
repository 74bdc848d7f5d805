/// One word of a code: an entry of `Wordlist`, carrying 11 bits.
public struct Word: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Position in `Wordlist.words`, 0..<2048: the word's 11-bit value (for deriving a password).
    public let index: Int

    /// A word by its index, or nil outside 0..<2048.
    public init?(index: Int) {
        guard (0..<Wordlist.count).contains(index) else { return nil }
        self.index = index
    }

    /// A word by its exact spelling (lowercase), or nil if it is not in the list.
    public init?(_ text: String) {
        guard let index = Wordlist.index(of: text) else { return nil }
        self.index = index
    }

    /// The word as written in the list.
    public var text: String { Wordlist.generatedWords[index] }

    public var description: String { text }

    public static func < (lhs: Word, rhs: Word) -> Bool { lhs.index < rhs.index }
}
