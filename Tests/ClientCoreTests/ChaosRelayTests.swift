import ClientCore
import Foundation
import JoinProtocol
import PAKE
import SpaceModel
import TestSupport
import Testing

/// A TCP proxy on loopback in front of a real relay that cuts every connection through it at
/// random moments (both directions at once, mid-frame included), so clients must reconnect,
/// re-claim, re-open and resend what was not echoed.
final class ChaosProxy: @unchecked Sendable {
    let port: UInt16
    private let upstream: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var pairs: [(Int32, Int32)] = []
    private var stopped = false
    private(set) var cuts = 0
    private var rng: SeededRandom

    private let maxCuts: Int

    /// Cuts every live connection `cutEvery` milliseconds apart (random), at most `maxCuts` times.
    init(upstream: UInt16, seed: UInt64, cutEvery: ClosedRange<Int>, maxCuts: Int) throws {
        self.maxCuts = maxCuts
        self.upstream = upstream
        rng = SeededRandom(seed: seed)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        listener = fd
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw TestSupportError.system("proxy bind", errno) }
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { self.acceptLoop() }
        Thread.detachNewThread { self.cutLoop(cutEvery) }
    }

    static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func acceptLoop() {
        while !isStopped {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if isStopped { return }
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(upstream)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard connected else {
                close(client)
                close(server)
                continue
            }
            lock.lock()
            pairs.append((client, server))
            lock.unlock()
            Thread.detachNewThread { self.pump(from: client, to: server) }
            Thread.detachNewThread { self.pump(from: server, to: client) }
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            var offset = 0
            while offset < n {
                let w = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + offset, n - offset) }
                if w <= 0 { break }
                offset += w
            }
            if offset < n { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }

    private func cutLoop(_ range: ClosedRange<Int>) {
        while !isStopped {
            lock.lock()
            if cuts >= maxCuts {
                lock.unlock()
                return
            }
            let span = UInt32(range.upperBound - range.lowerBound + 1)
            let wait =
                range.lowerBound
                + Int(rng.bytes(count: 4).withUnsafeBytes { $0.load(as: UInt32.self) } % span)
            lock.unlock()
            usleep(UInt32(wait) * 1000)
            lock.lock()
            let live = pairs
            pairs = []
            if !live.isEmpty { cuts += 1 }
            lock.unlock()
            for (a, b) in live {
                shutdown(a, Int32(SHUT_RDWR))
                shutdown(b, Int32(SHUT_RDWR))
            }
        }
    }

    func stop() {
        lock.lock()
        stopped = true
        let live = pairs
        pairs = []
        lock.unlock()
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for (a, b) in live {
            shutdown(a, Int32(SHUT_RDWR))
            shutdown(b, Int32(SHUT_RDWR))
        }
    }
}

/// Honest joins through the chaos proxy in front of the reference relay always complete with
/// the same result: the grant the attendant sent, and the same verification words both sides.
@Suite(.serialized) struct ChaosRelayTests {
    @Test(.enabled(if: !TestSupport.interopSkipped)) func honestJoinsSurviveConnectionCuts() async throws {
        try await TestSupport.offPool {
            let dir = try TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let server = try TestSupport.startReferenceMailboxServer(in: dir)
            defer { server.stop() }
            try ChaosScenarios.honestJoins(upstreamPort: server.port, runs: 6)
        }
    }
}

enum ChaosScenarios {
    typealias Box = JoinScenarios.Box

    /// `runs` joins, each through a fresh proxy cutting connections every 20–120 ms (three times).
    static func honestJoins(upstreamPort: UInt16, runs: Int) throws {
        var totalCuts = 0
        for run in 0..<runs {
            let proxy = try ChaosProxy(
                upstream: upstreamPort, seed: UInt64(run), cutEvery: 20...120, maxCuts: 3)
            defer { proxy.stop() }
            let url = "ws://127.0.0.1:\(proxy.port)/v1"
            let words = "coral-piano-\(run)"
            let grant = Array(#"{"run":\#(run)}"#.utf8)
            let seed = SecretBytes(Array(repeating: UInt8(run), count: 32))
            let nameplateBox = Box<Rendezvous.Nameplate>()
            let attendantBox = Box<(InviteAttendance.Outcome?, [UInt8]?)>()
            Thread.detachNewThread {
                var verifier: [UInt8]?
                do {
                    let (connection, nameplate) = try InviteAttendance.allocate(
                        relayURL: url, timeout: .seconds(20))
                    nameplateBox.put(nameplate)
                    let outcome = try InviteAttendance.attendOne(
                        on: connection, words: words,
                        binding: JoinBinding(intent: .join, nameplate: nameplate),
                        seed: seed, use: 0, published: false, inviterName: "Paul",
                        deadline: .now + .seconds(30)
                    ) { _, v in
                        verifier = v
                        return .approve(grant: grant)
                    }
                    attendantBox.put((outcome, verifier))
                } catch {
                    print("chaos proxy run \(run): the attendant failed: \(error)")
                    attendantBox.put((nil, nil))
                }
            }
            let nameplate = try #require(nameplateBox.take(timeout: 25))
            var joinerVerifier: [UInt8]?
            let received = try JoinRunner.join(
                relayURL: url, nameplate: nameplate, words: words,
                request: JoinScenarios.request, timeout: .seconds(30)
            ) { progress in
                if case .codeAccepted(let v) = progress { joinerVerifier = v }
            }
            #expect(received == grant, "run \(run)")
            let attended = attendantBox.take(timeout: 30)
            #expect(attended?.0 == .admitted(JoinScenarios.request), "run \(run)")
            #expect(joinerVerifier != nil && attended?.1 == joinerVerifier)
            totalCuts += proxy.cuts
        }
        print("chaos proxy: \(runs) honest joins completed through \(totalCuts) connection cuts")
        // The proxy did cut connections while the joins ran.
        #expect(totalCuts >= runs)
    }
}
