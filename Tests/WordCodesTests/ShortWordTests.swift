import Testing

@testable import WordCodes

/// One- and two-letter words: deleting a letter can leave the empty key, which no table holds.
/// (Found by the FuzzInviteLink target: `r-piano-42` crashed the reader.)
@Suite struct ShortWordTests {
    @Test(arguments: ["r-piano-42", "x-ioaano-42", "a-b-7", "q-piano-42", "piano-z-42", "ab-cd-3"])
    func shortWordsGetAnErrorNotACrash(_ text: String) {
        do {
            _ = try CodeParser.parse(text)
        } catch {
            #expect(!error.message.isEmpty)
        }
    }

    @Test func everySingleLetterReadsOrFails() {
        for letter in UInt8(ascii: "a")...UInt8(ascii: "z") {
            let match = WordMatcher.match([letter])
            if case .corrected(let index) = match { #expect(Word(index: index) != nil) }
            if case .exact(let index) = match { #expect(Word(index: index) != nil) }
        }
    }
}
