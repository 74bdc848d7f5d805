import WordCodes

/// The short authentication string of a confirmed join (``ShortAuthenticationString``) as three
/// words, so two people can compare it aloud. A man in the middle who guessed the code (its one
/// guess) shows the same words on both sides only by chance (2^-33).
public enum VerificationWords {
    /// Three words from the first 33 bits of `verifier` (the SAS bytes, at least 5).
    public static func words(for verifier: [UInt8]) -> [String] {
        guard verifier.count >= 5 else { return [] }
        var bits: UInt64 = 0
        for byte in verifier.prefix(5) { bits = bits << 8 | UInt64(byte) }
        // 40 bits in; use the top 33 as three 11-bit indices.
        return (0..<3).map { i in
            let index = Int((bits >> (40 - 11 * UInt64(i + 1))) & 0x7ff)
            return Wordlist.word(at: index) ?? "?"
        }
    }
}
