import Testing

@testable import WordCodes

/// Inputs the fuzz targets (`Fuzz/`) found crashing, kept so they never come back.
@Suite struct FuzzRegressionTests {
    /// A one-letter word: deleting its letter packs to 0, the lookup table's empty-slot mark,
    /// which used to "find" a word with an invalid index and crash the parser.
    @Test(arguments: ["x-piano-42", "https://x.example/invite#s://x.exampliano-42", "q coral 7"])
    func oneLetterWordIsAnError(input: String) {
        #expect(throws: CodeError.self) { try CodeParser.parse(input) }
    }

    @Test func oneLetterWordHasNoMatch() {
        #expect(WordMatcher.match(Array("x".utf8)) == .unknown)
    }
}
