import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Net

/// A WebSocket server side written by hand on a ``ScriptedPeer`` connection: the upgrade, then
/// raw bytes out and the client's (masked) frames in.
private final class RawWebSocketPeer {
    let connection: ScriptedPeer.Peer
    private var buffer: [UInt8] = []

    /// Answers the upgrade request; nil when none came.
    init?(_ connection: ScriptedPeer.Peer) {
        self.connection = connection
        guard let head = connection.readRequest() else { return nil }
        let key =
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-key:") }
            .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) } ?? ""
        connection.write(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(forKey: key))\r\n\r\n")
    }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// A server frame (unmasked).
    func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        WebSocketFrameCodec.encode(opcode: opcode, payload: payload, into: &out)
        return out
    }

    /// The client's next frame (it must be masked), or nil at EOF or after a few seconds.
    func readFrame() -> WebSocketFrame? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let (frame, used) = try? WebSocketFrameCodec.parse(
                buffer, expectMasked: true, maxPayload: 1 << 20)
            {
                buffer.removeFirst(used)
                return frame
            }
            let n = recv(connection.fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
        }
    }
}

/// The blocking clients that read and write on the caller's thread (``BlockingWebSocket``,
/// ``DirectHTTP``), on real loopback sockets.
@Suite("Blocking clients on the caller's thread")
struct DirectClientTests {
    // MARK: WebSocket

