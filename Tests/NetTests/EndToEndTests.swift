import Foundation
import Net
import TestSupport
import Testing

@Suite("Our client against our server")
struct EndToEndTests {
    @Test func httpRoutesAndJSON() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let base = "http://127.0.0.1:\(server.port)"
        let hello = try HTTPClient.send(.get, url: "\(base)/hello")
        #expect(hello.status.code == 200)
        #expect(hello.bodyText == #"{"hello":"world"}"#)
        #expect(hello.headers["Content-Type"] == "application/json")
        let echoed = try HTTPClient.send(.post, url: "\(base)/echo-json", json: ["a": 1])
        #expect(echoed.bodyText == #"{"a":1}"#)
        let item = try HTTPClient.send(.get, url: "\(base)/items/abc%20d")
        #expect(item.bodyText == #"{"id":"abc d"}"#)
        let missing = try HTTPClient.send(.get, url: "\(base)/nope")
        #expect(missing.status.code == 404)
        let wrongMethod = try HTTPClient.send(.delete, url: "\(base)/hello")
        #expect(wrongMethod.status.code == 405)
        #expect(wrongMethod.headers["Allow"] == "GET")
        let head = try HTTPClient.send(.head, url: "\(base)/hello")
        #expect(head.status.code == 200)
        #expect(head.body.isEmpty)
    }

    @Test func webSocketEchoTextAndBinary() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        ws.send(text: "hello ✓")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("hello ✓"))
        let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        ws.send(binary: big)
        #expect(try ws.receive(timeout: .seconds(5)) == .binary(big))
        ws.send(text: "")
        #expect(try ws.receive(timeout: .seconds(5)) == .text(""))
        ws.close()
        let status = try ws.waitUntilClosed(timeout: .seconds(5))
        #expect(status.code == .normal)
    }

    @Test func serverInitiatedClose() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/close-me")
        let status = try ws.waitUntilClosed(timeout: .seconds(5))
        #expect(status.code.rawValue == 4000)
        #expect(status.reason == "bye")
        #expect(throws: NetError.self) { try ws.receive(timeout: .seconds(1)) }
    }

    @Test func ipv6Loopback() throws {
        var config = ServerConfiguration(host: "::1", port: 0)
        config.loopCount = 1
        let server = Server(configuration: config)
        server.webSocket(path: "/echo") { socket, _ in socket.onMessage { s, m in s.send(m) } }
        try server.start()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connect(url: "ws://[::1]:\(server.port)/echo")
        ws.send(text: "v6")
        #expect(try ws.receive(timeout: .seconds(5)) == .text("v6"))
        #expect(ws.remoteAddress?.isIPv6 == true)
        ws.close()
    }

    /// The `/slow` route's handler runs as a task on the cooperative pool (two threads here),
    /// which the suite's synchronous tests hold while they block: under load the task waited
    /// longer than the client's default 30 s and the request timed out. The pool is the
    /// process's, so the deadlines here are for a loaded machine; an answer that never comes
    /// still fails the test.
    @Test func asyncAPIs() async throws {
        let patience = Duration.seconds(180)
        let router = HTTPRouter()
        router.add(
            .get, "/slow",
            async: { _ in
                try? await Task.sleep(for: .milliseconds(20))
                return .text("done")
            })
        router.add(
            .get, "/blocking",
            deferred: { request, responder in
                EventLoopGroup.clients.loops[0].runBlocking({
                    usleep(10_000)
                    return "worked"
                }) { result in
                    responder.respond(.text((try? result.get()) ?? "failed"))
                }
            })
        let server = try makeEchoServer(router: router)
        defer { server.shutdown() }
        let slow = try await HTTPClient.request(
            .get, url: "http://127.0.0.1:\(server.port)/slow", timeout: patience)
        let posted = try await HTTPClient.request(
            .post, url: "http://127.0.0.1:\(server.port)/echo-json", json: ["k": "v"], timeout: patience)
        #expect(posted.bodyText == #"{"k":"v"}"#)
        #expect(slow.bodyText == "done")
        let blocking = try await HTTPClient.request(
            .get, url: "http://127.0.0.1:\(server.port)/blocking", timeout: patience)
        #expect(blocking.bodyText == "worked")
        let ws = try await WebSocketClient.open(url: "ws://127.0.0.1:\(server.port)/echo", timeout: patience)
        let stream = ws.messages
        for i in 0..<10 { ws.send(text: "m\(i)") }
        var received: [WebSocketEvent] = []
        for await event in stream {
            received.append(event)
            if received.count == 10 { ws.close() }
        }
        #expect(received.prefix(10) == (0..<10).map { .message(.text("m\($0)")) }[...])
        #expect(received.last == .closed(.normal, ""))
    }

    /// Fully async on both sides (a blocking wait here could starve the server's task of the
    /// small cooperative pool while other tests block their threads).
    @Test(.timeLimit(.minutes(1))) func serverSideAsyncStream() async throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let closes = Mutex_Box<[WebSocketCloseCode]>([])
        server.webSocket(path: "/stream") { socket, _ in
            let events = socket.messages
            Task {
                for await event in events {
                    switch event {
                    case .message(.text(let text)): socket.send(text: text.uppercased())
                    case .message(.binary): socket.close(code: .unsupportedData, reason: "text only")
                    case .closed(let code, _): closes.set(closes.get() + [code])
                    }
                }
            }
        }
        let ws = try await WebSocketClient.open(url: "ws://127.0.0.1:\(server.port)/stream")
        let events = ws.messages
        for word in ["a", "b", "c"] { ws.send(text: word) }
        ws.send(binary: [1])
        var received: [WebSocketEvent] = []
        for await event in events { received.append(event) }
        #expect(
            received == [
                .message(.text("A")), .message(.text("B")), .message(.text("C")),
                .closed(.unsupportedData, "text only"),
            ])
        for _ in 0..<500 where closes.get().isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(closes.get() == [.unsupportedData])
    }

    @Test func connectErrorsAreValues() throws {
        let port = try TestSupportPort.closed()
        #expect(throws: NetError.self) {
            try HTTPClient.send(.get, url: "http://127.0.0.1:\(port)/", timeout: .seconds(2))
        }
        do {
            _ = try WebSocketClient.connect(url: "ftp://x/")
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidURL)
        }
    }
}

enum TestSupportPort {
    /// A port nobody listens on.
    static func closed() throws -> UInt16 { try TestSupport.freePort() }
}
