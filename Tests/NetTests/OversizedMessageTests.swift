import Foundation
import Net
import TestSupport
import Testing

/// `WebSocketOptions.skipOversizedMessages`: a message over the limit is read past, never held,
/// and reported with its size; the connection stays open for the next one. Without the option
/// it still fails the connection with 1009.
@Suite("Oversized WebSocket messages")
struct OversizedMessageTests {
    static func header(_ opcode: WebSocketOpcode, fin: Bool = true, length: UInt64)
        -> WebSocketFrameCodec.Header
    {
        WebSocketFrameCodec.Header(
            fin: fin, rsv: 0, opcode: opcode, payloadLength: length, headerBytes: 14, maskKey: 0)
    }

    @Test func theSessionSkipsWholeAndFragmentedMessages() throws {
        var session = WebSocketSession(role: .server, maxMessageBytes: 10, skipsOversizedMessages: true)
        // Within the limit: parsed as usual.
        #expect(try !session.startSkipping(Self.header(.text, length: 10)))
        // One big frame, skipped in pieces.
        #expect(try session.startSkipping(Self.header(.binary, length: 25)))
        #expect(session.isSkippingPayload)
        #expect(session.skip(20) == (20, nil))
        #expect(session.skip(100) == (5, 25))
        #expect(!session.isSkippingPayload)
        // A fragmented message that outgrows the limit on its second fragment: what was held
        // is dropped, the rest skipped, a ping between fragments still answered.
        _ = try session.receive(WebSocketFrame(fin: false, opcode: .text, payload: Array("123456".utf8)))
        #expect(try session.startSkipping(Self.header(.continuation, fin: false, length: 6)))
        #expect(session.skip(6) == (6, nil))
        #expect(try !session.startSkipping(Self.header(.ping, length: 1)))
        #expect(try session.receive(WebSocketFrame(opcode: .ping, payload: [7])) == [.send(.pong, [7])])
        #expect(try session.startSkipping(Self.header(.continuation, length: 0)))
        #expect(session.skip(0) == (0, 12))
        // Afterwards the session is clean.
        #expect(
            try session.receive(WebSocketFrame(opcode: .text, payload: Array("ok".utf8))) == [
                .deliver(.text("ok"))
            ])
        // A new data frame in the middle of a skipped message is a protocol error.
        #expect(try session.startSkipping(Self.header(.text, fin: false, length: 11)))
        _ = session.skip(11)
        #expect(throws: WebSocketProtocolError.self) {
            _ = try session.startSkipping(Self.header(.text, length: 1))
        }
        // Without the option nothing is skipped (the caller's 1009 stands).
        var strict = WebSocketSession(role: .server, maxMessageBytes: 10)
        #expect(try !strict.startSkipping(Self.header(.binary, length: 25)))
    }

    @Test func aServerReportsTheSizeAndKeepsTheConnection() throws {
        let reported = Sizes()
        var config = ServerConfiguration(host: "127.0.0.1", port: 0)
        config.loopCount = 1
        config.limits.webSocket.maxFrameBytes = 1000
        config.limits.webSocket.maxMessageBytes = 1000
        config.limits.webSocket.skipOversizedMessages = true
        let server = Server(configuration: config)
        server.webSocket(path: "/echo") { socket, _ in
            socket.onOversizedMessage { socket, size in
                reported.append(size)
                socket.send(text: "too large: \(size)")
            }
            socket.onMessage { socket, message in socket.send(message) }
        }
        try server.start()
        defer { server.shutdown() }
        var options = WebSocketOptions()
        options.maxFrameBytes = 8 << 20
        options.maxMessageBytes = 8 << 20
        let ws = try WebSocketClient.connect(
            url: "ws://127.0.0.1:\(server.port)/echo", options: options, timeout: .seconds(10))
        defer { ws.close() }
        ws.send(binary: [UInt8](repeating: 7, count: 3_000_000))
        #expect(try ws.receive(timeout: .seconds(30)) == .text("too large: 3000000"))
        ws.send(text: "still here")
        #expect(try ws.receive(timeout: .seconds(10)) == .text("still here"))
        #expect(reported.values == [3_000_000])
        #expect(server.statistics.webSocketProtocolErrors == 0)
    }

    @Test func withoutTheOptionTheConnectionFailsWith1009() throws {
        var config = ServerConfiguration(host: "127.0.0.1", port: 0)
        config.loopCount = 1
        config.limits.webSocket.maxFrameBytes = 1000
        config.limits.webSocket.maxMessageBytes = 1000
        let server = Server(configuration: config)
        server.webSocket(path: "/echo") { socket, _ in socket.onMessage { s, m in s.send(m) } }
        try server.start()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo", timeout: .seconds(10))
        ws.send(binary: [UInt8](repeating: 7, count: 5000))
        #expect(try ws.waitUntilClosed(timeout: .seconds(10)).code == .messageTooBig)
    }
}

/// Sizes reported on a loop thread, read by the test.
private final class Sizes: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Int] = []
    func append(_ size: Int) { lock.withLock { stored.append(size) } }
    var values: [Int] { lock.withLock { stored } }
}
