/// A sound key: words with equal keys may sound alike (flower/flour, tail/tale, knight/night).
///
/// Consonants are spelled by sound (ph = f, ck = k, soft c = s, soft g = j, kn- = n, wr- = r;
/// silent final e, gh and the l of -alk/-olk/-alm/-alf dropped; doubled letters merged); a run
/// of vowels keeps only its first letter (y counts as i, and w after a vowel belongs to the
/// vowel). The same algorithm as `phonetic_key` in `wordlist/build`; the wordlist tests check
/// that no two words share a key, and the parser suggests sound-alike words.
enum PhoneticKey {
    static func key(_ word: String) -> String {
        var w = Array(word.lowercased().utf8)
        let initial: [(String, String)] = [
            ("kn", "n"), ("gn", "n"), ("pn", "n"), ("wr", "r"), ("ps", "s"), ("wh", "w"), ("x", "z"),
        ]
        for (old, new) in initial where w.starts(with: old.utf8) {
            w = Array(new.utf8) + w[old.utf8.count...]
            break
        }
        if w.count > 3, w.last == ascii("e"), !isVowel(w[w.count - 2]) { w.removeLast() }
        if w.count >= 2, w[w.count - 2] == ascii("m"), w.last == ascii("b") { w.removeLast() }
        for silentL in ["alk", "olk", "alm", "alf"] {
            w = replacing(Array(silentL.utf8), with: [silentL.utf8.first!, silentL.utf8.last!], in: w)
        }
        let digraphs: [(String, String)] = [
            ("tch", "X"), ("sch", "SK"), ("ch", "X"), ("sh", "X"), ("ph", "F"), ("th", "0"),
            ("ck", "K"), ("dg", "J"), ("gh", ""),
        ]
        var out: [UInt8] = []
        var i = 0
        scan: while i < w.count {
            for (old, new) in digraphs where w[i...].starts(with: old.utf8) {
                out += Array(new.utf8)
                i += old.utf8.count
                continue scan
            }
            let c = w[i]
            let next: UInt8? = i + 1 < w.count ? w[i + 1] : nil
            if isVowel(c), !(c == ascii("y") && i == 0) {
                var j = i
                while j < w.count, isVowel(w[j]) || (w[j] == ascii("w") && j > i) { j += 1 }
                out.append(c == ascii("y") ? ascii("i") : c)
                i = j
                continue
            }
            switch c {
            case ascii("c"): out.append(next.map(isSoftener) == true ? ascii("S") : ascii("K"))
            case ascii("g"): out.append(next.map(isSoftener) == true ? ascii("J") : ascii("G"))
            case ascii("q"): out.append(ascii("K"))
            case ascii("x"): out += [ascii("K"), ascii("S")]
            case ascii("z"): out.append(ascii("S"))
            case ascii("h") where !(next.map(isVowel) ?? false): break
            default: out.append(c >= ascii("a") && c <= ascii("z") ? c - 32 : c)
            }
            i += 1
        }
        var key: [UInt8] = []
        for letter in out where key.last != letter { key.append(letter) }
        return String(decoding: key, as: UTF8.self)
    }

    private static func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(ascii: character) }

    private static func isVowel(_ letter: UInt8) -> Bool { "aeiouy".utf8.contains(letter) }

    private static func isSoftener(_ letter: UInt8) -> Bool { "eiy".utf8.contains(letter) }

    private static func replacing(_ target: [UInt8], with replacement: [UInt8], in text: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var i = 0
        while i < text.count {
            if text[i...].starts(with: target) {
                result += replacement
                i += target.count
            } else {
                result.append(text[i])
                i += 1
            }
        }
        return result
    }
}
