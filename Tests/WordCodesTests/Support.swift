import Foundation
import TestSupport

@testable import WordCodes

/// SplitMix64: a small seeded generator so property tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

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
