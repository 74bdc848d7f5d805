/// Completion for interactive prompts and shell completion.
public enum Completion {
    /// Completions of a partly typed code: `partial` with its last word completed, one string
    /// per list word that starts with the letters typed so far (so after four letters at most
    /// one). The text before the last word is kept as typed, so a shell can filter by prefix.
    /// Nothing is offered after a number or a character that cannot be in a code.
    public static func candidates(for partial: String) -> [String] {
        let scalars = Array(partial.unicodeScalars)
        var start = scalars.count
        while start > 0, !isSeparator(scalars[start - 1]) { start -= 1 }
        var head = String.UnicodeScalarView()
        head.append(contentsOf: scalars[..<start])
        var typed = ""
        for scalar in scalars[start...] {
            guard scalar.isASCII, scalar.properties.isAlphabetic else { return [] }
            typed.unicodeScalars.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
        }
        let prefix = String(head)
        return Wordlist.words(startingWith: typed).map { prefix + $0 }
    }

    /// The list words that start with `prefix` (any case).
    public static func words(startingWith prefix: String) -> [String] {
        Wordlist.words(startingWith: prefix.lowercased())
    }

    private static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || scalar.properties.generalCategory == .dashPunctuation
            || "_.,/:;+~|#".unicodeScalars.contains(scalar)
    }
}
