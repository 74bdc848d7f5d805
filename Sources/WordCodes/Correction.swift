/// One change the parser made to what was typed, so the caller can tell the person exactly how
/// the code was read. Each case has a stable `code` and a human `message`.
public enum Correction: Hashable, Sendable, CustomStringConvertible {
    /// The code was taken from an invite link (the last part of its `#` fragment).
    case readFromLink(String)
    /// Compatibility forms were folded (fullwidth letters and digits, ligatures, odd spaces) or
    /// invisible characters (zero-width spaces, byte order marks) dropped.
    case unicodeNormalized
    /// Accents were dropped: `'piäno'` read as `'piano'`.
    case accentsRemoved(typed: String, read: String)
    /// Capital letters were read as small letters.
    case lowercased
    /// Quotes or brackets around the code were dropped.
    case quotesRemoved
    /// Separators other than one dash (spaces, dots, underscores, long dashes, several in a row,
    /// or none between a word and the number) were read as one dash.
    case separatorsNormalized
    /// The number came first (Magic Wormhole order) and was moved to the end.
    case nameplateMoved
    /// Leading zeros of the number were dropped: `007` read as `7`.
    case nameplateLeadingZeros(typed: String, read: String)
    /// A word's first letters (four or more) were completed to the one word they start.
    case completed(typed: String, word: String)
    /// A word one mistake (a letter added, missing, wrong, or two letters swapped) away from
    /// exactly one list word was read as that word.
    case typoCorrected(typed: String, word: String)

    /// Stable identifier of the case.
    public var code: String {
        switch self {
        case .readFromLink: "read_from_link"
        case .unicodeNormalized: "unicode_normalized"
        case .accentsRemoved: "accents_removed"
        case .lowercased: "lowercased"
        case .quotesRemoved: "quotes_removed"
        case .separatorsNormalized: "separators_normalized"
        case .nameplateMoved: "nameplate_moved"
        case .nameplateLeadingZeros: "nameplate_leading_zeros"
        case .completed: "completed"
        case .typoCorrected: "typo_corrected"
        }
    }

    /// Whether this reading changed a word (not only its form): worth showing the person.
    public var changesWord: Bool {
        switch self {
        case .accentsRemoved, .completed, .typoCorrected: true
        default: false
        }
    }

    /// What was changed, in words.
    public var message: String {
        switch self {
        case .readFromLink(let code): "reading the code '\(code)' from the invite link"
        case .unicodeNormalized: "reading wide or special characters as plain letters and digits"
        case .accentsRemoved(let typed, let read): "reading '\(typed)' as '\(read)' (without accents)"
        case .lowercased: "reading capital letters as small letters"
        case .quotesRemoved: "ignoring the quotes around the code"
        case .separatorsNormalized: "reading spaces, dots and other separators as dashes"
        case .nameplateMoved: "moving the number to the end"
        case .nameplateLeadingZeros(let typed, let read): "reading the number '\(typed)' as '\(read)'"
        case .completed(let typed, let word): "reading '\(typed)' as '\(word)'"
        case .typoCorrected(let typed, let word): "reading '\(typed)' as '\(word)'"
        }
    }

    public var description: String { message }
}
