import Foundation
import Net
import Testing

/// Raw bytes over real sockets: every bad input gets its status or close code, and the server
/// keeps serving a well-behaved client afterwards.
@Suite("Malformed input over sockets")
struct MalformedInputTests {
    static func assertStillServing(_ server: Server) throws {
        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        ws.send(text: "still here")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("still here"))
        ws.close()
        let response = try HTTPClient.send(.get, url: "http://127.0.0.1:\(server.port)/hello")
        #expect(response.status.code == 200)
    }

    static let handshakeCases: [(String, String, Int)] = [
        (
            "missing key",
            "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
            400
        ),
        (
            "short key",
            "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: AAAA\r\n"
                + "Sec-WebSocket-Version: 13\r\n\r\n", 400
        ),
        (
            "version 8",
            "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n", 426
        ),
        (
            "post",
            "POST /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n",
            405
        ),
        (
            "no connection upgrade",
            "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", 400
        ),
        (
            "unknown path",
            "GET /nowhere HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", 404
        ),
        ("http/1.0 upgrade", "GET /echo HTTP/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 400),
        ("garbage", "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}\r\n\r\n", 400),
        (
            "chunked trick",
            "POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 501
        ),
    ]

    @Test(arguments: handshakeCases)
    func badHandshakes(_ item: (String, String, Int)) throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send(item.1)
        let head = client.readHead()
        #expect(head.hasPrefix("HTTP/1.1 \(item.2) "), "\(item.0): \(head)")
        if item.2 == 426 { #expect(head.contains("Sec-WebSocket-Version: 13")) }
        try Self.assertStillServing(server)
    }

    static let frameCases: [(String, [[UInt8]], UInt16)] = [
        ("unmasked client frame", [RawClient.frame(1, Array("hi".utf8), masked: false)], 1002),
        ("64-bit length, high bit", [[0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4]], 1002),
        ("fragmented ping", [RawClient.frame(9, [1], fin: false)], 1002),
        ("ping over 125 bytes", [RawClient.frame(9, Array(repeating: 7, count: 126))], 1002),
        (
            "invalid UTF-8 split across fragments",
            [RawClient.frame(1, [0x61, 0xF0, 0x9F], fin: false), RawClient.frame(0, [0x41])], 1007
        ),
        ("overlong UTF-8", [RawClient.frame(1, [0xC0, 0xAF])], 1007),
        ("reserved opcode 3", [RawClient.frame(3, [])], 1002),
        ("reserved opcode 0xB", [RawClient.frame(0xB, [])], 1002),
        ("rsv1 without extension", [RawClient.frame(1, [0x61], rsv: 0x40)], 1002),
        ("rsv3", [RawClient.frame(2, [0x61], rsv: 0x10)], 1002),
        ("close code 1005", [RawClient.frame(8, [0x03, 0xED])], 1002),
        ("close code 999", [RawClient.frame(8, [0x03, 0xE7])], 1002),
        ("close code 5000", [RawClient.frame(8, [0x13, 0x88])], 1002),
        ("close 1-byte payload", [RawClient.frame(8, [0x03])], 1002),
        ("close reason not UTF-8", [RawClient.frame(8, [0x03, 0xE8, 0xFF, 0xFE])], 1007),
        ("continuation first", [RawClient.frame(0, [0x61])], 1002),
        (
            "text inside fragmented binary",
            [RawClient.frame(2, [1], fin: false), RawClient.frame(1, [0x61])], 1002
        ),
        ("frame over the limit", [[0x82, 0xFF, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 2, 3, 4]], 1009),
        ("normal close", [RawClient.frame(8, [0x03, 0xE8])], 1000),
        ("close without code", [RawClient.frame(8, [])], 1005),
    ]

    @Test(arguments: frameCases)
    func badFrames(_ item: (String, [[UInt8]], UInt16)) throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        #expect(client.upgrade().hasPrefix("HTTP/1.1 101 "))
        for frame in item.1 { client.send(frame) }
        #expect(client.readCloseCode() == item.2, "\(item.0)")
        // The server closes the TCP connection after the close handshake.
        #expect(client.read(timeout: 3).eof, "\(item.0): TCP not closed")
        try Self.assertStillServing(server)
    }

    @Test func halfOpenAndResetConnections() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        // Half-open: partial request, then the client shuts its write side.
        let half = try RawClient(port: server.port)
        half.send("GET /hello HTTP/1.1\r\nHo")
        shutdown(half.fd, Int32(SHUT_WR))
        #expect(half.read(timeout: 3).eof)
        // Half-close after a full request still gets the answer.
        let polite = try RawClient(port: server.port)
        polite.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        shutdown(polite.fd, Int32(SHUT_WR))
        let (bytes, _) = polite.read(timeout: 3)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 "))
        // Immediate RST, before and after the upgrade.
        for upgraded in [false, true] {
            let rst = try RawClient(port: server.port)
            if upgraded { _ = rst.upgrade() } else { rst.send("GET / HTTP/1.1\r\n") }
            rst.reset()
        }
        // Connect and vanish without a byte.
        for _ in 0..<20 { _ = try RawClient(port: server.port) }
        try Self.assertStillServing(server)
        #expect(eventually { server.connectionCount == 0 }, "connections left: \(server.connectionCount)")
    }

    @Test func pipelinedKeepAlive() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send(
            "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /items/7 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (bytes, eof) = client.read(timeout: 3)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.components(separatedBy: "HTTP/1.1 200 OK").count == 4, "\(text)")
        #expect(text.contains(#"{"id":"7"}"#))
        #expect(eof)
    }

    @Test func slowlorisIsCut() throws {
        let server = try makeEchoServer { config in
            config.limits.handshakeTimeout = .milliseconds(400)
            config.limits.requestTimeout = .milliseconds(400)
        }
        defer { server.shutdown() }
        let start = Date()
        let idle = try RawClient(port: server.port)
        #expect(idle.read(timeout: 4).eof)
        let dribble = try RawClient(port: server.port)
        var closed = false
        for byte in "GET /hello HTTP/1.1\r\nHost: x\r\n".utf8 {
            dribble.send([byte])
            usleep(50_000)
            var probe: UInt8 = 0
            if recv(dribble.fd, &probe, 1, Int32(MSG_DONTWAIT)) == 0 {
                closed = true
                break
            }
        }
        #expect(closed || dribble.read(timeout: 2).eof)
        #expect(Date().timeIntervalSince(start) < 4)
        #expect(eventually { server.statistics.timeouts == 2 })
        try Self.assertStillServing(server)
    }

    @Test func idleKeepAliveIsClosed() throws {
        let server = try makeEchoServer { $0.limits.idleTimeout = .milliseconds(300) }
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readHead().hasPrefix("HTTP/1.1 200 OK"))
        let start = Date()
        #expect(client.read(timeout: 4).eof)
        #expect(Date().timeIntervalSince(start) < 3)
        #expect(eventually { server.statistics.timeouts == 1 })
    }

    @Test func connectionLimits() throws {
        let server = try makeEchoServer { config in
            config.limits.maxConnectionsPerAddress = 3
        }
        defer { server.shutdown() }
        let held = try (0..<3).map { _ in try RawClient(port: server.port) }
        #expect(eventually { server.connectionCount == 3 })
        let refused = try RawClient(port: server.port)
        #expect(refused.read(timeout: 3).eof)
        #expect(server.statistics.connectionsRejected == 1)
        _ = held
        var config = ServerConfiguration(host: "127.0.0.1", port: 0)
        config.limits.maxConnections = 2
        config.loopCount = 1
        let small = Server(configuration: config)
        try small.start()
        defer { small.shutdown() }
        let a = try RawClient(port: small.port)
        let b = try RawClient(port: small.port)
        #expect(eventually { small.connectionCount == 2 })
        let c = try RawClient(port: small.port)
        #expect(c.read(timeout: 3).eof)
        _ = (a, b)
    }

    @Test func slowReaderIsDropped() throws {
        let router = HTTPRouter()
        let server = try makeEchoServer(
            configure: { config in
                config.limits.maxOutputBytesPerConnection = 256 << 10
            }, router: router)
        defer { server.shutdown() }
        let opened = Mutex_Box<WebSocket?>(nil)
        server.webSocket(path: "/flood") { socket, _ in opened.set(socket) }
        // Registered after start: routes are looked up per request, so this works too.
        let client = try RawClient(port: server.port)
        var size: Int32 = 4096
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        #expect(client.upgrade(path: "/flood").hasPrefix("HTTP/1.1 101 "))
        #expect(eventually { opened.get() != nil })
        let socket = try #require(opened.get())
        let chunk = [UInt8](repeating: 0x41, count: 64 << 10)
        for _ in 0..<200 { socket.send(binary: chunk) }  // 12.8 MB to a peer that never reads
        #expect(eventually { socket.closeStatus != nil }, "server kept buffering")
        #expect(socket.closeStatus?.code == .abnormal)
        #expect(eventually { server.statistics.slowConsumersDropped == 1 })
        try Self.assertStillServing(server)
    }

    @Test func trustedProxyHeaders() throws {
        let direct = try makeEchoServer()
        defer { direct.shutdown() }
        let spoofed = try HTTPClient.send(
            .get, url: "http://127.0.0.1:\(direct.port)/client", headers: ["X-Forwarded-For": "6.6.6.6"])
        #expect(spoofed.bodyText == #"{"ip":"127.0.0.1"}"#)
        let proxied = try makeEchoServer { $0.trustedProxies = [IPNetwork("127.0.0.0/8")!] }
        defer { proxied.shutdown() }
        let viaProxy = try HTTPClient.send(
            .get, url: "http://127.0.0.1:\(proxied.port)/client",
            headers: ["X-Forwarded-For": "6.6.6.6, 203.0.113.9, 127.0.0.2"])
        #expect(viaProxy.bodyText == #"{"ip":"203.0.113.9"}"#)
        let realIP = try HTTPClient.send(
            .get, url: "http://127.0.0.1:\(proxied.port)/client", headers: ["X-Real-IP": "2001:db8::1"])
        #expect(realIP.bodyText == #"{"ip":"2001:db8::1"}"#)
    }

    @Test func gracefulShutdownClosesWebSocketsWith1001() throws {
        let server = try makeEchoServer()
        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        ws.send(text: "x")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("x"))
        let start = Date()
        server.shutdown(timeout: .seconds(3))
        #expect(Date().timeIntervalSince(start) < 2.5, "did not drain promptly")
        let status = try ws.waitUntilClosed(timeout: .seconds(3))
        #expect(status.code == .goingAway)
        #expect(throws: NetError.self) {
            try HTTPClient.send(.get, url: "http://127.0.0.1:\(server.port)/hello", timeout: .seconds(2))
        }
    }
}

