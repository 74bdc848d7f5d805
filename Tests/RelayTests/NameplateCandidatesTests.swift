import Mailbox
import Testing

@testable import Relay

/// The names a node offers the shared store for an allocation (`NameplateAllocator`).
@Suite("Nameplate candidates")
struct NameplateCandidatesTests {
    @Test("a sample of a range: free, distinct, in range, as many as asked or every free one")
    func sampleProperties() {
        var random = SeededRandom(seed: 7)
        for round in 0..<300 {
            let range = [1..<10, 10..<100, 100..<1000].randomElement(using: &random)!
            // From almost nothing to everything taken, spread over all lengths.
            let density = Double.random(in: 0...1, using: &random)
            let taken = Set(
                (1..<1000).filter { _ in Double.random(in: 0..<1, using: &random) < density }
                    .map { Nameplate(number: $0) })
            let count = [1, 5, 32, 100].randomElement(using: &random)!
            let sample = NameplateAllocator.sample(
                range, free: .init(live: taken), count: count, using: &random)
            let numbers = sample.compactMap { Int($0.value) }
            let free = range.filter { !taken.contains(Nameplate(number: $0)) }.count
            #expect(numbers.count == sample.count, "round \(round)")
            #expect(numbers.allSatisfy(range.contains), "round \(round)")
            #expect(Set(numbers).count == numbers.count, "round \(round): distinct")
            #expect(sample.allSatisfy { !taken.contains($0) }, "round \(round): free")
            #expect(sample.count == min(count, free), "round \(round)")
        }
    }

    @Test("with most names free, every three-digit name is offered about equally often")
    func sampleSpread() {
        var random = SeededRandom(seed: 8)
        let taken = Set((100..<150).map { Nameplate(number: $0) })
        var seen: [Int: Int] = [:]
        for _ in 0..<2000 {
            for name in NameplateAllocator.sample(
                100..<1000, free: .init(live: taken), count: 32, using: &random)
            {
                seen[Int(name.value) ?? 0, default: 0] += 1
            }
        }
        // 64,000 picks over 850 free names: about 75 each.
        #expect(seen.count == 850)
        #expect(
            seen.values.allSatisfy { (35...125).contains($0) },
            "\(seen.values.min() ?? 0)...\(seen.values.max() ?? 0)")
    }

    @Test("candidates: the free short names first, by length, then longer ones")
    func candidatesOrder() {
        var random = SeededRandom(seed: 9)
        let taken: Set<Nameplate> = [Nameplate(number: 3), Nameplate(number: 42)]
        let names = NameplateAllocator.candidates(taken: .init(live: taken), count: 32, using: &random)
        let lengths = names.map { min(4, $0.value.count) }
        #expect(lengths == lengths.sorted())
        #expect(Set(names.prefix(8).map(\.value)) == ["1", "2", "4", "5", "6", "7", "8", "9"])
        #expect(names.filter { $0.value.count == 2 }.count == 32)
        #expect(names.filter { $0.value.count == 3 }.count == 32)
        #expect(names.filter { $0.value.count > 3 }.count == 16)
        #expect(!names.contains(Nameplate(number: 42)))
    }
}
