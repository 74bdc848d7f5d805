import Adversaries
import ClientCore
import Foundation
import JoinProtocol
import Support
import TestSupport
import Testing

/// The reconnect back-off holds across waits. An interruptible wait asks for the next event in
/// quarter-second slices; each slice used to start the back-off again at its first delay, so a
/// client whose relay was down reconnected about four times a second instead of slowing to one
/// attempt every ten seconds (a public relay's outage met by every waiting client at that rate).
@Suite struct ReconnectBackoffTests {
    @Test func shortWaitsDoNotRestartTheBackoff() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let relay = try AdversarialRelayFixture.startRelay(in: dir)
            var generator = SystemRandomNumberGenerator()
            let connection = RendezvousConnection(
                url: "ws://127.0.0.1:\(relay.port)/v1",
                machine: RendezvousMachine(
                    appID: JoinIntent.join.appID, side: .random(using: &generator), start: .allocate))
            try connection.start()
            defer { connection.disconnect() }
            _ = relay.stop()
            let attempts = Locked(0)
            connection.onReconnect = { _ in attempts.withLock { $0 += 1 } }
            // Six seconds of quarter-second waits with the relay gone.
            let end = ContinuousClock.now + .seconds(6)
            while ContinuousClock.now < end {
                _ = try? connection.next(timeout: .milliseconds(250))
            }
            let made = attempts.withLock { $0 }
            print("ReconnectBackoffTests: \(made) reconnect attempts in 6 s of quarter-second waits")
            // 0.25 s, then 0.375, 0.56, 0.84, 1.27, 1.9 s…: at most 7 attempts fit in 6 s (before:
            // one per wait, about 24).
            #expect(made >= 2 && made <= 8, "\(made)")
        }
    }
}
