import Foundation
import WordCodes

/// `eleven-bench codes`: the measured entropy of generated codes and, over a seeded sample of
/// single-typo inputs, how many are corrected, refused as ambiguous or unknown, and misread
/// (must be zero). Also the parse time of a mistyped code against a clean one (the reference,
/// measured in the same run).
func runCodesBench(_ arguments: [String]) -> Int32 {
    var samples = 1_000_000
    var seed: UInt64 = 2048
    var draws = 2_000_000
    var index = 0
    func value(_ name: String) -> String? {
        index += 1
        guard index < arguments.count else {
            FileHandle.standardError.write(Data("eleven-bench codes: \(name) needs a value\n".utf8))
            return nil
        }
        return arguments[index]
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--samples":
            guard let text = value("--samples"), let number = Int(text), number > 0 else { return 2 }
            samples = number
        case "--seed":
            guard let text = value("--seed"), let number = UInt64(text) else { return 2 }
            seed = number
        case "--draws":
            guard let text = value("--draws"), let number = Int(text), number > 0 else { return 2 }
            draws = number
        case "--help", "-h":
            print(
                """
                usage: eleven-bench codes [--samples N] [--seed S] [--draws D]

                  --samples N  single-typo codes to parse (default 1000000)
                  --seed S     seed of the typo sample, for reproducible numbers (default 2048)
                  --draws D    words drawn from the system CSPRNG for the entropy estimate
                               (default 2000000)
                """)
            return 0
        default:
            FileHandle.standardError.write(
                Data(
                    benchUsageError(
                        "unknown option '\(arguments[index])'", usage: "usage: eleven-bench codes [options]"
                    ).utf8))
            return 2
        }
        index += 1
    }
    measureEntropy(draws: draws)
    measureAbbreviations()
    let misread = measureTypos(samples: samples, seed: seed)
    return misread == 0 ? 0 : 1
}

private func measureEntropy(draws: Int) {
    var counts = [Int](repeating: 0, count: Wordlist.count)
    let nameplate = Nameplate(1)!
    var drawn = 0
    while drawn < draws {
        for word in Code.generate(nameplate: nameplate, wordCount: Code.wordCountRange.upperBound).words {
            counts[word.index] += 1
        }
        drawn += Code.wordCountRange.upperBound
    }
    let total = Double(drawn)
    let entropy = counts.reduce(0.0) { sum, count in
        guard count > 0 else { return sum }
        let p = Double(count) / total
        return sum - p * log2(p)
    }
    // A plug-in estimate from a finite sample falls short of the true value by about
    // (k - 1) / (2 n ln 2) bits (Miller–Madow); printed so the two can be compared.
    let bias = Double(Wordlist.count - 1) / (2 * total * log(2))
    print("wordlist: \(Wordlist.count) words, \(Wordlist.bitsPerWord) bits per word")
    print(
        String(
            format:
                "measured entropy per word: %.4f bits (plug-in, %d CSPRNG draws; +%.4f sample bias = %.4f)",
            entropy, drawn, bias, entropy + bias))
    print(
        String(
            format: "min/max draws per word: %d/%d (expected %.1f)", counts.min()!, counts.max()!,
            total / Double(Wordlist.count)))
    for words in [2, 3, 4] {
        print("code of \(words) words: \(Code.entropyBits(wordCount: words)) bits")
    }
}

private func measureAbbreviations() {
    for length in [4, 5] {
        var read = 0
        var refused = 0
        var words = 0
        for word in Wordlist.words where word.count > length {
            words += 1
            let start = String(word.prefix(length))
            if let parsed = try? CodeParser.parse("\(start)-\(start)-1"), parsed.code.words[0].text == word {
                read += 1
            } else {
                refused += 1
            }
        }
        print(
            String(
                format:
                    "first %d letters typed alone: %d of %d words read (%.1f%%), %d refused as also one edit from another word",
                length, read, words, 100 * Double(read) / Double(max(words, 1)), refused))
    }
}

private enum TypoClass: Int, CaseIterable {
    case insertion, deletion, substitution, transposition

    var name: String {
        switch self {
        case .insertion: "insertion"
        case .deletion: "deletion"
        case .substitution: "substitution"
        case .transposition: "transposition"
        }
    }

    func apply(to word: [UInt8], using generator: inout BenchGenerator) -> [UInt8] {
        var letters = word
        switch self {
        case .insertion:
            letters.insert(randomLetter(&generator), at: Int.random(in: 0...letters.count, using: &generator))
        case .deletion:
            letters.remove(at: Int.random(in: 0..<letters.count, using: &generator))
        case .substitution:
            let at = Int.random(in: 0..<letters.count, using: &generator)
            var letter = randomLetter(&generator)
            while letter == letters[at] { letter = randomLetter(&generator) }
            letters[at] = letter
        case .transposition:
            // Only swaps of two different neighbours change the word.
            let places = (0..<(letters.count - 1)).filter { letters[$0] != letters[$0 + 1] }
            let at = places[Int.random(in: 0..<places.count, using: &generator)]
            letters.swapAt(at, at + 1)
        }
        return letters
    }

