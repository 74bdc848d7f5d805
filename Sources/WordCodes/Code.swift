/// A short invite code: secret words plus the relay's nameplate, written `coral-piano-42`.
///
/// The words are the secret (11 bits each, drawn from a CSPRNG); the nameplate is whatever the
/// relay allocated and carries no information about them. `description` is the canonical form
/// to show and share; `debugDescription` hides the words so a stray debug print leaks nothing.
public struct Code: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Words in a code unless more are asked for.
    public static let defaultWordCount = 2
    /// Word counts a code may have.
    public static let wordCountRange = 2...8

    public let nameplate: Nameplate
    public let words: [Word]

    /// A code, or nil if the word count is outside `wordCountRange`.
    public init?(nameplate: Nameplate, words: [Word]) {
        guard Self.wordCountRange.contains(words.count) else { return nil }
        self.nameplate = nameplate
        self.words = words
    }

    /// Reads a typed code; see `CodeParser.parse(_:wordCounts:)` for what is accepted and for
    /// the list of corrections made.
    public init(parsing text: String) throws(CodeError) {
        self = try CodeParser.parse(text).code
    }

    /// A new code with `wordCount` words drawn uniformly from `Wordlist` using `generator`
    /// (uniform: 2048 is a power of two and `Int.random(in:using:)` is unbiased anyway).
    /// - Precondition: `wordCount` is in `wordCountRange`.
    public static func generate<G: RandomNumberGenerator>(
        nameplate: Nameplate, wordCount: Int = defaultWordCount, using generator: inout G
    ) -> Code {
        precondition(wordCountRange.contains(wordCount), "a code has 2 to 8 words")
        let words = (0..<wordCount).map { _ in
            Word(index: Int.random(in: 0..<Wordlist.count, using: &generator))!
        }
        return Code(nameplate: nameplate, words: words)!
    }

    /// A new code drawn from the system CSPRNG (`SystemRandomNumberGenerator`: getrandom on
    /// Linux).
    public static func generate(nameplate: Nameplate, wordCount: Int = defaultWordCount) -> Code {
        var generator = SystemRandomNumberGenerator()
        return generate(nameplate: nameplate, wordCount: wordCount, using: &generator)
    }

    /// Bits of secret in a code of `wordCount` words: 11 per word.
    public static func entropyBits(wordCount: Int) -> Int { wordCount * Wordlist.bitsPerWord }

    /// Bits of secret in this code.
    public var entropyBits: Int { Self.entropyBits(wordCount: words.count) }

    /// The words' 11-bit values, in order: the input for deriving the PAKE password.
    public var wordIndices: [Int] { words.map(\.index) }

    /// The secret part alone, `coral-piano`.
    public var secretWords: String { words.map(\.text).joined(separator: "-") }

    /// The canonical form: `coral-piano-42`.
    public var description: String { secretWords + "-" + nameplate.description }

    public var debugDescription: String {
        "Code(nameplate: \(nameplate), words: <\(words.count) hidden>)"
    }
}