/// A tiny locked box for test callbacks.
final class Mutex_Box<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func set(_ v: T) {
        lock.lock()
        value = v
        lock.unlock()
    }
    func get() -> T {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

@Suite("Bad input storm")
struct BadInputStormTests {
    /// Every bad handshake and bad frame at once, from many connections, while one good client
    /// keeps echoing on the same server the whole time.
    @Test func goodClientKeepsBeingServed() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let good = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        var attackers: [RawClient] = []
        for round in 0..<3 {
            for (_, request, _) in MalformedInputTests.handshakeCases {
                let client = try RawClient(port: server.port)
                client.send(request)
                attackers.append(client)
            }
            for (_, frames, _) in MalformedInputTests.frameCases {
                let client = try RawClient(port: server.port)
                client.send(
                    "GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                for frame in frames { client.send(frame) }
                attackers.append(client)
            }
            good.send(text: "round \(round)")
            #expect(try good.receive(timeout: .seconds(5)) == .text("round \(round)"))
        }
        // Each attacker gets an answer (status line or close frame) and then EOF.
        for attacker in attackers {
            #expect(attacker.read(timeout: 5).eof)
        }
        good.send(text: "after")
        #expect(try good.receive(timeout: .seconds(5)) == .text("after"))
        good.close()
        #expect(eventually { server.connectionCount == 0 }, "left: \(server.connectionCount)")
        let stats = server.statistics
        let badHandshakes = MalformedInputTests.handshakeCases.count * 3
        let violations = MalformedInputTests.frameCases.filter { $0.2 != 1000 && $0.2 != 1005 }.count * 3
        #expect(stats.connectionsAccepted == 1 + attackers.count)
        #expect(stats.badRequests == badHandshakes)
        #expect(stats.webSocketProtocolErrors == violations)
        #expect(stats.webSocketsOpened == 1 + MalformedInputTests.frameCases.count * 3)
        #expect(stats.openConnections == 0)
    }
}

@Suite("HTTP server details")
struct HTTPServerDetailTests {
    @Test func expectContinue() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send(
            "POST /echo-json HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\nExpect: 100-continue\r\n\r\n")
        #expect(client.readHead().hasPrefix("HTTP/1.1 100 Continue\r\n\r\n"))
        client.send("{\"a\":1}")
        let (bytes, _) = client.read(until: { String(decoding: $0, as: UTF8.self).hasSuffix("{\"a\":1}") })
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
    }

    @Test func http10KeepAlive() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let head = client.readHead()
        #expect(head.hasPrefix("HTTP/1.1 200 OK"))
        #expect(head.contains("Connection: keep-alive"))
        let plain = try RawClient(port: server.port)
        plain.send("GET /hello HTTP/1.0\r\n\r\n")
        let (bytes, eof) = plain.read(timeout: 3)
        #expect(String(decoding: bytes, as: UTF8.self).contains("Connection: close"))
        #expect(eof)
    }

    @Test func chunkedBodyAndOversizedBody() throws {
        let server = try makeEchoServer { $0.limits.http.maxBodyBytes = 1000 }
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send(
            "POST /echo-json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n[1,2\r\n1\r\n]\r\n0\r\n\r\n"
        )
        let (bytes, _) = client.read(until: { String(decoding: $0, as: UTF8.self).hasSuffix("[1,2]") })
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
        let big = try RawClient(port: server.port)
        big.send("POST /echo-json HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
        #expect(big.readHead().hasPrefix("HTTP/1.1 413 "))
        #expect(big.read(timeout: 3).eof)
    }
}
