/// Picks a random free nameplate of the shortest possible length, as the reference does:
/// 1–9 if any is free, else 10–99, else 100–999; when all 999 are taken, up to 1000 random
/// tries in 1000–999999. "Taken" means any existing nameplate of the AppID.
enum NameplateAllocator {
    static func allocate(
        taken: Set<Nameplate>, using random: inout some RandomNumberGenerator
    ) -> Nameplate? {
        var low = 1
        for _ in 1...3 {
            let high = low * 10  // exclusive
            let takenHere = taken.reduce(0) { count, name in
                guard let n = Int(name.rawValue), String(n) == name.rawValue else { return count }
                return (low..<high).contains(n) ? count + 1 : count
            }
            let free = (high - low) - takenHere
            if free > 0 {
                // Choose the k-th free number uniformly.
                var k = Int.random(in: 0..<free, using: &random)
                for n in low..<high where !taken.contains(Nameplate(number: n)) {
                    if k == 0 { return Nameplate(number: n) }
                    k -= 1
                }
            }
            low = high
        }
        for _ in 0..<1000 {
            let candidate = Nameplate(number: Int.random(in: 1000..<1_000_000, using: &random))
            if !taken.contains(candidate) { return candidate }
        }
        return nil
    }
}
