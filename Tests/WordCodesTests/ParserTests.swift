import Foundation
import Testing

@testable import WordCodes

@Suite struct ParserTests {
    static let canonical = "coral-piano-42"

    func parse(_ text: String) throws -> ParsedCode { try CodeParser.parse(text) }

    @Test(arguments: [
        "coral-piano-42", "CORAL-PIANO-42", "  coral-piano-42\n", "coral piano 42", "coral_piano_42",
        "coral.piano.42", "coral--piano---42", "coral – piano — 42", "coral‐piano‑42", "42-coral-piano",
        "42 coral piano", "coral-piano42",
        "coralpiano-42".replacingOccurrences(of: "coralpiano", with: "coral piano"),
        "\"coral-piano-42\"", "«coral piano 42»", "-coral-piano-42-", "coral/piano/42", "Coral Piano 42",
        "https://eleven.example/invite#Paul/coral-piano-42", "https://eleven.example/invite#coral-piano-42",
        "eleven.example/invite#Paul%20Smith/coral-piano-42", "https://h/invite#Paul/coral%20piano%2042",
        "ｃｏｒａｌ－ｐｉａｎｏ－４２", "coral\u{00A0}piano\u{3000}42", "\u{FEFF}coral-pia\u{200B}no-42",
        "https://h/invite＃Paul／coral-piano-42", "cöral-piáno-42", "coral-pian-42",
        "coral-piano-042", "42\tcoral\tpiano", "coral, piano, 42", "corral-piano-42", "coral-pianoo-42",
    ])
    func acceptedForms(_ text: String) throws {
        let parsed = try parse(text)
        #expect(parsed.code.description == Self.canonical)
    }

    @Test func canonicalInputHasNoCorrections() throws {
        #expect(try parse("coral-piano-42").corrections.isEmpty)
    }

