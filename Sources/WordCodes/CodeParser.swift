import Foundation

/// A code read from typed text, with every change the parser made to read it.
public struct ParsedCode: Hashable, Sendable {
    public let code: Code
    /// What was changed, in the order it was done; empty when the input was canonical.
    public let corrections: [Correction]
}

/// Reads codes the way people type them.
///
/// Accepted: any case; spaces, underscores, dots, commas, slashes, en/em and other Unicode
/// dashes as separators, several in a row, or none between a word and the number
/// (`piano42`); surrounding white space and quotes; the number last (`coral-piano-42`) or
/// first (`42-coral-piano`, Magic Wormhole order); a word given by its first four or more
/// letters; an invite link (`https://host/invite#Paul/coral-piano-42`: the last slot of the
/// fragment); fullwidth and other compatibility forms (NFKC) and accented Latin letters.
/// Words with one mistake are corrected when exactly one list word fits (see `WordMatcher`).
/// Everything else is refused with a `CodeError` that names the problem.
public enum CodeParser {
    /// Longest input read, in UTF-8 bytes; anything longer is refused before any other work.
    public static let maximumInputBytes = 256

    public static func parse(
        _ input: String, wordCounts: ClosedRange<Int> = Code.wordCountRange
    ) throws(CodeError) -> ParsedCode {
        let bytes = input.utf8.count
        guard bytes <= maximumInputBytes else { throw .tooLong(bytes: bytes, limit: maximumInputBytes) }
        var notes = Notes()
        var text = trimmed(input)
        guard !text.isEmpty else { throw .empty }

        // NFKC leaves ASCII alone; only other text pays for it.
        let normalized =
            text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCompatibilityMapping
        if normalized != text {
            text = normalized
            notes.add(.unicodeNormalized)
        }
        if let code = codeFromLink(text) {
            text = code
            notes.add(.readFromLink(code))
        }
        let unquoted = strippingQuotes(text)
        if unquoted != text {
            text = unquoted
            notes.add(.quotesRemoved)
        }

        let tokens = try tokenize(text, notes: &notes)
        guard !tokens.isEmpty else { throw .empty }
        let (nameplate, wordTokens) = try nameplateAndWords(tokens, notes: &notes)
        guard wordTokens.count >= wordCounts.lowerBound else {
            throw .tooFewWords(found: wordTokens.count, minimum: wordCounts.lowerBound)
        }
        guard wordTokens.count <= wordCounts.upperBound else {
            throw .tooManyWords(found: wordTokens.count, maximum: wordCounts.upperBound)
        }
        var words: [Word] = []
        for token in wordTokens {
            words.append(try word(from: token, notes: &notes))
        }
        // The word count was checked against `wordCounts`; Code.init only fails outside 2...8.
        guard let code = Code(nameplate: nameplate, words: words) else {
            throw words.count < Code.wordCountRange.lowerBound
                ? .tooFewWords(found: words.count, minimum: Code.wordCountRange.lowerBound)
                : .tooManyWords(found: words.count, maximum: Code.wordCountRange.upperBound)
        }
        return ParsedCode(code: code, corrections: notes.list)
    }

    // MARK: - Steps

    private struct Notes {
        var list: [Correction] = []
        mutating func add(_ correction: Correction) {
            if !list.contains(correction) { list.append(correction) }
        }
    }

    private struct Token {
        enum Kind { case letters, digits }
        let kind: Kind
        /// As typed (after NFKC), for messages.
        let typed: String
        /// Letters: lowercase, accents removed (may still hold non-ASCII Latin letters such as
        /// 'ß', refused later). Digits: ASCII digits.
        let folded: String
    }

