/// Picks a random free nameplate of the shortest possible length, as the reference does:
/// 1–9 if any is free, else 10–99, else 100–999; when all 999 are taken, up to 1000 random
/// tries in 1000–999999. "Taken" means any existing nameplate of the AppID, and any short one
/// still resting after its deletion.
enum NameplateAllocator {
    /// The names allocation must pass over, looked up in place (allocation runs under the
    /// core's lock: nothing is copied).
    struct Taken {
        var live: Set<Nameplate>
        var resting: [Nameplate: RelayInstant] = [:]
        func contains(_ name: Nameplate) -> Bool { live.contains(name) || resting[name] != nil }
        /// An upper bound (a resting name is never live at the same time, so it is exact).
        var count: Int { live.count + resting.count }
    }

    static func allocate(
        taken: Set<Nameplate>, using random: inout some RandomNumberGenerator
    ) -> Nameplate? {
        allocate(taken: Taken(live: taken), using: &random)
    }

    static func candidates(
        taken: Set<Nameplate>, count: Int, using random: inout some RandomNumberGenerator
    ) -> [Nameplate] {
        candidates(taken: Taken(live: taken), count: count, using: &random)
    }

    static func sample(
        _ range: Range<Int>, free taken: Set<Nameplate>, count: Int,
        using random: inout some RandomNumberGenerator
    ) -> [Nameplate] {
        sample(range, free: Taken(live: taken), count: count, using: &random)
    }

    static func allocate(
        taken: Taken, using random: inout some RandomNumberGenerator
    ) -> Nameplate? {
        // Probing the (at most 999) short names costs the same however many names are taken.
        for range in [1..<10, 10..<100, 100..<1000] {
            var free: [Int] = []
            for n in range where !taken.contains(Nameplate(number: n)) { free.append(n) }
            if let n = free.randomElement(using: &random) { return Nameplate(number: n) }
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
        for range in [1..<10, 10..<100, 100..<1000] {
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
                let name = Nameplate(number: n)
                if !taken.contains(name) { out.append(name) }
            }
            if out.count == count { return out }
        }
        var free = range.map { Nameplate(number: $0) }.filter { !taken.contains($0) }
        // A random `count` of them in random order: the first steps of a Fisher-Yates
        // shuffle (one random number per name kept, not per name free).
        let kept = min(count, free.count)
        for i in 0..<kept {
            free.swapAt(i, Int.random(in: i..<free.count, using: &random))
        }
        return Array(free.prefix(kept))
    }
}
