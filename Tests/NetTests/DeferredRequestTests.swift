import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Net

/// Requests answered later (`deferred`, as the space server answers each from its handler
/// threads): reading pauses while one runs, without an `epoll_ctl` per request.
@Suite struct DeferredRequestTests {
    /// A server with one loop and `/later`, answered from another thread once `gate` allows.
    private static func makeServer(gate: DispatchSemaphore? = nil, started: DispatchSemaphore? = nil)
        throws -> Server
    {
        let router = HTTPRouter()
        router.add(
            .get, "/later",
            deferred: { request, responder in
                let path = request.target
                DispatchQueue.global().async {
                    started?.signal()
                    _ = gate?.wait(timeout: .now() + 10)
                    responder.respond(.text(path))
                }
            })
        return try makeEchoServer(configure: { $0.loopCount = 1 }, router: router)
    }

    /// The server's only loop's count of interest changes, read on that loop.
    private static func interestChanges(_ server: Server) -> Int {
        let loop = server.core.group!.loops[0]
        let count = Mutex(-1)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            count.withLock { $0 = loop.interestChanges }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
        return count.withLock { $0 }
    }

    private static func responses(_ bytes: [UInt8]) -> Int {
        String(decoding: bytes, as: UTF8.self).components(separatedBy: "HTTP/1.1 200").count - 1
    }

    /// A client that waits for each answer before it asks again (every client of the space
    /// server) costs no `epoll_ctl` at all: before, pausing and resuming cost two per request.
    @Test func requestsOneAfterAnotherChangeNoInterest() throws {
        let server = try Self.makeServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        for i in 0..<20 {
            client.send("GET /later?n=\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            let (bytes, eof) = client.read(until: { String(decoding: $0, as: UTF8.self).hasSuffix("?n=\(i)") }
            )
            #expect(!eof)
            #expect(String(decoding: bytes, as: UTF8.self).hasSuffix("/later?n=\(i)"))
        }
        #expect(Self.interestChanges(server) == 0)
    }

    /// A request that arrives while the one before it is still being answered stops epoll
    /// reporting input (level-triggered, it would wake the loop again and again) and waits; it
    /// is answered after the first, in order, once reading resumes.
    @Test func inputWhilePausedWaitsForTheAnswerBeforeIt() throws {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let server = try Self.makeServer(gate: gate, started: started)
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send("GET /later?n=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(started.wait(timeout: .now() + 10) == .success)
        client.send("GET /later?n=2 HTTP/1.1\r\nHost: x\r\n\r\n")
        // The second request's bytes reached the paused connection: its input interest is off.
        #expect(eventually(timeout: 10) { Self.interestChanges(server) == 1 })
        gate.signal()
        gate.signal()
        let (bytes, eof) = client.read(until: { Self.responses($0) == 2 && $0.last == UInt8(ascii: "2") })
        #expect(!eof)
        let text = String(decoding: bytes, as: UTF8.self)
        let first = try #require(text.range(of: "/later?n=1"))
        let second = try #require(text.range(of: "/later?n=2"))
        #expect(first.upperBound <= second.lowerBound)
        // Reading resumed: the interest is back on, once.
        #expect(Self.interestChanges(server) == 2)
    }
}
