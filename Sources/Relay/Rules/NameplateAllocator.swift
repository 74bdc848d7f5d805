import Mailbox

/// Picks a random free nameplate of the shortest length it finds, as the reference does: 1–9 if
/// any is free, else 10–99, else 100–999 (tried by 64 random draws, not by looking at all 900:
/// on a busy relay most rest, and every allocation would pay for all of them), else up to 1000
/// random tries in 1000–999999. "Taken" means any existing nameplate of the AppID, and any
/// short one still resting after its deletion.
enum NameplateAllocator {
    /// The 999 short names, made once (index n − 1), so probing them allocates nothing.
    static let shortNames = (1..<1000).map { Nameplate(number: $0) }
    static let threeDigitDraws = 64

    /// The names allocation must pass over, looked up in place (allocation runs under the
    /// core's lock: nothing is copied).
    struct Taken {
        var live: Set<Nameplate>
        var resting: [Nameplate: RelayInstant] = [:]
        /// How many one-, two- and three-digit names are live or resting; nil: not counted
        /// (every length is looked at).
        var unavailableShort: [Int]? = nil
        func contains(_ name: Nameplate) -> Bool { live.contains(name) || resting[name] != nil }
        /// An upper bound (a resting name is never live at the same time, so it is exact).
        var count: Int { live.count + resting.count }
        /// Whether every name of `length` digits (1 to 3) is live or resting.
        func isFull(length: Int) -> Bool {
            guard let unavailableShort else { return false }
            return unavailableShort[length - 1] >= [9, 90, 900][length - 1]
        }
    }

    /// 1, 2 or 3 for the names allocation makes of that many digits ("7", "42", "512"; not
    /// "07" or "0"), else nil.
    static func shortLength(_ name: Nameplate) -> Int? {
        let raw = name.value.utf8
        guard (1...3).contains(raw.count), raw.first != UInt8(ascii: "0") else { return nil }
        return raw.count
    }

    static func allocate(
        taken: Taken, using random: inout some RandomNumberGenerator
    ) -> Nameplate? {
        // The 99 names of one and two digits are all looked at: a random one of the free ones.
        for (length, range) in [(1, 1..<10), (2, 10..<100)] where !taken.isFull(length: length) {
            var free: [Int] = []
            for n in range where !taken.contains(shortNames[n - 1]) { free.append(n) }
            if let n = free.randomElement(using: &random) { return shortNames[n - 1] }
        }
        for _ in 0..<(taken.isFull(length: 3) ? 0 : threeDigitDraws) {
            let name = shortNames[Int.random(in: 100..<1000, using: &random) - 1]
            if !taken.contains(name) { return name }
        }
        for _ in 0..<1000 {
            let candidate = Nameplate(number: Int.random(in: 1000..<1_000_000, using: &random))
            if !taken.contains(candidate) { return candidate }
        }
        return nil
    }

    /// Names free here for the shared store to choose from, in order of preference (the first
    /// one still free on every node wins): up to `count` of each length from one to three
    /// digits, shuffled within a length, then `count / 2` random longer ones. Other nodes and
    /// this node's own answers still on their way may have taken the short ones; the longer
    /// ones make running out practically impossible.
    static func candidates(
        taken: Taken, count: Int, using random: inout some RandomNumberGenerator
    ) -> [Nameplate] {
        var out: [Nameplate] = []
        for (length, range) in [(1, 1..<10), (2, 10..<100), (3, 100..<1000)]
        where !taken.isFull(length: length) {
            out += sample(range, free: taken, count: count, using: &random)
        }
        var chosen = Set(out)
        let target = out.count + count / 2
        for _ in 0..<1000 where out.count < target {
            let candidate = Nameplate(number: Int.random(in: 1000..<1_000_000, using: &random))
            if !taken.contains(candidate), chosen.insert(candidate).inserted { out.append(candidate) }
        }
        return out
    }

    /// Up to `count` names of `range` not in `taken`, a uniformly random choice in random
    /// order (all of them, shuffled, when fewer are free). Runs on every allocation under the
    /// core's lock, so it does not look at every name of the range when it need not: while
    /// most of the range is free, it draws random numbers until it has `count` free ones.
    static func sample(
        _ range: Range<Int>, free taken: Taken, count: Int,
        using random: inout some RandomNumberGenerator
    ) -> [Nameplate] {
        if taken.count * 2 < range.count && count * 2 < range.count {
            var picked: Set<Int> = []
            var out: [Nameplate] = []
            // At least half the range is free and `count` is under half of it, so each draw
            // is new and free with probability above 1/4: this many draws practically always
            // suffice; if not, the whole range is looked at below.
            for _ in 0..<(count * 16) where out.count < count {
                let n = Int.random(in: range, using: &random)
                guard picked.insert(n).inserted else { continue }
                let name = n < 1000 ? shortNames[n - 1] : Nameplate(number: n)
                if !taken.contains(name) { out.append(name) }
            }
            if out.count == count { return out }
        }
        var free = range.map { $0 < 1000 ? shortNames[$0 - 1] : Nameplate(number: $0) }
            .filter { !taken.contains($0) }
        // A random `count` of them in random order: the first steps of a Fisher-Yates
        // shuffle (one random number per name kept, not per name free).
        let kept = min(count, free.count)
        for i in 0..<kept {
            free.swapAt(i, Int.random(in: i..<free.count, using: &random))
        }
        return Array(free.prefix(kept))
    }
}
