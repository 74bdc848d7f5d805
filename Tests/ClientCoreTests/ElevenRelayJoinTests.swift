import ClientCore
import Foundation
import TestSupport
import Testing

/// The same joins as `RendezvousInteropTests` (rendezvous client, SPAKE2, encrypted request and
/// grant, wrong code, refusal), through our own `eleven-relay` executable instead of the
/// reference mailbox server.
@Suite(.serialized) struct ElevenRelayJoinTests {
    @Test func joinThroughElevenRelay() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try TestSupport.freePort()
        let relay = try ChildProcess(
            TestSupport.productPath("eleven-relay"),
            ["--listen", "127.0.0.1:\(port)", "--db", dir.appendingPathComponent("relay.sqlite").path],
            port: port)
        defer { relay.stop() }
        try JoinScenarios.runAll(relayURL: "ws://127.0.0.1:\(port)/v1")
        #expect(relay.isRunning, "the relay kept running:\n\(relay.log)")
    }
}
