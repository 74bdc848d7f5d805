import WordCodes

/// Typing a code at the `eleven join` prompt, as a pure state machine: keys in, what to show out.
/// Tab completes the word being typed from the wordlist (``Completion``): one candidate is taken
/// with a `-` after it, several are narrowed to their common start and listed when that adds
/// nothing. The terminal (raw mode, bytes to keys, drawing) is the caller's business.
public struct CodeEntry: Sendable {
    public enum Key: Equatable, Sendable {
        case character(Character)
        case tab
        case backspace
        /// Ctrl-U: clear the line.
        case clearLine
        /// Ctrl-W: delete the last word.
        case deleteWord
        case enter
        /// Ctrl-C, or Ctrl-D on an empty line.
        case cancel
    }

    public enum Effect: Equatable, Sendable {
        /// Show the line as it is now.
        case redraw(String)
        /// Several words fit: show them under the line.
        case suggestions([String])
        /// Nothing fits (or nothing to do).
        case bell
        /// The person is done: the text typed.
        case submit(String)
        case cancelled
    }

    public private(set) var text = ""
    /// How many suggestions are shown at most.
    public static let suggestionLimit = 12
    /// Longest line accepted (a code is far shorter; this bounds pasted junk).
    public static let maxLength = 256
    /// The completions of the line as typed, each the line with its last word completed.
    private let candidates: @Sendable (String) -> [String]

    /// `candidates`: Eleven's word list by default; another for another kind of code (a Magic
    /// Wormhole code at `eleven receive`).
    public init(candidates: @escaping @Sendable (String) -> [String] = { Completion.candidates(for: $0) }) {
        self.candidates = candidates
    }

    public mutating func press(_ key: Key) -> [Effect] {
        switch key {
        case .character(let c):
            guard !c.isNewline else { return press(.enter) }
            guard text.count < Self.maxLength, !(c.asciiValue.map { $0 < 32 || $0 == 127 } ?? false) else {
                return [.bell]
            }
            text.append(c)
            return [.redraw(text)]
        case .backspace:
            guard !text.isEmpty else { return [.bell] }
            text.removeLast()
            return [.redraw(text)]
        case .clearLine:
            text = ""
            return [.redraw(text)]
        case .deleteWord:
            while let last = text.last, last == "-" || last == " " { text.removeLast() }
            while let last = text.last, last != "-" && last != " " { text.removeLast() }
            return [.redraw(text)]
        case .enter:
            return [.submit(text)]
        case .cancel:
            return [.cancelled]
        case .tab:
            return complete()
        }
    }

    private mutating func complete() -> [Effect] {
        let candidates = candidates(text)
        guard let first = candidates.first else { return [.bell] }
        if candidates.count == 1 {
            text = first + "-"
            return [.redraw(text)]
        }
        let common = candidates.dropFirst().reduce(first) { $0.commonPrefix(with: $1) }
        if common.count > text.count {
            text = common
            return [.redraw(text)]
        }
        // Each candidate is the line with its last word completed: show the words alone.
        let words = candidates.map { $0.split { !$0.isLetter }.last.map(String.init) ?? $0 }
        return [.suggestions(Array(words.prefix(Self.suggestionLimit))), .redraw(text)]
    }
}

extension String {
    fileprivate func commonPrefix(with other: String) -> String {
        String(zip(self, other).prefix { $0 == $1 }.map(\.0))
    }
}
