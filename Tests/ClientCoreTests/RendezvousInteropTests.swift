import ClientCore
import Foundation
import PAKE
import TestSupport
import Testing

/// The rendezvous client and the join key agreement against the reference Magic Wormhole
/// mailbox server (PyPI magic-wormhole-mailbox-server), over real loopback WebSockets.
@Suite(.serialized) struct RendezvousInteropTests {
    static let interop = !TestSupport.interopSkipped

    final class Box<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: T?
        private let ready = DispatchSemaphore(value: 0)
        func put(_ v: T) {
            lock.lock()
            value = v
            lock.unlock()
            ready.signal()
        }
        func take(timeout: TimeInterval = 20) -> T? {
            guard ready.wait(timeout: .now() + timeout) == .success else { return nil }
            lock.lock()
            defer { lock.unlock() }
            return value
        }
    }

    enum Outcome: Equatable {
        case granted([UInt8])
        case mismatch
        case failed(String)
    }

    /// The attendant: allocate, send pake, verify the joiner, answer the request with a grant.
    static func attend(url: String, words: String, nameplate: Box<String>, result: Box<Outcome>) {
        var rng = SystemRandom()
        var g = SystemRandomNumberGenerator()
        let conn = RendezvousConnection(
            url: url,
            machine: RendezvousMachine(
                appID: JoinIntent.join.appID, side: .random(using: &g), start: .allocate))
        do {
            try conn.start()
            guard case .allocated(let np) = try conn.next(timeout: .seconds(10)) else {
                return result.put(.failed("no allocation"))
            }
            nameplate.put(np.value)
            var handshake = JoinHandshake(
                role: .attendant, words: words, binding: JoinBinding(intent: .join, nameplate: np),
                using: &rng)
            try conn.send(phase: .pake, body: handshake.firstMessage)
            while true {
                guard case .received(let phase, let body) = try conn.next(timeout: .seconds(20)) else {
                    continue
                }
                if let channel = handshake.channel {
                    guard phase == .request else { continue }
                    let request = try channel.open(body, phase: .request)
                    try conn.send(
                        phase: .grant, body: channel.seal(request.reversed(), phase: .grant, using: &rng))
                    conn.close(mood: .happy)
                    return result.put(.granted(request))
                }
                do {
                    for (p, b) in try handshake.receive(phase: phase, body: body) {
                        try conn.send(phase: p, body: b)
                    }
                } catch let error as JoinHandshakeError where error == .codeMismatch {
                    try conn.send(phase: Rendezvous.Phase("abort"), body: [1])
                    conn.close(mood: .scary)
                    return result.put(.mismatch)
                }
            }
        } catch {
            result.put(.failed("\(error)"))
        }
    }

    /// The joiner: claim, run the handshake, send a request, read the grant.
    static func join(url: String, nameplate: String, words: String) -> Outcome {
        var rng = SystemRandom()
        var g = SystemRandomNumberGenerator()
        let np = Rendezvous.Nameplate(nameplate)
        let conn = RendezvousConnection(
            url: url,
            machine: RendezvousMachine(
                appID: JoinIntent.join.appID, side: .random(using: &g), start: .claim(np)))
        do {
            try conn.start()
            var handshake = JoinHandshake(
                role: .joiner, words: words, binding: JoinBinding(intent: .join, nameplate: np), using: &rng)
            try conn.send(phase: .pake, body: handshake.firstMessage)
            while true {
                guard case .received(let phase, let body) = try conn.next(timeout: .seconds(20)) else {
                    continue
                }
                if phase == Rendezvous.Phase("abort") {
                    conn.close(mood: .scary)
                    return .mismatch
                }
                if let channel = handshake.channel {
                    guard phase == .grant else { continue }
                    let grant = try channel.open(body, phase: .grant)
                    conn.close(mood: .happy)
                    return .granted(grant)
                }
                for (p, b) in try handshake.receive(phase: phase, body: body) {
                    try conn.send(phase: p, body: b)
                }
                if let channel = handshake.channel {
                    try conn.send(
                        phase: .request, body: channel.seal(Array("Sam".utf8), phase: .request, using: &rng))
                }
            }
        } catch {
            return .failed("\(error)")
        }
    }

    @Test(.enabled(if: interop)) func joinThroughTheReferenceMailboxServer() throws {
        let dir = try TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try TestSupport.startReferenceMailboxServer(in: dir)
        defer { server.stop() }
        let url = "ws://127.0.0.1:\(server.port)/v1"

        // Right code: the attendant receives the request, the joiner the grant.
        let np = Box<String>()
        let attended = Box<Outcome>()
        Thread.detachNewThread {
            Self.attend(url: url, words: "coral-piano", nameplate: np, result: attended)
        }
        let nameplate = try #require(np.take())
        #expect(nameplate.allSatisfy { $0.isNumber })
        #expect(
            Self.join(url: url, nameplate: nameplate, words: "coral-piano") == .granted(Array("maS".utf8)))
        #expect(attended.take() == .granted(Array("Sam".utf8)))

        // Wrong code: both sides learn it at once; the attendant burns it.
        let np2 = Box<String>()
        let attended2 = Box<Outcome>()
        Thread.detachNewThread {
            Self.attend(url: url, words: "coral-piano", nameplate: np2, result: attended2)
        }
        let nameplate2 = try #require(np2.take())
        #expect(Self.join(url: url, nameplate: nameplate2, words: "coral-violin") == .mismatch)
        #expect(attended2.take() == .mismatch)
    }

    @Test func unreachableRelayIsAClearError() throws {
        let port = try TestSupport.freePort()
        var g = SystemRandomNumberGenerator()
        let conn = RendezvousConnection(
            url: "ws://127.0.0.1:\(port)/v1",
            machine: RendezvousMachine(appID: "x", side: .random(using: &g), start: .allocate))
        do {
            try conn.start()
            Issue.record("connecting to a closed port must fail")
        } catch {
            #expect(error.code == "relay_unreachable")
            #expect(error.description.contains("can't reach the relay at ws://127.0.0.1:\(port)/v1"))
        }
    }
}