    @Test func echoesTextAndBinaryAndClosesCleanly() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(server.port)/echo")
        ws.send(text: "hello ✓")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("hello ✓"))
        let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        ws.send(binary: big)
        #expect(try ws.receive(timeout: .seconds(5)) == .binary(big))
        // Several messages in one read come out one by one.
        for i in 0..<20 { ws.send(text: "m\(i)") }
        for i in 0..<20 { #expect(try ws.receive(timeout: .seconds(5)) == .text("m\(i)")) }
        ws.close()
        #expect(ws.closeStatus?.code == .normal)
        #expect(throws: NetError.self) { try ws.receive(timeout: .seconds(1)) }
        // The server saw the handshake end cleanly: no protocol violation, nothing left open.
        #expect(eventually { server.statistics.openConnections == 0 })
        #expect(server.statistics.webSocketProtocolErrors == 0)
    }

    @Test func textsSentTogetherArriveAsMaskedFramesInOrder() throws {
        let big = String(repeating: "0123456789abcdef", count: 1_500)
        let texts = ["bind", "ünïcode ✓", "", big, "last"]
        let received = Mutex<[WebSocketFrame]>([])
        let peer = try ScriptedPeer(maxConnections: 1) { connection, _ in
            guard let ws = RawWebSocketPeer(connection) else { return }
            // `readFrame` parses masked frames only: an unmasked one would end the loop.
            for _ in texts {
                guard let frame = ws.readFrame() else { return }
                received.withLock { $0.append(frame) }
            }
            ws.write(ws.frame(.text, Array("done".utf8)))
            _ = ws.readFrame()
        }
        defer { peer.stop() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(peer.port)/")
        ws.send(texts: texts)
        #expect(try ws.receive(timeout: .seconds(10)) == .text("done"))
        let frames = received.withLock { $0 }
        #expect(frames.map(\.opcode) == Array(repeating: .text, count: texts.count))
        #expect(frames.map(\.fin) == Array(repeating: true, count: texts.count))
        #expect(frames.map { String(decoding: $0.payload, as: UTF8.self) } == texts)
        ws.close()
    }

    @Test func theServersUTF8TextArrivesAsText() throws {
        let server = Server(
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0), router: HTTPRouter())
        server.webSocket(path: "/bytes") { socket, _ in
            socket.onMessage { socket, message in
                guard case .text(let text) = message else { return }
                socket.send(utf8Text: Array((text + " ✓").utf8))
            }
        }
        try server.start()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(server.port)/bytes")
        ws.send(text: "hello")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("hello ✓"))
        ws.close()
    }

    @Test func theServersCloseIsAnsweredAndReported() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(server.port)/close-me")
        do {
            _ = try ws.receive(timeout: .seconds(5))
            Issue.record("expected the close")
        } catch {
            #expect(error.code == .connectionClosed, "\(error)")
            #expect(error.message.contains("4000"), "\(error)")
        }
        #expect(ws.closeStatus?.code.rawValue == 4000)
        #expect(ws.closeStatus?.reason == "bye")
        #expect(eventually { server.statistics.openConnections == 0 })
    }

    @Test func aTimedOutReceiveLeavesTheSocketUsable() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(server.port)/echo")
        do {
            _ = try ws.receive(timeout: .milliseconds(50))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .timedOut, "\(error)")
        }
        ws.send(text: "still here")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("still here"))
        ws.close()
    }

    @Test func aSlowServersFrameArrivesWhole() throws {
        let peer = try ScriptedPeer(maxConnections: 1) { connection, _ in
            guard let ws = RawWebSocketPeer(connection) else { return }
            // A fragmented text message, its frames dribbled out a byte at a time, a ping between.
            let bytes =
                ws.frame(.ping, [7]) + frameBytes(fin: false, .text, Array("slow ".utf8))
                + frameBytes(fin: true, .continuation, Array("é".utf8))
            for byte in bytes {
                ws.write([byte])
                Thread.sleep(forTimeInterval: 0.002)
            }
            // The ping is answered with a masked pong carrying its payload.
            let pong = ws.readFrame()
            ws.write(
                pong?.opcode == .pong && pong?.payload == [7] ? ws.frame(.text, Array("pong ok".utf8)) : [])
            _ = ws.readFrame()
        }
        defer { peer.stop() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(peer.port)/")
        #expect(try ws.receive(timeout: .seconds(10)) == .text("slow é"))
        #expect(try ws.receive(timeout: .seconds(10)) == .text("pong ok"))
    }

    @Test func aServerThatClosesMidFrameIsAnAbnormalClose() throws {
        let peer = try ScriptedPeer(maxConnections: 1) { connection, _ in
            guard let ws = RawWebSocketPeer(connection) else { return }
            ws.write(Array(ws.frame(.text, Array("cut short".utf8)).prefix(6)))
        }
        defer { peer.stop() }
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(peer.port)/")
        do {
            _ = try ws.receive(timeout: .seconds(10))
            Issue.record("expected the connection to end")
        } catch {
            #expect(error.code == .connectionClosed, "\(error)")
        }
        #expect(ws.closeStatus?.code == .abnormal)
    }

    @Test func violationsFailTheConnectionWithTheirCode() throws {
        let cases: [(bytes: [UInt8], code: WebSocketCloseCode)] = [
            (frameBytes(fin: true, .binary, [UInt8](repeating: 1, count: 2000)), .messageTooBig),
            (frameBytes(fin: true, .text, [0xC3, 0x28]), .invalidPayload),
            // Server frames must not be masked.
            (frameBytes(fin: true, .text, [1], mask: 0x0102_0304), .protocolError),
        ]
        for (index, test) in cases.enumerated() {
            let bytes = test.bytes
            let sawClose = Mutex<UInt16?>(nil)
            let peer = try ScriptedPeer(maxConnections: 1) { connection, _ in
                guard let ws = RawWebSocketPeer(connection) else { return }
                ws.write(bytes)
                if let close = ws.readFrame(), close.opcode == .close, close.payload.count >= 2 {
                    sawClose.withLock { $0 = UInt16(close.payload[0]) << 8 | UInt16(close.payload[1]) }
                }
            }
            var options = WebSocketOptions()
            options.maxFrameBytes = 1000
            options.maxMessageBytes = 1000
            let ws = try WebSocketClient.connectBlocking(
                url: "ws://127.0.0.1:\(peer.port)/", options: options)
            #expect(throws: NetError.self) { try ws.receive(timeout: .seconds(10)) }
            peer.stop()
            #expect(ws.closeStatus?.code == test.code, "case \(index)")
            #expect(sawClose.withLock { $0 } == test.code.rawValue, "case \(index)")
        }
    }

    @Test func anUnansweredPingDropsTheConnection() throws {
        let peer = try ScriptedPeer(maxConnections: 1) { connection, _ in
            guard let ws = RawWebSocketPeer(connection) else { return }
            // Reads the client's ping and stays silent.
            _ = ws.readFrame()
            _ = ws.readFrame()
        }
        defer { peer.stop() }
        var options = WebSocketOptions()
        options.pingInterval = .milliseconds(100)
        options.pingTimeout = .milliseconds(100)
        let ws = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(peer.port)/", options: options)
        do {
            _ = try ws.receive(timeout: .seconds(10))
            Issue.record("expected the connection to be dropped")
        } catch {
            #expect(error.code == .connectionClosed, "\(error)")
            #expect(error.message.contains("ping"), "\(error)")
        }
        #expect(ws.closeStatus?.code == .abnormal)
    }

    @Test func refusedUpgradesAndUnreachablePortsFail() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        do {
            _ = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(server.port)/no-such-socket")
            Issue.record("expected a refusal")
        } catch {
            #expect(error.code == .handshakeFailed, "\(error)")
        }
        let closed = try ScriptedPeer(maxConnections: 0) { _, _ in }
        let port = closed.port
        closed.stop()
        do {
            _ = try WebSocketClient.connectBlocking(url: "ws://127.0.0.1:\(port)/", timeout: .seconds(5))
            Issue.record("expected a refused connection")
        } catch {
            #expect(error.isConnectionRefused, "\(error)")
        }
        #expect(throws: NetError.self) { try WebSocketClient.connectBlocking(url: "http://127.0.0.1:1/") }
    }

    @Test func aSilentServerTimesOutTheHandshake() throws {
        let peer = try ScriptedPeer(maxConnections: 1) { connection, _ in
            _ = connection.readRequest()
            _ = connection.readRequest()
        }
        defer { peer.stop() }
        do {
            _ = try WebSocketClient.connectBlocking(
                url: "ws://127.0.0.1:\(peer.port)/", timeout: .milliseconds(200))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .timedOut, "\(error)")
        }
    }

    @Test func wssWithThePinnedTestCA() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        try pki.makeChain("other", san: "DNS:other.example")
        let server = try TLSTests().tlsServer(pki, "a")
        defer { server.shutdown() }
        let pinned = TLSClientConfiguration(caFile: pki.path("a-ca.pem"))
        let ws = try WebSocketClient.connectBlocking(url: "wss://localhost:\(server.port)/echo", tls: pinned)
        let big = (0..<150_000).map { UInt8(truncatingIfNeeded: $0) }
        ws.send(binary: big)
        #expect(try ws.receive(timeout: .seconds(5)) == .binary(big))
        for i in 0..<10 { ws.send(text: "tls \(i)") }
        for i in 0..<10 { #expect(try ws.receive(timeout: .seconds(5)) == .text("tls \(i)")) }
        ws.close()
        #expect(ws.closeStatus?.code == .normal)
        do {
            _ = try WebSocketClient.connectBlocking(
                url: "wss://127.0.0.1:\(server.port)/echo",
                tls: TLSClientConfiguration(caFile: pki.path("other-ca.pem")), timeout: .seconds(5))
            Issue.record("accepted a certificate from another CA")
        } catch {
            #expect(error.code == .tlsError, "\(error)")
        }
    }

    // MARK: HTTP

    @Test func httpKeepsOneConnectionAliveAcrossRequests() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let pool = DirectConnectionPool()
        let base = "http://127.0.0.1:\(server.port)"
        for round in 0..<3 {
            #expect(try send(.get, "\(base)/hello", pool: pool).bodyText == #"{"hello":"world"}"#)
            #expect(
                try send(.post, "\(base)/echo-json", body: Array("[\(round)]".utf8), pool: pool).bodyText
                    == "[\(round)]")
            #expect(try send(.head, "\(base)/hello", pool: pool).body.isEmpty)
        }
        #expect(server.statistics.connectionsAccepted == 1)
        #expect(pool.idleCount(DirectConnectionPool.key(try NetURL(base), TLSClientConfiguration())) == 1)
        _ = try send(.get, "\(base)/hello", headers: ["Connection": "close"], pool: pool)
        #expect(server.statistics.connectionsAccepted == 2)
    }

    @Test func aPooledConnectionTheServerClosedIsNotUsed() throws {
        let server = try makeEchoServer { $0.limits.idleTimeout = .milliseconds(200) }
        defer { server.shutdown() }
        let pool = DirectConnectionPool(idleTime: .seconds(30))
        let url = "http://127.0.0.1:\(server.port)/echo-json"
        _ = try send(.post, url, body: [0x31], pool: pool)
        #expect(eventually { server.statistics.openConnections == 0 })
        // A POST is never sent twice: it can only go out on a new connection.
        #expect(try send(.post, url, body: [0x32], pool: pool).bodyText == "2")
        #expect(server.statistics.connectionsAccepted == 2)
    }

    @Test func anIdempotentRequestIsRetriedOnceWhenTheReusedConnectionDrops() throws {
        let peer = try ScriptedPeer(maxConnections: 3) { connection, index in
            guard connection.readRequest() != nil else { return }
            connection.write(
                index == 0 ? ScriptedPeer.okKeepAlive : "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
            if index == 0 { _ = connection.readRequest() }
        }
        defer { peer.stop() }
        let pool = DirectConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        #expect(try send(.get, url, pool: pool).bodyText == "ok")
        #expect(try send(.get, url, pool: pool).bodyText == "fresh")
        #expect(peer.connections == 2)
    }

    @Test func aPostIsNotSentTwiceWhenTheReusedConnectionDrops() throws {
        let peer = try ScriptedPeer(maxConnections: 3) { connection, _ in
            guard connection.readRequest() != nil else { return }
            connection.write(ScriptedPeer.okKeepAlive)
            _ = connection.readRequest()
        }
        defer { peer.stop() }
        let pool = DirectConnectionPool()
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

    @Test func answersThatEndTheConnectionAreNotReused() throws {
        let answers = [
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
            "HTTP/1.1 200 OK\r\n\r\nok",
        ]
        let peer = try ScriptedPeer(maxConnections: answers.count) { connection, index in
            guard connection.readRequest() != nil else { return }
            // Sent in two parts: the client must wait for the rest.
            let answer = answers[index]
            connection.write(String(answer.prefix(10)))
            Thread.sleep(forTimeInterval: 0.02)
            connection.write(String(answer.dropFirst(10)))
            if index == 3 { return }
            _ = connection.readRequest()
        }
        defer { peer.stop() }
        let pool = DirectConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        for _ in answers { #expect(try send(.post, url, body: [1], pool: pool).bodyText == "ok") }
        #expect(peer.connections == answers.count)
    }

    @Test func malformedAnswersAndSilentServersFail() throws {
        let peer = try ScriptedPeer(maxConnections: 2) { connection, index in
            guard connection.readRequest() != nil else { return }
            if index == 0 { connection.write("HTTP/1.1 2x0 What\r\n\r\n") }
            _ = connection.readRequest()
        }
        defer { peer.stop() }
        let pool = DirectConnectionPool()
        let url = "http://127.0.0.1:\(peer.port)/"
        do {
            _ = try send(.get, url, pool: pool)
            Issue.record("expected a malformed response error")
        } catch {
            #expect(error.code == .protocolError, "\(error)")
        }
        do {
            _ = try send(.get, url, pool: pool, timeout: .milliseconds(200))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .timedOut, "\(error)")
        }
        #expect(pool.idleCount(DirectConnectionPool.key(try NetURL(url), TLSClientConfiguration())) == 0)
    }

    @Test func httpsKeepsItsConnectionAlive() throws {
        let pki = try TestPKI()
        defer { pki.remove() }
        try pki.makeChain("a")
        let server = try TLSTests().tlsServer(pki, "a")
        defer { server.shutdown() }
        let pool = DirectConnectionPool()
        let tls = TLSClientConfiguration(caFile: pki.path("a-ca.pem"))
        for _ in 0..<3 {
            #expect(
                try send(.get, "https://127.0.0.1:\(server.port)/hello", tls: tls, pool: pool).status.code
                    == 200)
        }
        #expect(server.statistics.connectionsAccepted == 1)
    }

    @Test func anIdleConnectionIsClosedAfterTheIdleTimeWithoutAnotherRequest() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let pool = DirectConnectionPool(idleTime: .milliseconds(200))
        let url = "http://127.0.0.1:\(server.port)/hello"
        _ = try send(.get, url, pool: pool)
        #expect(pool.idleCount(DirectConnectionPool.key(try NetURL(url), TLSClientConfiguration())) == 1)
        #expect(eventually { server.statistics.openConnections == 0 })
        #expect(pool.earliestExpiry == nil)
    }

    @Test func expiredIdleConnectionsAreClosedWhenAnotherIsParked() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let pool = DirectConnectionPool(idleTime: .milliseconds(100))
        let first = "http://127.0.0.1:\(server.port)/hello"
        let second = "http://localhost:\(server.port)/hello"
        _ = try send(.get, first, pool: pool)
        Thread.sleep(forTimeInterval: 0.2)
        _ = try send(.get, second, pool: pool)
        #expect(pool.idleCount(DirectConnectionPool.key(try NetURL(first), TLSClientConfiguration())) == 0)
        #expect(eventually { server.statistics.openConnections == 1 })
    }
}

/// One request through `pool` on the calling thread.
private func send(
    _ method: HTTPMethod, _ url: String, body: [UInt8] = [], headers: HTTPHeaders = HTTPHeaders(),
    tls: TLSClientConfiguration = TLSClientConfiguration(), pool: DirectConnectionPool,
    timeout: Duration = .seconds(5)
) throws(NetError) -> HTTPResponse {
    try HTTPClient.send(
        method, url: url, headers: headers, body: body, tls: tls, timeout: timeout, pool: pool)
}

/// A server frame with an explicit FIN bit (and a mask, which servers must not use).
private func frameBytes(fin: Bool, _ opcode: WebSocketOpcode, _ payload: [UInt8], mask: UInt32? = nil)
    -> [UInt8]
{
    var out: [UInt8] = []
    WebSocketFrameCodec.encode(opcode: opcode, payload: payload, fin: fin, maskKey: mask, into: &out)
    return out
}
