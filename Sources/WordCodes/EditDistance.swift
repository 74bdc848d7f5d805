/// Damerau–Levenshtein distance in its "optimal string alignment" form (insertions, deletions,
/// substitutions and transpositions of adjacent letters, each costing 1), the distance the
/// wordlist and the typo rules are defined by (and the one `eleven` suggests commands by).
public enum EditDistance {
    /// The distance between `a` and `b`, or any value above `limit` once it must exceed it.
    public static func damerauLevenshtein(_ a: String, _ b: String, limit: Int = .max) -> Int {
        let s = Array(a.utf8)
        let t = Array(b.utf8)
        if abs(s.count - t.count) > limit { return limit + 1 }
        if s.isEmpty { return t.count }
        if t.isEmpty { return s.count }
        var before = [Int](repeating: 0, count: t.count + 1)
        var previous = Array(0...t.count)
        var current = [Int](repeating: 0, count: t.count + 1)
        for i in 1...s.count {
            current[0] = i
            var rowMinimum = current[0]
            for j in 1...t.count {
                let cost = s[i - 1] == t[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, s[i - 1] == t[j - 2], s[i - 2] == t[j - 1] {
                    value = min(value, before[j - 2] + 1)
                }
                current[j] = value
                rowMinimum = min(rowMinimum, value)
            }
            if rowMinimum > limit { return limit + 1 }
            (before, previous, current) = (previous, current, before)
        }
        return previous[t.count]
    }
}
