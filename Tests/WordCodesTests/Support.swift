import Foundation
import TestSupport

@testable import WordCodes

/// The word-code tests' seeded generator (TestSupport's).
typealias SeededGenerator = SplitMix64

enum Fixtures {
    static let root = TestSupport.packageRoot
    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relativePath), encoding: .utf8)
    }
    static func wordsFile() throws -> [String] {
        try text("wordlist/words.txt").split(separator: "\n").map(String.init)
    }
}

/// One typing mistake applied to a word.
enum Typo: CaseIterable, CustomStringConvertible {
    case insertion, deletion, substitution, transposition

    var description: String {
        switch self {
        case .insertion: "insertion"
        case .deletion: "deletion"
        case .substitution: "substitution"
        case .transposition: "transposition"
        }
    }

    /// Every distinct misspelling of `word` of this kind.
    func all(of word: String) -> [String] {
        let letters = Array(word)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz")
        var out = Set<String>()
        switch self {
        case .insertion:
            for i in 0...letters.count {
                for c in alphabet {
                    var copy = letters
                    copy.insert(c, at: i)
                    out.insert(String(copy))
                }
            }
        case .deletion:
            for i in letters.indices {
                var copy = letters
                copy.remove(at: i)
                out.insert(String(copy))
            }
        case .substitution:
            for i in letters.indices {
                for c in alphabet where c != letters[i] {
                    var copy = letters
                    copy[i] = c
                    out.insert(String(copy))
                }
            }
        case .transposition:
            for i in letters.indices.dropLast() where letters[i] != letters[i + 1] {
                var copy = letters
                copy.swapAt(i, i + 1)
                out.insert(String(copy))
            }
        }
        out.remove(word)
        return out.sorted()
    }
}
