import Adversaries
import ClientCore
import Foundation
import JoinProtocol
import PAKE
import TestSupport
import Testing

/// The same joins as `RendezvousInteropTests` (rendezvous client, SPAKE2, encrypted request and
/// grant, wrong code, refusal), through our own `eleven-relay` executable instead of the
/// reference mailbox server.
@Suite(.serialized) struct ElevenRelayJoinTests {
    /// `eleven-relay` on a free port, its database in `dir`; returns it and its URL.
    static func startRelay(in dir: URL) throws -> (ChildProcess, String) {
        let port = try TestSupport.freePort()
        let relay = try ChildProcess(
            TestSupport.productPath("eleven-relay"),
            ["--listen", "127.0.0.1:\(port)", "--db", dir.appendingPathComponent("relay.sqlite").path],
            port: port)
        return (relay, "ws://127.0.0.1:\(port)/v1")
    }

    @Test func joinThroughElevenRelay() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (relay, url) = try Self.startRelay(in: dir)
        defer { relay.stop() }
        try JoinScenarios.runAll(relayURL: url)
        #expect(relay.isRunning, "the relay kept running:\n\(relay.log)")
    }
}

/// Forwards every frame and keeps them (``AdversarialRelay/frames``).
final class WatchingRelay: RelayAdversary, @unchecked Sendable {
    func intercept(_ frame: RelayFrame, proxy: AdversarialRelay) -> [RelayEmission] { pass(frame) }
}

extension ElevenRelayJoinTests {
    /// A joiner that cannot record its attempt (a full disk) does not send its confirmation:
    /// whoever answered in the mailbox gets no guess that could never be reported (issue #20
    /// item 5).
    @Test func aJoinerThatCannotRecordItsAttemptSendsNoConfirmation() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (relay, url) = try Self.startRelay(in: dir)
        defer { relay.stop() }
        let proxy = try AdversarialRelay(upstream: url, adversary: WatchingRelay())
        defer { proxy.stop() }
        let (np, _) = JoinScenarios.startAttendant(
            relayURL: url, words: "coral-piano", decision: .approve(grant: [1]))
        var random = SystemRandom()
        let pending = PendingJoin(
            relay: proxy.url, nameplate: Rendezvous.Nameplate(try #require(np)), words: "coral-piano",
            request: JoinScenarios.request, createdAt: 0, deadline: 0, using: &random)
        var asked = 0
        #expect(throws: JoinRunError.unrecorded) {
            try JoinRunner.join(
                pending, timeout: .seconds(30), progress: { _ in }, save: { _ in },
                recordAttempt: {
                    asked += 1
                    return false
                })
        }
        #expect(asked == 1)
        let sent = proxy.frames.filter { $0.direction == .toRelay && $0.type == "add" }.compactMap(\.phase)
        #expect(sent.contains(.pake) && !sent.contains(.confirm), "\(sent)")
    }
}
