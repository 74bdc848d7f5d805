import Testing

@testable import WordCodes

@Suite struct CodeTests {
    @Test func canonicalForm() throws {
        let nameplate = try #require(Nameplate(42))
        let coral = try #require(Word("coral"))
        let piano = try #require(Word("piano"))
        let code = try #require(Code(nameplate: nameplate, words: [coral, piano]))
        #expect(code.description == "coral-piano-42")
        #expect(code.secretWords == "coral-piano")
        #expect(code.wordIndices == [Wordlist.index(of: "coral")!, Wordlist.index(of: "piano")!])
        #expect(code.entropyBits == 22)
        #expect(!code.debugDescription.contains("coral"))
        #expect(!code.debugDescription.contains("piano"))
    }

    @Test func entropyIsElevenBitsPerWord() {
        #expect(Code.entropyBits(wordCount: 2) == 22)
        #expect(Code.entropyBits(wordCount: 3) == 33)
        #expect(Code.entropyBits(wordCount: 8) == 88)
    }

    @Test func wordCountOutsideRangeIsRefused() throws {
        let nameplate = try #require(Nameplate(1))
        let word = try #require(Word(index: 0))
        #expect(Code(nameplate: nameplate, words: [word]) == nil)
        #expect(Code(nameplate: nameplate, words: Array(repeating: word, count: 9)) == nil)
        #expect(Code(nameplate: nameplate, words: Array(repeating: word, count: 8)) != nil)
    }

    @Test(arguments: [2, 3, 5, 8])
    func generateFormatParseRoundTrip(wordCount: Int) throws {
        var generator = SeededGenerator(seed: UInt64(wordCount))
        for round in 0..<200 {
            let nameplate = try #require(Nameplate(Int.random(in: 1...Nameplate.maximum, using: &generator)))
            let code = Code.generate(nameplate: nameplate, wordCount: wordCount, using: &generator)
            #expect(code.words.count == wordCount)
            #expect(code.nameplate == nameplate)
            let parsed = try CodeParser.parse(code.description)
            #expect(parsed.code == code, "round \(round)")
            #expect(parsed.corrections.isEmpty)
        }
    }

    @Test func generationUsesTheWholeList() {
        // Every index is reachable and the spread is flat: 40 960 draws, 20 expected per word.
        var generator = SeededGenerator(seed: 7)
        var counts = [Int](repeating: 0, count: Wordlist.count)
        let nameplate = Nameplate(1)!
        for _ in 0..<20_480 {
            for word in Code.generate(nameplate: nameplate, using: &generator).words {
                counts[word.index] += 1
            }
        }
        #expect(counts.min()! > 0)
        #expect(counts.max()! < 50)
        // Low and high halves of the index space are drawn equally often (no modulo skew).
        let low = counts[..<1024].reduce(0, +)
        #expect(abs(low - 20_480) < 600)
    }

    @Test func systemGeneratorGivesDifferentCodes() {
        let nameplate = Nameplate(5)!
        let codes = Set((0..<20).map { _ in Code.generate(nameplate: nameplate, wordCount: 3) })
        #expect(codes.count > 15)
    }

    @Test func nameplates() throws {
        #expect(Nameplate(0) == nil)
        #expect(Nameplate(-3) == nil)
        #expect(Nameplate(1_000_000) == nil)
        #expect(Nameplate(999_999)?.description == "999999")
        #expect(try Nameplate(parsing: "042") == Nameplate(42))
        for bad in ["", "0", "000", "1234567", "4a", "-1", "4 2", "٤٢"] {
            #expect(throws: CodeError.invalidNameplate(bad)) { try Nameplate(parsing: bad) }
        }
    }

    @Test func wordsByIndex() {
        #expect(Word(index: 0)?.text == Wordlist.words[0])
        #expect(Word(index: 2047)?.text == Wordlist.words[2047])
        #expect(Word(index: 2048) == nil)
        #expect(Word("PIANO") == nil)
    }
}

@Suite struct CompletionTests {
    @Test func completesTheLastWord() {
        let candidates = Completion.candidates(for: "coral-pi")
        #expect(candidates.contains("coral-piano"))
        #expect(candidates.allSatisfy { $0.hasPrefix("coral-pi") })
        #expect(candidates.count == Wordlist.words.filter { $0.hasPrefix("pi") }.count)
    }

    @Test func fourLettersGiveExactlyOne() {
        for word in Wordlist.words {
            let start = String(word.prefix(4))
            #expect(Completion.candidates(for: "42 " + start) == ["42 " + word])
        }
    }

    @Test func casesAndSeparators() {
        #expect(Completion.candidates(for: "CORAL_PIAN") == ["CORAL_piano"])
        #expect(Completion.candidates(for: "pian") == ["piano"])
        #expect(Completion.candidates(for: "coral piano ").count == 2048)
        #expect(Completion.candidates(for: "").count == 2048)
    }

    @Test func nothingAfterNumbersOrJunk() {
        #expect(Completion.candidates(for: "coral-piano-4").isEmpty)
        #expect(Completion.candidates(for: "coral-pi!").isEmpty)
        #expect(Completion.candidates(for: "coral-пи").isEmpty)
        #expect(Completion.candidates(for: "coral-zzzz").isEmpty)
        #expect(Completion.words(startingWith: "PIAN") == ["piano"])
    }
}
