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
///    also one mistake away from another word typed in full (they could be that word
///    mistyped): then both are listed and the input refused. This is what makes the guarantee
///    below hold. The list is built so that no word's first four letters are one mistake from
///    another word, so four letters always complete; five or more may be refused.
/// 3. Letters one mistake (a letter added, missing, wrong, or two neighbours swapped) away from
///    exactly one word typed in full are read as that word; from several, refused with the
///    list of candidates.
/// 4. Only when no word is one mistake away: four or more letters one mistake away from the
///    start of exactly one word are read as that word (a mistyped abbreviation); from several
///    starts, refused.
///
/// Guarantee: a word typed in full with one mistake is read as that word or refused, never as
/// another word (the list has no two words one edit apart, the word itself is always a rule 3
/// candidate, and rules 2 and 4 step aside when a full word is one edit away).
/// Known limit: a mistyped abbreviation that is, exactly, another word (rule 1) or one mistake
/// from another full word (rule 3) is read as that word; the caller shows the reading
/// ("reading 'pinq' as 'pine'") and the PAKE confirmation refuses a wrong code.
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
        if near.indices.isEmpty, searchable, letters.count >= Wordlist.uniquePrefixLength {
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
        for (index, word) in Wordlist.generatedWords.enumerated() {
            let distance = EditDistance.damerauLevenshtein(typed, word, limit: 2)
            if distance <= 2 {
                scored.append((distance, word))
            } else if soundKeys[index] == key {
                scored.append((2, word))
            } else if letters.count >= Wordlist.uniquePrefixLength, word.count > letters.count,
                EditDistance.damerauLevenshtein(typed, String(word.prefix(letters.count)), limit: 1) <= 1
            {
                scored.append((2, word))
            }
        }
        scored.sort { ($0.distance, $0.word) < ($1.distance, $1.word) }
        return scored.prefix(limit).map(\.word)
    }

    /// Sound keys of the list words, by index.
    static let soundKeys = Wordlist.generatedWords.map(PhoneticKey.key)

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
