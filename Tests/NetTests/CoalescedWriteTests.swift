import Foundation
import Net
import Testing

/// Small writes made during one loop turn are sent together at the end of the turn (one
/// `send` for a relay's `ack` and its answer), over real loopback sockets.
@Suite struct CoalescedWriteTests {
    private static func text(_ index: Int) -> String {
        // Every 50th message is larger than the coalescing limit, so the two paths mix.
        let size = index % 50 == 25 ? 40_000 : 10 + index % 37
        let digits = String(index)
        return digits + String(repeating: Character(UnicodeScalar(UInt8(97 + index % 26))), count: size)
    }

    /// Server frames read until `count` arrived or EOF, after the bytes already `read`.
    private static func readFrames(_ client: RawClient, count: Int, after read: [UInt8] = [])
        -> [WebSocketFrame]
    {
        var buffer = read
        var frames: [WebSocketFrame] = []
        let deadline = Date().addingTimeInterval(20)
        while frames.count < count && Date() < deadline {
            let (bytes, eof) = client.read(until: { _ in true }, timeout: 1)
            buffer += bytes
            while let (frame, used) = try? WebSocketFrameCodec.parse(
                buffer, expectMasked: false, maxPayload: 1 << 20)
            {
                buffer.removeFirst(used)
                frames.append(frame)
            }
            if eof { break }
        }
        return frames
    }

    /// A message sent from a callback is not offered to the kernel before the turn ends
    /// (before, each one was its own `send`), and then it goes out.
    @Test func aSmallMessageWaitsForTheEndOfTheTurn() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let queued = Mutex_Box<[Int]>([])
        server.webSocket(path: "/one") { socket, _ in
            socket.onMessage { socket, _ in
                socket.send(text: "hello")
                queued.set([socket.pendingOutputBytes])
            }
        }
        let client = try RawClient(port: server.port)
        #expect(client.upgrade(path: "/one").hasPrefix("HTTP/1.1 101 "))
        client.send(RawClient.frame(0x1, Array("go".utf8)))
        let frames = Self.readFrames(client, count: 1)
        #expect(frames.map { String(decoding: $0.payload, as: UTF8.self) } == ["hello"])
        // 2 bytes of header + 5 of text were queued when the callback returned.
        #expect(queued.get() == [7])
    }

    /// Hundreds of frames queued in one turn, small and large mixed, arrive whole and in order.
    @Test func framesOfOneTurnArriveWholeAndInOrder() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let count = 300
        server.webSocket(path: "/burst") { socket, _ in
            socket.onMessage { socket, _ in
                for i in 0..<count { socket.send(text: Self.text(i)) }
            }
        }
        let client = try RawClient(port: server.port)
        #expect(client.upgrade(path: "/burst").hasPrefix("HTTP/1.1 101 "))
        client.send(RawClient.frame(0x1, Array("go".utf8)))
        let frames = Self.readFrames(client, count: count)
        #expect(frames.count == count)
        let texts = frames.map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(texts == (0..<count).map(Self.text))
    }

    /// Frames queued just before a close are delivered before the close frame.
    @Test func aCloseAfterQueuedFramesStillDeliversThem() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        server.webSocket(path: "/say-then-close") { socket, _ in
            for i in 0..<20 { socket.send(text: Self.text(i)) }
            socket.close(code: WebSocketCloseCode(rawValue: 4001), reason: "done")
        }
        let client = try RawClient(port: server.port)
        client.send(
            "GET /say-then-close HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        // The frames may come in the same segment as the 101 (they were written in its turn).
        let end = Array("\r\n\r\n".utf8)
        let (head, _) = client.read(until: { $0.firstRange(of: end) != nil })
        let headEnd = head.firstRange(of: end)?.upperBound ?? head.count
        #expect(String(decoding: head[..<headEnd], as: UTF8.self).hasPrefix("HTTP/1.1 101 "))
        let frames = Self.readFrames(client, count: 21, after: Array(head[headEnd...]))
        #expect(frames.count == 21)
        #expect(
            frames.prefix(20).map { String(decoding: $0.payload, as: UTF8.self) } == (0..<20).map(Self.text))
        #expect(frames.last?.opcode == .close)
        #expect(frames.last.map { Array($0.payload.prefix(2)) } == [0x0F, 0xA1])
        client.send(RawClient.frame(0x8, [0x0F, 0xA1]))
    }

    /// The `408` the server writes right before it drops a request that took too long (a
    /// write followed at once by an abort, in the same turn) still reaches the client.
    @Test func anAnswerWrittenJustBeforeAnAbortIsSent() throws {
        let server = try makeEchoServer { config in
            config.limits.requestTimeout = .milliseconds(300)
        }
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send("GET /hello HTTP/1.1\r\nHost: x\r\n")
        let (bytes, _) = client.read(timeout: 5)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408 "))
    }
}
