import Support
import Testing

@testable import ClientCore

/// The one back-off the relay connection, the bot and `eleven read -f` share: the delays they
/// waited before it (grown by the factor up to the cap, back to the first after a success).
struct BackoffTests {
    @Test func growsToTheCapAndResets() {
        var backoff = Backoff(first: 0.2, cap: 5)
        var waits: [Double] = []
        for _ in 0..<8 {
            waits.append(backoff.delay)
            backoff.grow()
        }
        #expect(waits == [0.2, 0.4, 0.8, 1.6, 3.2, 5, 5, 5])
        backoff.reset()
        #expect(backoff.delay == 0.2)
    }

    @Test func theRelayConnectionBacksOffAsPythonsClient() {
        var backoff = RendezvousConnection.backoff
        var waits: [Double] = []
        for _ in 0..<12 {
            waits.append(backoff.delay)
            backoff.grow()
        }
        #expect(waits.first == 0.25)
        #expect(zip(waits, waits.dropFirst()).allSatisfy { $1 == min($0 * 1.5, 10) })
        #expect(waits.last == 10)
    }
}
