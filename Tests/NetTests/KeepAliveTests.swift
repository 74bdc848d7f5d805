import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Net

/// One request through `pool` (blocking, bounded).
private func send(
    _ method: HTTPMethod, _ url: String, body: [UInt8] = [], headers: HTTPHeaders = HTTPHeaders(),
    pool: HTTPConnectionPool, timeout: Duration = .seconds(5)
) throws(NetError) -> HTTPResponse {
    let box = Mutex<Result<HTTPResponse, NetError>?>(nil)
    let semaphore = DispatchSemaphore(value: 0)
    HTTPClient.request(
        method, url: url, headers: headers, body: body, tls: TLSClientConfiguration(), timeout: timeout,
        limits: HTTPParserLimits(), loop: nil, pool: pool
    ) { result in
        box.withLock { $0 = result }
        semaphore.signal()
    }
    guard semaphore.wait(timeout: .now() + 15) == .success, let result = box.withLock({ $0 }) else {
        throw NetError(.timedOut, "the client never completed")
    }
    return try result.get()
}

/// A scripted HTTP peer on a raw blocking socket: accepted connections are served one after
/// another by `serve` (with the connection's number from 0), at most `maxConnections`, each
/// accept and read waiting at most a few seconds.
final class ScriptedPeer: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let accepted = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)

    /// One accepted connection, with what has been read but not yet used.
    final class Peer {
        let fd: Int32
        private var buffer: [UInt8] = []

        init(fd: Int32) {
            self.fd = fd
            var tv = timeval(tv_sec: 3, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }

        /// The next request's head (through the empty line; its body is read and dropped), or
        /// nil at EOF or timeout.
        func readRequest() -> String? {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let text = String(decoding: buffer, as: UTF8.self)
                if let end = text.range(of: "\r\n\r\n") {
                    let head = String(text[..<end.upperBound])
                    let headBytes = head.utf8.count
                    var length = 0
                    for line in head.split(separator: "\r\n")
                    where line.lowercased().hasPrefix("content-length:") {
                        length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                    if buffer.count >= headBytes + length {
                        buffer.removeFirst(headBytes + length)
                        return head
                    }
                }
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { return nil }
                buffer += chunk[0..<n]
            }
        }

        func write(_ text: String) {
            _ = Array(text.utf8).withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
        }
    }

    init(maxConnections: Int, serve: @escaping @Sendable (Peer, Int) -> Void) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 8) == 0 else {
            close(listener)
            throw TestSupportError.system("bind", errno)
        }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) }
        }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        fd = listener
        port = UInt16(bigEndian: addr.sin_port)
        Thread.detachNewThread { [self] in
            for index in 0..<maxConnections {
                let client = accept(listener, nil, nil)
                if client < 0 { break }
                accepted.add(1, ordering: .relaxed)
                serve(Peer(fd: client), index)
                close(client)
            }
            finished.signal()
        }
    }

    /// Connections accepted so far.
    var connections: Int { accepted.load(ordering: .relaxed) }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        _ = finished.wait(timeout: .now() + 10)
        close(fd)
    }

    static let okKeepAlive = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
}

@Suite("HTTP client keep-alive")
struct KeepAliveTests {
    @Test func ourClientReusesOneConnectionWithOurServer() throws {
        let server = try makeEchoServer { $0.limits.maxConnectionsPerAddress = 2 }
        defer { server.shutdown() }
        let pool = HTTPConnectionPool()
        let base = "http://127.0.0.1:\(server.port)"
        for round in 0..<3 {
            #expect(try send(.get, "\(base)/hello", pool: pool).bodyText == #"{"hello":"world"}"#)
            let echoed = try send(.post, "\(base)/echo-json", body: Array("[\(round)]".utf8), pool: pool)
            #expect(echoed.bodyText == "[\(round)]")
            // Errors the server answers on an open connection, and a HEAD (length, no body).
            #expect(try send(.get, "\(base)/nope", pool: pool).status.code == 404)
            #expect(try send(.delete, "\(base)/hello", pool: pool).status.code == 405)
            let head = try send(.head, "\(base)/hello", pool: pool)
            #expect(head.status.code == 200 && head.body.isEmpty)
        }
        // One connection for all 15.
        #expect(server.statistics.connectionsAccepted == 1)
        #expect(pool.idleCount(HTTPConnectionPool.key(try NetURL(base), TLSClientConfiguration())) == 1)
        // A request that sets its own Connection header is not pooled (the idle one stays: the
        // server's per-address cap of 2 counts it).
        let closing = try send(.get, "\(base)/hello", headers: ["Connection": "close"], pool: pool)
        #expect(closing.headers["Connection"] == "close")
        #expect(server.statistics.connectionsAccepted == 2)
        #expect(eventually { server.statistics.openConnections == 1 })
    }