    private static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhitespace($0) }),
            let last = scalars.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    /// The code inside an invite link: the last `/` slot of the `#` fragment (or of the path
    /// when there is no fragment), percent-decoded. Nil when `text` is not a link.
    private static func codeFromLink(_ input: String) -> String? {
        var text = input
        // The app's link, `elevenmessenger://add?url=<the link, percent-encoded>`: read the link.
        if text.lowercased().hasPrefix("elevenmessenger://add?"),
            let url = text.split(separator: "?", maxSplits: 1).last?.split(separator: "&")
                .first(where: { $0.hasPrefix("url=") }),
            let link = url.dropFirst(4).removingPercentEncoding
        {
            text = link
        }
        let bytes = Array(text.utf8)
        let hasHash = bytes.contains(UInt8(ascii: "#"))
        let hasScheme = bytes.indices.dropLast(2).contains {
            bytes[$0] == UInt8(ascii: ":") && bytes[$0 + 1] == UInt8(ascii: "/")
                && bytes[$0 + 2] == UInt8(ascii: "/")
        }
        guard hasHash || hasScheme else { return nil }
        var rest = Substring(text)
        if let hash = rest.lastIndex(of: "#") { rest = rest[rest.index(after: hash)...] }
        if let slash = rest.lastIndex(of: "/") { rest = rest[rest.index(after: slash)...] }
        let slot = String(rest)
        return slot.removingPercentEncoding ?? slot
    }

    private static let quotes: Set<Unicode.Scalar> = Set("\"'`“”„‘’‚«»‹›()[]{}<>".unicodeScalars)

    private static func strippingQuotes(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !quotes.contains($0) && !isWhitespace($0) }),
            let last = scalars.lastIndex(where: { !quotes.contains($0) && !isWhitespace($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20, 0x09...0x0D: true
        case 0...0x7F: false
        default: scalar.properties.isWhitespace
        }
    }

    private static let asciiSeparators: Set<Unicode.Scalar> = Set("-_.,/:;+~|".unicodeScalars)

    private enum Class { case letter, digit, mark, separator, ignorable }

    private static func classify(_ scalar: Unicode.Scalar) throws(CodeError) -> Class {
        if scalar.isASCII {
            switch scalar.value {
            case 0x61...0x7A, 0x41...0x5A: return .letter
            case 0x30...0x39: return .digit
            default:
                if asciiSeparators.contains(scalar) || isWhitespace(scalar) { return .separator }
                throw .invalidCharacter(Character(scalar))
            }
        }
        let properties = scalar.properties
        if properties.isWhitespace || properties.generalCategory == .dashPunctuation
            || scalar == "\u{00B7}" || scalar == "\u{2022}"
        {
            return .separator
        }
        switch properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return .mark
        case .format: return .ignorable  // zero-width spaces, joiners, byte order marks
        case .decimalNumber: throw .invalidCharacter(Character(scalar))  // digits of other scripts
        default: break
        }
        if properties.isAlphabetic {
            // Latin letters with accents decompose to a–z plus marks; other Latin letters (ß, ø)
            // are refused as characters; letters of other scripts as a script.
            if isLatin(scalar) { return .letter }
            throw .unsupportedScript(Character(scalar))
        }
        throw .invalidCharacter(Character(scalar))
    }

    private static func isLatin(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00C0...0x024F, 0x1E00...0x1EFF, 0x2C60...0x2C7F, 0xA720...0xA7FF: true
        default: false
        }
    }

    /// Splits into letter and digit runs. Notes separators that are not single dashes between
    /// tokens, capital letters, and letter/digit runs that touch.
    private static func tokenize(_ text: String, notes: inout Notes) throws(CodeError) -> [Token] {
        var tokens: [Token] = []
        var current = String.UnicodeScalarView()
        var currentKind: Token.Kind?
        var separatorRun = String.UnicodeScalarView()

        func finish() throws(CodeError) {
            guard let kind = currentKind else { return }
            let typed = String(current)
            tokens.append(Token(kind: kind, typed: typed, folded: try fold(typed, kind: kind, notes: &notes)))
            current = String.UnicodeScalarView()
            currentKind = nil
        }

        for scalar in text.unicodeScalars {
            let kind: Token.Kind
            switch try classify(scalar) {
            case .separator:
                try finish()
                separatorRun.append(scalar)
                continue
            case .ignorable:
                notes.add(.unicodeNormalized)
                continue
            case .mark:
                guard currentKind == .letters else { throw .invalidCharacter(Character(scalar)) }
                current.append(scalar)
                continue
            case .letter: kind = .letters
            case .digit: kind = .digits
            }
            if let currentKind, currentKind != kind {
                try finish()
                notes.add(.separatorsNormalized)  // `piano42`: no separator between the runs
            }
            if !separatorRun.isEmpty {
                if tokens.isEmpty || String(separatorRun) != "-" { notes.add(.separatorsNormalized) }
                separatorRun = String.UnicodeScalarView()
            }
            currentKind = kind
            current.append(scalar)
        }
        try finish()
        if !separatorRun.isEmpty, !tokens.isEmpty { notes.add(.separatorsNormalized) }
        return tokens
    }

    /// Lowercases letters (noting capitals) and removes accents (noted per word).
    private static func fold(_ typed: String, kind: Token.Kind, notes: inout Notes) throws(CodeError)
        -> String
    {
        guard kind == .letters else { return typed }
        if typed.utf8.allSatisfy({ $0 < 0x80 }) {
            if typed.utf8.contains(where: { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) {
                notes.add(.lowercased)
            }
            return String(decoding: typed.utf8.map { $0 | 0x20 }, as: UTF8.self)
        }
        let lowered = typed.lowercased()
        if typed.unicodeScalars.contains(where: { $0.properties.isUppercase }) { notes.add(.lowercased) }
        var plain = String.UnicodeScalarView()
        for scalar in lowered.decomposedStringWithCanonicalMapping.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark: continue
            default: plain.append(scalar)
            }
        }
        let folded = String(plain)
        if let bad = folded.unicodeScalars.first(where: { !$0.isASCII }) {
            throw .invalidCharacter(Character(bad))
        }
        if folded != lowered { notes.add(.accentsRemoved(typed: typed, read: folded)) }
        return folded
    }

    private static func nameplateAndWords(
        _ tokens: [Token], notes: inout Notes
    ) throws(CodeError) -> (Nameplate, [Token]) {
        let numbers = tokens.indices.filter { tokens[$0].kind == .digits }
        guard let position = numbers.first else { throw .missingNameplate }
        if numbers.count > 1 { throw .misplacedNameplate(tokens[numbers[1]].typed) }
        guard position == 0 || position == tokens.count - 1 else {
            throw .misplacedNameplate(tokens[position].typed)
        }
        if position == 0, tokens.count > 1 { notes.add(.nameplateMoved) }
        let digits = tokens[position].folded
        let significant = String(digits.drop { $0 == "0" })
        guard !significant.isEmpty, significant.count <= 6 else {
            throw .invalidNameplate(tokens[position].typed)
        }
        let nameplate = try Nameplate(parsing: significant)
        if significant != digits { notes.add(.nameplateLeadingZeros(typed: digits, read: significant)) }
        var words = tokens
        words.remove(at: position)
        return (nameplate, words)
    }

    private static func word(from token: Token, notes: inout Notes) throws(CodeError) -> Word {
        let letters = Array(token.folded.utf8)
        switch WordMatcher.match(letters) {
        case .exact(let index):
            return Word(index: index)!
        case .completed(let index):
            let word = Word(index: index)!
            notes.add(.completed(typed: token.folded, word: word.text))
            return word
        case .corrected(let index):
            let word = Word(index: index)!
            notes.add(.typoCorrected(typed: token.folded, word: word.text))
            return word
        case .ambiguous(let indices):
            throw .ambiguousWord(token.folded, candidates: indices.compactMap(Wordlist.word(at:)))
        case .unknown:
            throw .unknownWord(token.folded, suggestions: WordMatcher.suggestions(for: letters))
        }
    }
}