    private func randomLetter(_ generator: inout BenchGenerator) -> UInt8 {
        UInt8(ascii: "a") + UInt8.random(in: 0..<26, using: &generator)
    }
}

private struct Tally {
    var total = 0
    var corrected = 0
    var ambiguous = 0
    var unknown = 0
    var otherError = 0
    var misread = 0

    func line(_ name: String) -> String {
        func percent(_ part: Int) -> String {
            String(format: "%6.2f%%", 100 * Double(part) / Double(max(total, 1)))
        }
        let label = name.padding(toLength: 14, withPad: " ", startingAt: 0)
        let count = String(total).padding(toLength: 8, withPad: " ", startingAt: 0)
        return "  \(label) \(count) corrected \(percent(corrected))  ambiguous \(percent(ambiguous))  "
            + "unknown \(percent(unknown))  other \(otherError)  misread \(misread)"
    }
}

/// Returns the number of misreadings (a code different from the original, without error).
private func measureTypos(samples: Int, seed: UInt64) -> Int {
    var generator = BenchGenerator(seed: seed)
    var byClass = [Tally](repeating: Tally(), count: TypoClass.allCases.count)
    var all = Tally()
    var examples: [String] = []
    let words = Wordlist.words.map { Array($0.utf8) }
    var typedCodes: [String] = []
    var cleanCodes: [String] = []
    let clock = ContinuousClock()
    var typoTime = Duration.zero
    for _ in 0..<samples {
        let first = Int.random(in: 0..<Wordlist.count, using: &generator)
        let second = Int.random(in: 0..<Wordlist.count, using: &generator)
        let nameplate = Int.random(in: 1...Nameplate.maximum, using: &generator)
        let position = Int.random(in: 0...1, using: &generator)
        let typo = TypoClass.allCases.randomElement(using: &generator)!
        var parts = [words[first], words[second]]
        parts[position] = typo.apply(to: parts[position], using: &generator)
        let typed =
            String(decoding: parts[0], as: UTF8.self) + "-" + String(decoding: parts[1], as: UTF8.self)
            + "-\(nameplate)"
        let original = Wordlist.words[first] + "-" + Wordlist.words[second] + "-\(nameplate)"
        if typedCodes.count < 20_000 {
            typedCodes.append(typed)
            cleanCodes.append(original)
        }
        var tally = byClass[typo.rawValue]
        tally.total += 1
        let start = clock.now
        do {
            let parsed = try CodeParser.parse(typed)
            if parsed.code.description == original {
                tally.corrected += 1
            } else {
                tally.misread += 1
                if examples.count < 10 { examples.append("\(typed) -> \(parsed.code) (meant \(original))") }
            }
        } catch {
            switch error {
            case .ambiguousWord: tally.ambiguous += 1
            case .unknownWord: tally.unknown += 1
            default: tally.otherError += 1
            }
        }
        typoTime += clock.now - start
        byClass[typo.rawValue] = tally
    }
    for tally in byClass {
        all.total += tally.total
        all.corrected += tally.corrected
        all.ambiguous += tally.ambiguous
        all.unknown += tally.unknown
        all.otherError += tally.otherError
        all.misread += tally.misread
    }
    print("single-typo codes (seed \(seed), word pairs, typo class and place uniform): \(samples)")
    for typo in TypoClass.allCases { print(byClass[typo.rawValue].line(typo.name)) }
    print(all.line("all"))
    print(
        all.misread == 0
            ? "misreadings: 0 (no typo was read as a different code)" : "MISREADINGS: \(all.misread)")
    for example in examples { print("  \(example)") }

    // Parse cost: a mistyped code against the same codes typed correctly (the reference).
    let repeats = 3
    var cleanTime = Duration.zero
    var mistypedTime = Duration.zero
    for _ in 0..<repeats {
        var start = clock.now
        for code in cleanCodes { _ = try? CodeParser.parse(code) }
        cleanTime += clock.now - start
        start = clock.now
        for code in typedCodes { _ = try? CodeParser.parse(code) }
        mistypedTime += clock.now - start
    }
    let perClean = microseconds(cleanTime) / Double(cleanCodes.count * repeats)
    let perTyped = microseconds(mistypedTime) / Double(typedCodes.count * repeats)
    print(
        String(
            format: "parse time: clean %.2f µs, mistyped %.2f µs per code, ratio %.2f (whole sample: %.1f s)",
            perClean, perTyped, perTyped / perClean, microseconds(typoTime) / 1e6))
    return all.misread
}

private func microseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e6 + Double(attoseconds) / 1e12
}

/// SplitMix64, seeded so the typo sample is reproducible.
private struct BenchGenerator: RandomNumberGenerator {
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