    @Test func theDefaultClientKeepsConnectionsAlive() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        for _ in 0..<4 { _ = try HTTPClient.send(.get, url: "http://127.0.0.1:\(server.port)/hello") }
        #expect(server.statistics.connectionsAccepted == 1)
    }

    @Test func aConnectionTheServerClosedWhileIdleIsNotReused() throws {
        let server = try makeEchoServer { $0.limits.idleTimeout = .milliseconds(300) }
        defer { server.shutdown() }
        let pool = HTTPConnectionPool(idleTime: .seconds(30))
        let url = "http://127.0.0.1:\(server.port)/hello"
        let key = HTTPConnectionPool.key(try NetURL(url), TLSClientConfiguration())
        _ = try send(.get, url, pool: pool)
        #expect(pool.idleCount(key) == 1)
        // The server's idle timeout closes it; the client sees that and drops it from the pool.
        #expect(eventually { pool.idleCount(key) == 0 })
        #expect(
            try send(.post, "http://127.0.0.1:\(server.port)/echo-json", body: [0x31], pool: pool)
                .bodyText == "1")
        #expect(server.statistics.connectionsAccepted == 2)
    }

    @Test func idleConnectionsCloseAfterTheIdleTime() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let pool = HTTPConnectionPool(idleTime: .milliseconds(300))
        let url = "http://127.0.0.1:\(server.port)/hello"
        _ = try send(.get, url, pool: pool)
        #expect(server.statistics.openConnections == 1)
        #expect(eventually { server.statistics.openConnections == 0 })
        #expect(pool.idleCount(HTTPConnectionPool.key(try NetURL(url), TLSClientConfiguration())) == 0)
        _ = try send(.get, url, pool: pool)
        #expect(server.statistics.connectionsAccepted == 2)
    }

    @Test func theIdleCountIsBounded() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let pool = HTTPConnectionPool(maxIdlePerOrigin: 2)
        let url = "http://127.0.0.1:\(server.port)/hello"
        let done = DispatchGroup()
        for _ in 0..<6 {
            done.enter()
            HTTPClient.request(
                .get, url: url, headers: HTTPHeaders(), body: [], tls: TLSClientConfiguration(),
                timeout: .seconds(5), limits: HTTPParserLimits(), loop: nil, pool: pool
            ) { _ in done.leave() }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(pool.idleCount(HTTPConnectionPool.key(try NetURL(url), TLSClientConfiguration())) <= 2)
        #expect(eventually { server.statistics.openConnections <= 2 })
    }

    @Test func gracefulShutdownClosesIdleConnections() throws {
        let server = try makeEchoServer()
        let pool = HTTPConnectionPool(idleTime: .seconds(30))
        let url = "http://127.0.0.1:\(server.port)/hello"
        _ = try send(.get, url, pool: pool)
        let started = Date()
        server.shutdown()
        #expect(Date().timeIntervalSince(started) < 4)
        let key = HTTPConnectionPool.key(try NetURL(url), TLSClientConfiguration())
        #expect(eventually { pool.idleCount(key) == 0 })
        #expect(throws: NetError.self) { try send(.get, url, pool: pool) }
    }

    @Test func anIdempotentRequestIsRetriedOnceWhenTheReusedConnectionDrops() throws {
        // Connection 0 answers one request, then reads the next and closes without answering
        // (a server closing an idle connection just as the request arrives).
        let peer = try ScriptedPeer(maxConnections: 3) { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(
                index == 0 ? ScriptedPeer.okKeepAlive : "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
            if index == 0 { _ = connection.readRequest() }
        }
        defer { peer.stop() }
        let pool = HTTPConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        #expect(try send(.get, url, pool: pool).bodyText == "ok")
        #expect(try send(.get, url, pool: pool).bodyText == "fresh")
        #expect(peer.connections == 2)
    }

    @Test func aPostIsNotSentTwiceWhenTheReusedConnectionDrops() throws {
        let peer = try ScriptedPeer(maxConnections: 3) { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedPeer.okKeepAlive)
            _ = connection.readRequest()  // the POST: read, never answered
        }
        defer { peer.stop() }
        let pool = HTTPConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        _ = try send(.get, url, pool: pool)
        do {
            _ = try send(.post, url, body: [1, 2, 3], pool: pool)
            Issue.record("expected the POST to fail, not to be sent again")
        } catch {
            #expect(error.code == .connectionClosed, "\(error)")
        }
        #expect(peer.connections == 1)
    }

    @Test func connectionCloseAndHTTP10AnswersAreNotReused() throws {
        let answers = [
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            // Bytes beyond the answer: the stream is out of step.
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
            // A body that runs to the end of the connection.
            "HTTP/1.1 200 OK\r\n\r\nok",
        ]
        let peer = try ScriptedPeer(maxConnections: answers.count) { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(answers[index])
            if index == 3 { return }  // closing ends the body
            // Keep it open: a client that wrongly reused it would wait here, not reconnect.
            _ = connection.readRequest()
        }
        defer { peer.stop() }
        let pool = HTTPConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        for _ in answers { #expect(try send(.post, url, body: [1], pool: pool).bodyText == "ok") }
        #expect(peer.connections == answers.count)
    }

    @Test func aMalformedAnswerOnAReusedConnectionFailsWithoutRetryAndIsDropped() throws {
        let peer = try ScriptedPeer(maxConnections: 3) { connection, index in
            guard connection.readRequest() != nil else { return }
            if index == 0 {
                connection.write(ScriptedPeer.okKeepAlive)
                guard connection.readRequest() != nil else { return }
                connection.write("HTTP/1.1 2x0 What\r\n\r\n")
                _ = connection.readRequest()
            } else {
                connection.write(ScriptedPeer.okKeepAlive)
            }
        }
        defer { peer.stop() }
        let pool = HTTPConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        _ = try send(.get, url, pool: pool)
        do {
            _ = try send(.get, url, pool: pool)
            Issue.record("expected a malformed response error")
        } catch {
            #expect(error.code == .protocolError, "\(error)")
        }
        #expect(peer.connections == 1)
        #expect(pool.idleCount(HTTPConnectionPool.key(try NetURL(url), TLSClientConfiguration())) == 0)
        #expect(try send(.get, url, pool: pool).bodyText == "ok")
        #expect(peer.connections == 2)
    }

    @Test func unaskedBytesOnAnIdleConnectionDropIt() throws {
        let peer = try ScriptedPeer(maxConnections: 2) { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedPeer.okKeepAlive)
            if index == 0 {
                Thread.sleep(forTimeInterval: 0.1)
                connection.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbad")
                _ = connection.readRequest()
            }
        }
        defer { peer.stop() }
        let pool = HTTPConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        let key = HTTPConnectionPool.key(try NetURL(url), TLSClientConfiguration())
        _ = try send(.get, url, pool: pool)
        #expect(eventually { pool.idleCount(key) == 0 })
        #expect(try send(.get, url, pool: pool).bodyText == "ok")
        #expect(peer.connections == 2)
    }
}
