/// The 2048 code words, built from `wordlist/words.txt` by `wordlist/build` and embedded at
/// build time (`Wordlist+Generated.swift`), so a binary needs no file.
///
/// Properties the list keeps (checked by `WordlistPropertyTests`): lowercase a–z, 3 to 8
/// letters; the first four letters of a word identify it and no word starts with another; no two
/// words are one edit (insertion, deletion, substitution, adjacent transposition) apart, and no
/// word is one edit from another word's first four letters (so four letters typed alone always
/// name their word, never a possible typo of another); no two
/// share a sound key; no plural/singular pairs. A word's position in the sorted list is its
/// 11-bit value.
public enum Wordlist {
    /// Number of words: 2¹¹.
    public static let count = 2048

    /// Bits of entropy one uniformly chosen word carries.
    public static let bitsPerWord = 11

    /// Letters of the shortest possible abbreviation: four letters always name one word.
    public static let uniquePrefixLength = 4

    /// The words in index order (alphabetical).
    public static var words: [String] { generatedWords }

    /// The index (0..<2048) of `word`, which must be spelled exactly (lowercase), or nil.
    public static func index(of word: String) -> Int? {
        guard let key = PackedLetters(word) else { return nil }
        return lookup.wordsByKey[key].map(Int.init)
    }

    /// The word at `index`, or nil outside 0..<2048.
    public static func word(at index: Int) -> String? {
        guard generatedWords.indices.contains(index) else { return nil }
        return generatedWords[index]
    }

    /// Words that start with `prefix` (lowercase a–z), in index order. Empty prefix: all words.
    public static func words(startingWith prefix: String) -> [String] {
        // The list is sorted, so the matches are one contiguous run.
        var low = 0
        var high = generatedWords.count
        while low < high {
            let mid = (low + high) / 2
            if generatedWords[mid] < prefix { low = mid + 1 } else { high = mid }
        }
        var result: [String] = []
        var i = low
        while i < generatedWords.count, generatedWords[i].hasPrefix(prefix) {
            result.append(generatedWords[i])
            i += 1
        }
        return result
    }

    static let lookup = Lookup(words: generatedWords)

    /// Hash tables for exact words and for every proper start of at least four letters.
    struct Lookup: Sendable {
        let wordsByKey: LetterTable
        let startsByKey: LetterTable

        init(words: [String]) {
            var wordsByKey = LetterTable(capacity: words.count)
            var startsByKey = LetterTable(capacity: words.count * 4)
            for (index, word) in words.enumerated() {
                let letters = Array(word.utf8)
                guard let key = PackedLetters(letters) else { continue }
                wordsByKey[key] = Int16(index)
                if letters.count > Wordlist.uniquePrefixLength {
                    for length in Wordlist.uniquePrefixLength..<letters.count {
                        if let start = PackedLetters(letters[0..<length]) {
                            startsByKey[start] = Int16(index)
                        }
                    }
                }
            }
            self.wordsByKey = wordsByKey
            self.startsByKey = startsByKey
        }
    }
}

/// A fixed-size open-addressing hash table from packed letters to a word index: the typo
/// search looks up hundreds of variants per word, and this is several times cheaper than a
/// `Dictionary` with its seeded SipHash.
struct LetterTable: Sendable {
    private var keys: [UInt64]
    private var values: [Int16]
    private let shift: UInt64

    /// A table for up to `capacity` entries (kept at most a quarter full).
    init(capacity: Int) {
        var bits = 4
        while (1 << bits) < capacity * 4 { bits += 1 }
        keys = [UInt64](repeating: 0, count: 1 << bits)
        values = [Int16](repeating: -1, count: 1 << bits)
        shift = UInt64(64 - bits)
    }

    private func slot(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    /// The index stored for `key`, or nil. Stored keys are never 0, the empty-slot mark; the
    /// empty key (a one-letter input with its letter deleted) is in no table.
    subscript(key: PackedLetters) -> Int16? {
        get {
            guard key.bits != 0 else { return nil }
            var i = slot(key.bits)
            while true {
                let stored = keys[i]
                if stored == key.bits { return values[i] }
                if stored == 0 { return nil }
                i = (i + 1) & (keys.count - 1)
            }
        }
        set {
            precondition(key.bits != 0 && newValue != nil, "insert only")
            var i = slot(key.bits)
            while keys[i] != 0 && keys[i] != key.bits { i = (i + 1) & (keys.count - 1) }
            keys[i] = key.bits
            values[i] = newValue!
        }
    }
}

/// Up to 12 lowercase ASCII letters packed 5 bits each into one integer: a cheap hash key for
/// the many one-edit variants the typo search looks up.
struct PackedLetters: Hashable, Sendable {
    static let maximumLength = 12
    let bits: UInt64

    init(bits: UInt64) { self.bits = bits }

    init?(_ text: String) {
        self.init(Array(text.utf8))
    }

    init?<C: Collection<UInt8>>(_ letters: C) {
        guard letters.count <= Self.maximumLength else { return nil }
        var bits: UInt64 = 0
        for letter in letters {
            guard letter >= UInt8(ascii: "a"), letter <= UInt8(ascii: "z") else { return nil }
            bits = bits << 5 | UInt64(letter - UInt8(ascii: "a") + 1)
        }
        self.bits = bits
    }
}
