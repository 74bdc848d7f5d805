import Foundation
import Net
import TestSupport
import Testing

@Suite("Event loop, timers, liveness")
struct EventLoopTests {
    @Test func timersFireInOrderAndCancel() throws {
        let loop = EventLoop(name: "test-loop")
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        let fired = Mutex_Box<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        loop.schedule(after: .milliseconds(60)) {
            fired.set(fired.get() + [3])
            done.signal()
        }
        loop.schedule(after: .milliseconds(20)) { fired.set(fired.get() + [1]) }
        let cancelled = loop.schedule(after: .milliseconds(40)) { fired.set(fired.get() + [99]) }
        loop.schedule(after: .milliseconds(40)) { fired.set(fired.get() + [2]) }
        cancelled.cancel()
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(fired.get() == [1, 2, 3])
    }

    @Test func executeFromManyThreadsAndRunBlocking() throws {
        let loop = EventLoop(name: "test-loop")
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        let count = Mutex_Box(0)
        let onLoop = Mutex_Box(true)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<250 {
                loop.execute {
                    if !loop.inLoop { onLoop.set(false) }
                    count.set(count.get() + 1)
                }
            }
        }
        #expect(eventually { count.get() == 2000 })
        #expect(onLoop.get())
        let hopped = Mutex_Box<String?>(nil)
        let work: @Sendable () throws -> String = {
            #expect(!loop.inLoop)
            return "from a worker"
        }
        loop.runBlocking(work) { result in
            #expect(loop.inLoop)
            hopped.set(try? result.get())
        }
        #expect(eventually { hopped.get() == "from a worker" })
    }

    @Test func blockingCallOnALoopIsRefused() throws {
        let loop = EventLoop(name: "test-loop")
        defer {
            loop.stop()
            loop.waitUntilStopped()
        }
        let code = Mutex_Box<NetError.Code?>(nil)
        loop.execute {
            do throws(NetError) {
                _ = try HTTPClient.send(.get, url: "http://127.0.0.1:9/")
            } catch {
                code.set(error.code)
            }
        }
        #expect(eventually { code.get() == .invalidState })
        #expect(!EventLoop.currentThreadIsLoop)
    }

    @Test func deadPeerIsDroppedAfterPingTimeout() throws {
        let server = try makeEchoServer { config in
            config.limits.webSocket.pingInterval = .milliseconds(200)
            config.limits.webSocket.pingTimeout = .milliseconds(300)
        }
        defer { server.shutdown() }
        // A raw peer that never answers pings.
        let silent = try RawClient(port: server.port)
        #expect(silent.upgrade().hasPrefix("HTTP/1.1 101 "))
        // Our client answers pings automatically and stays open meanwhile.
        var options = WebSocketOptions()
        options.pingInterval = .seconds(60)
        let alive = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo", options: options)
        let start = Date()
        var sawPing = false
        var buffer: [UInt8] = []
        var closedAt: Date?
        while Date().timeIntervalSince(start) < 5 {
            let (bytes, eof) = silent.read(until: { _ in true }, timeout: 0.5)
            buffer += bytes
            while let (frame, used) = try? WebSocketFrameCodec.parse(
                buffer, expectMasked: false, maxPayload: 1 << 20)
            {
                buffer.removeFirst(used)
                if frame.opcode == .ping { sawPing = true }
            }
            if eof {
                closedAt = Date()
                break
            }
        }
        #expect(sawPing)
        let elapsed = closedAt.map { $0.timeIntervalSince(start) } ?? 99
        #expect(elapsed > 0.3 && elapsed < 3.5, "closed after \(elapsed) s")
        alive.send(text: "still alive")
        #expect(try alive.receive(timeout: .seconds(5)) == .text("still alive"))
        alive.close()
    }

    @Test func clientTimeouts() throws {
        // A listener that accepts (kernel backlog) but never answers.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(fd, 8)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        let port = UInt16(bigEndian: addr.sin_port)
        let start = Date()
        do {
            _ = try HTTPClient.send(.get, url: "http://127.0.0.1:\(port)/", timeout: .milliseconds(300))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .timedOut)
        }
        do {
            _ = try WebSocketClient.connect(url: "ws://localhost:\(port)/", timeout: .milliseconds(300))
            Issue.record("expected a timeout")
        } catch {
            #expect(error.code == .timedOut || error.code == .connectFailed, "\(error)")
        }
        #expect(Date().timeIntervalSince(start) < 3)
    }

    @Test func upgradeCanBeRefused() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let guardHook: @Sendable (HTTPRequest) -> HTTPResponse? = { request in
            request.headers["Authorization"] == "yes"
                ? nil : .error(.forbidden, code: "forbidden", message: "no")
        }
        server.webSocket(path: "/guarded", accept: guardHook) { socket, request in
            socket.send(text: "welcome \(request.clientAddress?.description ?? "?")")
        }
        #expect(throws: NetError.self) {
            try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/guarded")
        }
        let ws = try WebSocketClient.connect(
            url: "ws://127.0.0.1:\(server.port)/guarded", headers: ["Authorization": "yes"])
        #expect(try ws.receive(timeout: .seconds(5)) == .text("welcome 127.0.0.1"))
        ws.close()
    }
}

/// Two servers on one port: the second must fail to start, not silently share the port with the
/// first (SO_REUSEPORT, which a server's own loops use, would otherwise let it join).
@Suite("Port in use") struct PortInUseTests {
    @Test func aSecondServerOnAPortInUseFailsToStart() throws {
        let first = try makeEchoServer()
        defer { first.shutdown() }
        var config = ServerConfiguration(host: "127.0.0.1", port: first.port)
        config.loopCount = 2
        let second = Server(configuration: config)
        do {
            try second.start()
            second.shutdown()
            Issue.record("a second server started on port \(first.port), which the first holds")
        } catch {
            #expect(error.code == .listenFailed, "\(error)")
        }
        // The first still serves.
        let client = try RawClient(port: first.port)
        client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(client.readHead().hasPrefix("HTTP/1.1 200 "))
    }
}