    @Test func correctionsSayWhatChanged() throws {
        #expect(try parse("CORAL-piano-42").corrections == [.lowercased])
        #expect(try parse("coral piano 42").corrections == [.separatorsNormalized])
        #expect(try parse("42-coral-piano").corrections == [.nameplateMoved])
        #expect(try parse("coral-piano42").corrections == [.separatorsNormalized])
        #expect(try parse("coral-piano-007").code.nameplate.value == "7")
        #expect(try parse("coral-piano-007").corrections == [.nameplateLeadingZeros(typed: "007", read: "7")])
        #expect(try parse("\"coral-piano-42\"").corrections == [.quotesRemoved])
        #expect(try parse("coral-pian-42").corrections == [.completed(typed: "pian", word: "piano")])
        #expect(try parse("coral-piono-42").corrections == [.typoCorrected(typed: "piono", word: "piano")])
        #expect(try parse("coral-piono-42").corrections.first?.message == "reading 'piono' as 'piano'")
        #expect(try parse("cöral-piano-42").corrections == [.accentsRemoved(typed: "cöral", read: "coral")])
        #expect(try parse("ｃｏｒａｌ-piano-42").corrections == [.unicodeNormalized])
        #expect(
            try parse("https://h/invite#Paul/coral-piano-42").corrections == [.readFromLink("coral-piano-42")]
        )
        #expect(
            try parse("elevenmessenger://add?url=https%3A%2F%2Fh%2Finvite%23Paul%2Fcoral-piano-42")
                .corrections
                == [.readFromLink("coral-piano-42")])
        let many = try parse("  42 CORAL pian ")
        #expect(
            many.corrections == [
                .separatorsNormalized, .lowercased, .nameplateMoved, .completed(typed: "pian", word: "piano"),
            ])
        #expect(many.corrections.allSatisfy { !$0.code.isEmpty && !$0.message.isEmpty })
    }

    @Test func moreWordsOnRequest() throws {
        let parsed = try parse("coral-piano-tulip-violin-7")
        #expect(parsed.code.words.map(\.text) == ["coral", "piano", "tulip", "violin"])
        #expect(parsed.code.entropyBits == 44)
        #expect(throws: CodeError.tooManyWords(found: 4, maximum: 3)) {
            try CodeParser.parse("coral-piano-tulip-violin-7", wordCounts: 2...3)
        }
    }

    // MARK: - Errors

    @Test(arguments: [
        ("", "empty"), ("   \n\t", "empty"), ("--- ...", "empty"), ("https://h/invite#", "empty"),
        ("coral-piano", "missing-nameplate"), ("coral-piano-0", "invalid-nameplate"),
        ("coral-piano-1234567", "invalid-nameplate"), ("coral-42-piano", "misplaced-nameplate"),
        ("4-coral-piano-2", "misplaced-nameplate"), ("coral-42", "too-few-words"), ("42", "too-few-words"),
        ("a-b-c-d-e-f-g-h-i-42", "too-many-words"), ("coral-zqxj-42", "unknown-word"),
        ("coral-piano!-42", "invalid-character"), ("coral-пиано-42", "unsupported-script"),
        ("соral-piano-42", "unsupported-script"), ("coral-ピアノ-42", "unsupported-script"),
        ("coral-straße-42", "invalid-character"), ("coral-piano-٤٢", "invalid-character"),
        ("coral-piano-42 😀", "invalid-character"), ("coral-piano-4.2", "misplaced-nameplate"),
    ])
    func errorsNameTheProblem(_ text: String, _ code: String) {
        do {
            let parsed = try CodeParser.parse(text)
            Issue.record("parsed '\(text)' as \(parsed.code)")
        } catch {
            #expect(error.code == code, "\(text): \(error.message)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test func tooLongInputIsRefusedBeforeReading() {
        let long = String(repeating: "coral-", count: 100) + "42"
        #expect(throws: CodeError.tooLong(bytes: long.utf8.count, limit: 256)) { try CodeParser.parse(long) }
        let huge = String(repeating: "é", count: 1_000_000)
        #expect(throws: CodeError.tooLong(bytes: 2_000_000, limit: 256)) { try CodeParser.parse(huge) }
        // Exactly at the limit is read (and fails for its own reason).
        let atLimit = String(repeating: "a", count: 253) + "-42"
        #expect(atLimit.utf8.count == 256)
        #expect(throws: CodeError.self) { try CodeParser.parse(atLimit) }
    }

    @Test func unknownWordSuggests() {
        do {
            _ = try CodeParser.parse("coral-paino-42".replacingOccurrences(of: "paino", with: "pxanx"))
            Issue.record("should fail")
        } catch {
            guard case .unknownWord(let word, let suggestions) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(word == "pxanx")
            #expect(suggestions.contains("piano"))
            #expect(error.message.contains("Did you mean"))
        }
    }

    @Test func ambiguousTypoListsCandidatesAndNeverGuesses() throws {
        // Find a string one edit from two list words and check that it is refused.
        let words = Wordlist.words
        var found: (typed: String, candidates: Set<String>)?
        search: for word in words {
            for typo in Typo.substitution.all(of: word) where Wordlist.index(of: typo) == nil {
                let hits = words.filter {
                    WordlistPropertyTests.withinOneEdit(Array($0.utf8), Array(typo.utf8))
                }
                if hits.count >= 2 {
                    found = (typo, Set(hits))
                    break search
                }
            }
        }
        let (typed, expected) = try #require(found)
        do {
            _ = try CodeParser.parse("\(typed)-\(typed)-9")
            Issue.record("guessed for \(typed)")
        } catch {
            guard case .ambiguousWord(let word, let candidates) = error else {
                Issue.record("\(error)")
                return
            }
            #expect(word == typed)
            #expect(expected.isSubset(of: Set(candidates)))
            #expect(error.code == "ambiguous-word")
        }
    }

    // MARK: - Typos, every class at every position

    /// For a sample of words, every single typo in either word position is read back as the
    /// original code or refused; never as a different code.
    @Test(arguments: Typo.allCases)
    func singleTyposAreCorrectedOrRefusedNeverMisread(_ typo: Typo) throws {
        var generator = SeededGenerator(seed: 42)
        let nameplate = Nameplate(42)!
        var corrected = 0
        var refused = 0
        for round in 0..<10 {
            let code = Code.generate(nameplate: nameplate, wordCount: 2 + round % 2, using: &generator)
            for position in code.words.indices {
                for misspelled in typo.all(of: code.words[position].text) {
                    var texts = code.words.map(\.text)
                    texts[position] = misspelled
                    let typed =
                        round % 4 == 1
                        ? "42 " + texts.joined(separator: " ") : texts.joined(separator: "-") + "-42"
                    do {
                        let parsed = try CodeParser.parse(typed)
                        #expect(parsed.code == code, "\(typed) read as \(parsed.code)")
                        #expect(parsed.corrections.contains { $0.changesWord })
                        corrected += 1
                    } catch {
                        #expect(
                            ["ambiguous-word", "unknown-word"].contains(error.code), "\(typed): \(error)")
                        refused += 1
                    }
                }
            }
        }
        #expect(corrected > refused)
    }

    @Test func everyWordSurvivesEveryTransposition() throws {
        // Exhaustive over the whole list for one class, at the first word position.
        for word in Wordlist.words {
            for misspelled in Typo.transposition.all(of: word) {
                if let parsed = try? CodeParser.parse("\(misspelled)-coral-5") {
                    #expect(parsed.code.words.first?.text == word, "\(misspelled) read as \(parsed.code)")
                }
            }
        }
    }

    @Test func everyFourLetterStartNamesItsWord() throws {
        // Exhaustive: four letters typed alone are read as the one word they start, in either
        // position, with the completion reported.
        var completed = 0
        for word in Wordlist.words where word.count > 4 {
            let start = String(word.prefix(4))
            let parsed = try CodeParser.parse("\(start)-\(start)-3")
            #expect(parsed.code.words.map(\.text) == [word, word], "\(start)")
            #expect(parsed.corrections == [.completed(typed: start, word: word)])
            completed += 1
        }
        #expect(completed > 1500)
    }

    @Test func longerStartThatIsAlsoATypoIsRefused() throws {
        // Five or more letters that start one word but are one edit from another word typed in
        // full are not completed (the person may have mistyped that other word); otherwise they
        // are. The list only guarantees four-letter starts, so both cases occur.
        let letters = Wordlist.words.map { Array($0.utf8) }
        var refused = 0
        var completed = 0
        for word in Wordlist.words.prefix(600) where word.count > 5 {
            for length in 5..<word.count {
                let start = Array(word.utf8.prefix(length))
                let near = letters.filter {
                    $0 != Array(word.utf8) && WordlistPropertyTests.withinOneEdit($0, start)
                }
                let typed = String(decoding: start, as: UTF8.self)
                if near.isEmpty {
                    #expect(try CodeParser.parse("\(typed)-\(typed)-3").code.words[0].text == word)
                    completed += 1
                } else {
                    #expect(throws: CodeError.self) { try CodeParser.parse("\(typed)-\(typed)-3") }
                    refused += 1
                }
            }
        }
        #expect(refused > 0 && completed > 0)
    }

    @Test func mistypedAbbreviation() throws {
        // The first five letters of a word with two letters swapped: read as that word when no
        // other word fits; otherwise refused, or read as a word the letters spell exactly or
        // one edit away (the documented limit).
        var corrected = 0
        for word in Wordlist.words.prefix(400) where word.count >= 6 {
            let start = String(word.prefix(5))
            for misspelled in Typo.transposition.all(of: start) {
                guard let parsed = try? CodeParser.parse("\(misspelled)-coral-8") else { continue }
                let read = parsed.code.words[0].text
                if read == word {
                    corrected += 1
                } else {
                    // The documented limit: the letters are exactly, or one edit from, another word.
                    let explained =
                        read.hasPrefix(misspelled)
                        || WordlistPropertyTests.withinOneEdit(Array(read.utf8), Array(misspelled.utf8))
                    #expect(explained, "\(misspelled) read as \(read), meant \(word)")
                }
            }
        }
        #expect(corrected > 0)
    }

    // MARK: - Garbage

    @Test func garbageNeverCrashes() {
        var generator = SeededGenerator(seed: 99)
        let alphabet = Array("abcxyzAZ09-_. \t\n#/%:😀éßЖ漢ｱ\u{0301}\u{200B}\u{FEFF}\"'«»‐–—")
        for _ in 0..<2000 {
            let length = Int.random(in: 0...40, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            do {
                let parsed = try CodeParser.parse(text)
                #expect((2...8).contains(parsed.code.words.count))
            } catch {
                #expect(!error.message.isEmpty)
            }
        }
        for _ in 0..<500 {
            let bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            _ = try? CodeParser.parse(String(decoding: bytes, as: UTF8.self))
        }
    }
}
