import Foundation
import JoinProtocol
import PAKE

/// A Magic Wormhole code: `NAMEPLATE-word-word…` (`7-guitarist-revenge`).
///
/// The nameplate (decimal digits) is public: the relay sees it. The whole string, nameplate
/// included, is the SPAKE2 password (NFC-normalised UTF-8, as Python's client does), so the
/// words are the secret. `description` therefore shows only the nameplate; use ``text`` where
/// the person must see the code.
public struct WormholeCode: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The longest nameplate the reference relay accepts.
    public static let maxNameplateLength = 40
    /// An upper bound on the whole code, so a pasted novel is refused, not hashed.
    public static let maxLength = 500

    /// The public part.
    public let nameplate: Rendezvous.Nameplate
    /// The code as the person types it, NFC-normalised.
    public let text: String

    /// Parses a typed or given code. Surrounding whitespace (a pasted newline) is dropped; inside,
    /// nothing is changed: no lowercasing, because `7-Aztec-x` and `7-aztec-x` are different
    /// passwords to every Wormhole client. Words are not checked against the word list, as in
    /// the other clients (any words agreed out of band work).
    public init(parsing input: String) throws(WormholeError) {
        let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
            .precomposedStringWithCanonicalMapping
        guard !trimmed.isEmpty else { throw .invalidCode("the code is empty") }
        guard trimmed.utf8.count <= Self.maxLength else {
            throw .invalidCode("the code is longer than \(Self.maxLength) bytes")
        }
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 })
        else {
            throw .invalidCode("a code has no spaces; words are joined by '-' (like 7-guitarist-revenge)")
        }
        let parts = trimmed.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw .invalidCode("a code starts with a number and a '-' (like 7-guitarist-revenge)")
        }
        let nameplate = parts[0]
        guard !nameplate.isEmpty, nameplate.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .invalidCode("a code starts with its number (like 7-guitarist-revenge)")
        }
        guard nameplate.utf8.count <= Self.maxNameplateLength else {
            throw .invalidCode("the number at the start of the code is too long")
        }
        let words = parts[1].split(separator: "-", omittingEmptySubsequences: false)
        guard !words.contains(where: \.isEmpty) else {
            throw .invalidCode("the code has an empty word (two '-' in a row, or one at the end)")
        }
        self.nameplate = Rendezvous.Nameplate(String(nameplate))
        self.text = trimmed
    }

    /// A fresh code for an allocated nameplate: `wordCount` words, one random byte each, taken
    /// alternately from the odd (three-syllable) and even (two-syllable) lists.
    public init(
        nameplate: Rendezvous.Nameplate, wordCount: Int, using random: inout some RandomByteSource
    ) {
        precondition(wordCount >= 1, "a code needs at least one word")
        let bytes = random.bytes(count: wordCount)
        let words = bytes.enumerated().map { index, byte in
            index % 2 == 0 ? WormholeWordList.odd[Int(byte)] : WormholeWordList.even[Int(byte)]
        }
        self.nameplate = nameplate
        self.text = ([nameplate.value] + words).joined(separator: "-")
    }

    /// The SPAKE2 password: the UTF-8 bytes of the (already NFC) code.
    public var password: [UInt8] { Array(text.utf8) }

    /// The words (everything after the nameplate), as typed.
    public var words: [String] {
        text.split(separator: "-", omittingEmptySubsequences: false).dropFirst().map(String.init)
    }

    public var description: String { "WormholeCode(\(nameplate.value)-…)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["nameplate": nameplate]) }
}
