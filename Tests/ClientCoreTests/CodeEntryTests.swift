import ClientCore
import JoinProtocol
import Testing

/// The `eleven join` prompt's line editor: keys in, what to show out.
@Suite struct CodeEntryTests {
    func type(_ text: String, into entry: inout CodeEntry) -> [CodeEntry.Effect] {
        text.flatMap { entry.press(.character($0)) }
    }

    @Test func tabCompletesAUniqueWordAndAddsTheSeparator() {
        var entry = CodeEntry()
        _ = type("cora", into: &entry)
        #expect(entry.press(.tab) == [.redraw("coral-")])
        _ = type("pian", into: &entry)
        #expect(entry.press(.tab) == [.redraw("coral-piano-")])
        _ = type("42", into: &entry)
        #expect(entry.press(.enter) == [.submit("coral-piano-42")])
    }

    @Test func severalCandidatesAreNarrowedThenListed() {
        var entry = CodeEntry()
        _ = type("coral-pi", into: &entry)
        let effects = entry.press(.tab)
        guard case .suggestions(let words) = effects.first else {
            Issue.record("expected suggestions, got \(effects)")
            return
        }
        #expect(words.contains("piano") && words.allSatisfy { $0.hasPrefix("pi") })
        #expect(words.count <= CodeEntry.suggestionLimit)
        #expect(effects.last == .redraw("coral-pi"))
        // Nothing fits: a bell, the line unchanged.
        _ = type("qz", into: &entry)
        #expect(entry.press(.tab) == [.bell])
        #expect(entry.text == "coral-piqz")
    }

    @Test func editingKeys() {
        var entry = CodeEntry()
        #expect(entry.press(.backspace) == [.bell])
        _ = type("coral-piano", into: &entry)
        #expect(entry.press(.backspace) == [.redraw("coral-pian")])
        #expect(entry.press(.deleteWord) == [.redraw("coral-")])
        #expect(entry.press(.deleteWord) == [.redraw("")])
        _ = type("x", into: &entry)
        #expect(entry.press(.clearLine) == [.redraw("")])
        // Control characters are refused; a newline submits.
        #expect(entry.press(.character("\u{01}")) == [.bell])
        _ = type("ab", into: &entry)
        #expect(entry.press(.character("\n")) == [.submit("ab")])
        #expect(entry.press(.cancel) == [.cancelled])
    }

    @Test func longJunkIsBounded() {
        var entry = CodeEntry()
        let effects = type(String(repeating: "a", count: CodeEntry.maxLength + 10), into: &entry)
        #expect(entry.text.count == CodeEntry.maxLength)
        #expect(effects.suffix(10).allSatisfy { $0 == .bell })
        // Completion after a number offers nothing.
        var numbered = CodeEntry()
        _ = type("coral-42", into: &numbered)
        #expect(numbered.press(.tab) == [.bell])
    }
}
