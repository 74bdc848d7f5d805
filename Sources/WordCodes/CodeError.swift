/// Why a typed code could not be read. Each case has a stable machine-readable `code` (for
/// `--json` and exit codes) and a `message` a person can act on.
public enum CodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Nothing but white space (or separators) was given.
    case empty
    /// The input is longer than `CodeParser.maximumInputBytes` UTF-8 bytes.
    case tooLong(bytes: Int, limit: Int)
    /// A letter from another script (Cyrillic, Greek, CJK, …), which no code contains.
    case unsupportedScript(Character)
    /// A character that is neither a letter, a digit nor a separator.
    case invalidCharacter(Character)
    /// No number in the code.
    case missingNameplate
    /// The number is not a positive decimal of at most six digits.
    case invalidNameplate(String)
    /// More than one number, or the number between words.
    case misplacedNameplate(String)
    /// Fewer words than a code has.
    case tooFewWords(found: Int, minimum: Int)
    /// More words than a code has.
    case tooManyWords(found: Int, maximum: Int)
    /// A word that is not in the list and not one mistake away from any word.
    case unknownWord(String, suggestions: [String])
    /// A word that is one mistake away from several list words: the parser will not guess.
    case ambiguousWord(String, candidates: [String])

    /// Stable identifier of the case.
    public var code: String {
        switch self {
        case .empty: "empty"
        case .tooLong: "too_long"
        case .unsupportedScript: "unsupported_script"
        case .invalidCharacter: "invalid_character"
        case .missingNameplate: "missing_nameplate"
        case .invalidNameplate: "invalid_nameplate"
        case .misplacedNameplate: "misplaced_nameplate"
        case .tooFewWords: "too_few_words"
        case .tooManyWords: "too_many_words"
        case .unknownWord: "unknown_word"
        case .ambiguousWord: "ambiguous_word"
        }
    }

    /// What went wrong, in words a person can act on.
    public var message: String {
        switch self {
        case .empty:
            return "No code was given. A code looks like coral-piano-42."
        case .tooLong(let bytes, let limit):
            return "That is too long to be a code (\(bytes) bytes; a code is at most \(limit))."
        case .unsupportedScript(let character):
            return
                "'\(character)' is not a Latin letter. Codes use only the letters a to z, digits and dashes."
        case .invalidCharacter(let character):
            return
                "'\(character)' cannot be part of a code. Codes use only the letters a to z, digits and dashes."
        case .missingNameplate:
            return "The code has no number. A code ends with a number, like coral-piano-42."
        case .invalidNameplate(let text):
            return "'\(text)' is not a code number. The number is 1 to 999999."
        case .misplacedNameplate(let text):
            return "'\(text)' is in the wrong place. A code has one number, at the end (or the start)."
        case .tooFewWords(let found, let minimum):
            return "The code has \(found) word\(found == 1 ? "" : "s"); it needs at least \(minimum)."
        case .tooManyWords(let found, let maximum):
            return "The code has \(found) words; it has at most \(maximum)."
        case .unknownWord(let word, let suggestions):
            let hint = suggestions.isEmpty ? "" : " Did you mean \(Self.list(suggestions, joiner: "or"))?"
            return "'\(word)' is not a code word.\(hint)"
        case .ambiguousWord(let word, let candidates):
            return "'\(word)' could be \(Self.list(candidates, joiner: "or")). Please type that word again."
        }
    }

    public var description: String { message }

    static func list(_ words: [String], joiner: String) -> String {
        let quoted = words.map { "'\($0)'" }
        guard quoted.count > 1 else { return quoted.first ?? "" }
        return quoted.dropLast().joined(separator: ", ") + " \(joiner) " + quoted[quoted.count - 1]
    }
}
