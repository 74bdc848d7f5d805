/// How one typed word (lowercase a–z) was read.
enum WordMatch: Equatable, Sendable {
    /// Exactly a list word.
    case exact(Int)
    /// The start (four letters or more) of exactly one word, and not a typo of another word.
    case completed(Int)
    /// One mistake away from exactly one word (or from the start of one word).
    case corrected(Int)
    /// Several words explain it: the parser will not guess.
    case ambiguous([Int])
    /// No word explains it.
    case unknown
}

/// The rules for reading one typed word. In order:
///
/// 1. A list word is taken as it is.
/// 2. Four or more letters that start exactly one word are completed to it, unless they are
///    also one mistake away from another word (typed in full): "lamb" when the list had "lamp"
///    and "lambkin" is refused, because the person may have mistyped "lamp". So a single
///    mistake in a word typed in full can never be read as a different word.
/// 3. Otherwise every word that the letters are one mistake away from is a candidate: one
///    mistake (a letter added, missing, wrong, or two neighbours swapped) from the whole word,
///    or, for four letters or more, from the word's start (a mistyped abbreviation: "vilo" for
///    "viol" of "violin"). One candidate: read as that word. Several: refused, listing them.
///
/// Known limit: a mistyped abbreviation that happens to be, exactly, another word or the start
/// of another word is read as that other word (rules 1 and 2); the caller shows the reading
/// ("reading 'vial' as 'vialxx'"), and the PAKE confirmation catches a wrong code.
enum WordMatcher {
    static func match(_ letters: [UInt8]) -> WordMatch {
        let lookup = Wordlist.lookup
        guard let key = PackedLetters(letters) else { return .unknown }
        if let index = lookup.wordsByKey[key] { return .exact(Int(index)) }
        var near = Candidates()
        // Forms are at most 8 letters, so only inputs of at most 9 can be one edit from one.
        let searchable = letters.count <= 9
        if searchable {
            forEachOneEditKey(of: letters) { variant in
                if let index = lookup.wordsByKey[variant] { near.insert(index) }
            }
        }
        if letters.count >= Wordlist.uniquePrefixLength, let index = lookup.startsByKey[key] {
            let others = near.indices.filter { $0 != index }
            return others.isEmpty ? .completed(Int(index)) : .ambiguous(sorted([index] + others))
        }
        if searchable, letters.count >= Wordlist.uniquePrefixLength {
            forEachOneEditKey(of: letters) { variant in
                if let index = lookup.startsByKey[variant] { near.insert(index) }
            }
        }
        switch near.indices.count {
        case 0: return .unknown
        case 1: return .corrected(Int(near.indices[0]))
        default: return .ambiguous(sorted(near.indices))
        }
    }

    /// Words to suggest for letters no word explains: up to five list words within two edits,
    /// or that sound alike, nearest first.
    static func suggestions(for letters: [UInt8], limit: Int = 5) -> [String] {
        let typed = String(decoding: letters, as: UTF8.self)
        let key = PhoneticKey.key(typed)
        var scored: [(distance: Int, word: String)] = []
        for word in Wordlist.generatedWords {
            let distance = EditDistance.damerauLevenshtein(typed, word, limit: 2)
            if distance <= 2 {
                scored.append((distance, word))
            } else if PhoneticKey.key(word) == key {
                scored.append((2, word))
            }
        }
        scored.sort { ($0.distance, $0.word) < ($1.distance, $1.word) }
        return scored.prefix(limit).map(\.word)
    }

    private static func sorted(_ indices: [Int16]) -> [Int] {
        indices.map(Int.init).sorted()
    }

    /// A tiny set: almost always zero to three entries.
    private struct Candidates {
        var indices: [Int16] = []
        mutating func insert(_ index: Int16) {
            if !indices.contains(index) { indices.append(index) }
        }
    }

    /// Calls `body` with the packed key of every string one edit away from `letters` (deletion,
    /// adjacent transposition, substitution, insertion); keys are computed arithmetically from
    /// packed prefixes and suffixes, without building strings. `letters.count` ≤ 11.
    static func forEachOneEditKey(of letters: [UInt8], _ body: (PackedLetters) -> Void) {
        let n = letters.count
        precondition(n < PackedLetters.maximumLength)
        let codes = letters.map { UInt64($0 - UInt8(ascii: "a") + 1) }
        // prefix[i] packs codes[0..<i]; suffix[i] packs codes[i..<n].
        var prefix = [UInt64](repeating: 0, count: n + 1)
        var suffix = [UInt64](repeating: 0, count: n + 1)
        for i in 0..<n { prefix[i + 1] = prefix[i] << 5 | codes[i] }
        for i in stride(from: n - 1, through: 0, by: -1) {
            suffix[i] = codes[i] << UInt64(5 * (n - 1 - i)) | suffix[i + 1]
        }
        for i in 0..<n {
            let tail = UInt64(5 * (n - 1 - i))
            body(PackedLetters(bits: prefix[i] << tail | suffix[i + 1]))  // deletion
            if i + 1 < n, codes[i] != codes[i + 1] {
                let swapped = prefix[i] << 10 | codes[i + 1] << 5 | codes[i]
                body(PackedLetters(bits: swapped << UInt64(5 * (n - 2 - i)) | suffix[i + 2]))
            }
            for code in UInt64(1)...26 where code != codes[i] {
                body(PackedLetters(bits: (prefix[i] << 5 | code) << tail | suffix[i + 1]))
            }
        }
        for i in 0...n {
            let tail = UInt64(5 * (n - i))
            for code in UInt64(1)...26 {
                body(PackedLetters(bits: (prefix[i] << 5 | code) << tail | suffix[i]))
            }
        }
    }
}
