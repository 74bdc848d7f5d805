import Adversaries
import ClientCore
import Foundation
import JoinProtocol
import TestSupport
import Testing

/// An attendant's last message (the grant) and its close go to the relay back to back, without
/// waiting for the message's echo in between, so the relay can commit both at once. The close is
/// still reported done only once the relay stored everything sent before it: the peer, arriving
/// afterwards, finds the message; a relay that is gone makes the close fail, not pass.
@Suite struct CloseWhenStoredTests {
    @Test func aConfirmedCloseMeansTheLastMessageIsStored() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let relay = try AdversarialRelayFixture.startRelay(in: dir)
            defer { _ = relay.stop() }
            let url = "ws://127.0.0.1:\(relay.port)/v1"
            var generator = SystemRandomNumberGenerator()
            let (sender, nameplate) = try Self.allocate(url: url)
            // The peer is in the mailbox (its own message stored), then goes away: what it
            // finds when it comes back is what the relay stored.
            let away = RendezvousConnection(
                url: url,
                machine: RendezvousMachine(
                    appID: JoinIntent.join.appID, side: .random(using: &generator),
                    start: .claim(nameplate)))
            try away.start()
            try away.send(phase: Rendezvous.Phase("0"), body: [1])
            try away.waitUntilEchoed(timeout: .seconds(30))
            away.disconnect()

            let body = Array("the last answer".utf8)
            try sender.send(phase: Rendezvous.Phase("1"), body: body)
            // Sent at once: the machine has not seen its echo when the close goes out.
            #expect(!sender.machine.allEchoed)
            try sender.closeWhenStored(mood: .happy, timeout: .seconds(30))
            #expect(sender.machine.isClosed)
            #expect(sender.machine.allEchoed)

            let back = RendezvousConnection(url: url, machine: away.machine)
            try back.start()
            defer { back.close(mood: .happy, timeout: .seconds(5)) }
            var got: [UInt8]?
            let end = ContinuousClock.now + .seconds(30)
            while got == nil, ContinuousClock.now < end {
                if case .received(_, let b) = try back.next(timeout: end - .now) { got = b }
            }
            #expect(got == body)
        }
    }

    @Test func aCloseTheRelayNeverConfirmsFails() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let relay = try AdversarialRelayFixture.startRelay(in: dir)
            let (sender, _) = try Self.allocate(url: "ws://127.0.0.1:\(relay.port)/v1")
            _ = relay.stop()
            try sender.send(phase: Rendezvous.Phase("0"), body: [1, 2, 3])
            // The relay is gone: the close must not count as done (a short wait: it cannot happen).
            #expect(throws: RelayConnectionError.self) {
                try sender.closeWhenStored(mood: .happy, timeout: .seconds(2))
            }
            #expect(!sender.machine.isClosed)
        }
    }

    /// A connection that allocated a nameplate (its mailbox being opened).
    private static func allocate(url: String) throws -> (RendezvousConnection, Rendezvous.Nameplate) {
        var generator = SystemRandomNumberGenerator()
        let connection = RendezvousConnection(
            url: url,
            machine: RendezvousMachine(
                appID: JoinIntent.join.appID, side: .random(using: &generator), start: .allocate))
        try connection.start()
        while true {
            if case .allocated(let n) = try connection.next(timeout: .seconds(30)) { return (connection, n) }
        }
    }
}
