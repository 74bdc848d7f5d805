import Foundation
import Net
import Testing

/// Back-pressure on output: a peer that sends but never reads.
@Suite struct BackPressureTests {
    /// Past the high-water mark the server reads none of the peer's further requests (so it
    /// answers only a bounded number), and once its queued answers have not moved for the stall
    /// timeout the peer is dropped as a slow consumer, though it holds far less than the output
    /// cap. (Without these the server read all 16 MB and queued every answer for as long as the
    /// peer stayed.)
    @Test func aPeerThatNeverReadsIsReadNoFurtherThenDropped() throws {
        let server = try makeEchoServer { config in
            config.limits.maxOutputBytesPerConnection = 64 << 20
            config.limits.outputHighWaterBytes = 256 << 10
            config.limits.outputStallTimeout = .seconds(1)
        }
        defer { server.shutdown() }
        let answered = Mutex_Box(0)
        server.webSocket(path: "/count-echo") { socket, _ in
            socket.onMessage { socket, message in
                answered.set(answered.get() + 1)
                socket.send(message)
            }
        }
        let client = try RawClient(port: server.port)
        var small: Int32 = 4096
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var patience = timeval(tv_sec: 0, tv_usec: 300_000)
        setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
        #expect(client.upgrade(path: "/count-echo").hasPrefix("HTTP/1.1 101 "))

        // 256 masked binary frames of 64 kB (mask key zero), until a send does not go through.
        let payload = [UInt8](repeating: 0x41, count: 64 << 10)
        var frame: [UInt8] = [0x82, 0x80 | 127]
        for shift in stride(from: 56, through: 0, by: -8) {
            frame.append(UInt8((payload.count >> shift) & 0xFF))
        }
        frame += [0, 0, 0, 0] + payload
        var sent = 0
        for _ in 0..<256 {
            let n = frame.withUnsafeBytes {
                Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard n == frame.count else { break }
            sent += 1
        }
        #expect(eventually { server.statistics.slowConsumersDropped == 1 }, "never dropped")
        print("never-reader: \(sent) frames of 64 kB went out, \(answered.get()) answered before the drop")
        #expect(sent < 256, "the server read everything")
        #expect(answered.get() < 128, "\(answered.get()) answered")
        try MalformedInputTests.assertStillServing(server)
    }
    /// Output the peer has not taken yet waits in a queue of chunks (large frames as the arrays
    /// they were encoded in, small ones copied together): a burst of both, larger than the
    /// kernel takes, reaches a late reader whole and in order.
    @Test func queuedOutputArrivesWholeAndInOrder() throws {
        let server = try makeEchoServer { config in
            config.limits.maxOutputBytesPerConnection = 64 << 20
        }
        defer { server.shutdown() }
        // Every third message 256 kB, distinct (7.5 MB in all, more than the kernel buffers);
        // the others a few bytes.
        let count = 90
        let large: [[UInt8]] = (0..<count).map { i in
            i % 3 == 0 ? (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i) } : []
        }
        server.webSocket(path: "/burst") { socket, _ in
            socket.onMessage { socket, _ in
                for i in 0..<count {
                    if i % 3 == 0 { socket.send(binary: large[i]) } else { socket.send(text: "small \(i)") }
                }
            }
        }
        let client = try RawClient(port: server.port)
        var small: Int32 = 65536
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        #expect(client.upgrade(path: "/burst").hasPrefix("HTTP/1.1 101 "))
        client.send(RawClient.frame(0x1, Array("go".utf8)))
        usleep(300_000)
        var buffer: [UInt8] = []
        var offset = 0
        var received: [WebSocketFrame] = []
        let deadline = Date().addingTimeInterval(30)
        while received.count < count && Date() < deadline {
            let (bytes, eof) = client.read(until: { _ in true }, timeout: 1)
            buffer += bytes
            while let (frame, used) = try buffer.withUnsafeBytes({
                try WebSocketFrameCodec.parse(
                    UnsafeRawBufferPointer(rebasing: $0[offset...]), expectMasked: false, maxPayload: 1 << 24)
            }) {
                offset += used
                received.append(frame)
            }
            if eof { break }
        }
        #expect(received.count == count)
        for (i, frame) in received.enumerated() {
            if i % 3 == 0 {
                #expect(frame.opcode == .binary && frame.payload == large[i], "message \(i)")
            } else {
                #expect(frame.opcode == .text && frame.payload == Array("small \(i)".utf8), "message \(i)")
            }
        }
    }
    /// An application that answers later can hold the peer back: after `pauseReading` in the
    /// message callback no further frame is delivered (though ten arrived in one write) until
    /// `resumeReading`, from another thread, lets the rest through in order.
    @Test func theApplicationCanPauseReading() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let received = Mutex_Box<[String]>([])
        let paused = Mutex_Box<WebSocket?>(nil)
        server.webSocket(path: "/pause") { socket, _ in
            socket.onMessage { socket, message in
                guard case .text(let text) = message else { return }
                received.set(received.get() + [text])
                if text == "0" {
                    socket.pauseReading()
                    paused.set(socket)
                }
            }
        }
        let client = try RawClient(port: server.port)
        #expect(client.upgrade(path: "/pause").hasPrefix("HTTP/1.1 101 "))
        client.send((0..<10).flatMap { RawClient.frame(0x1, Array(String($0).utf8)) })
        #expect(eventually { paused.get() != nil })
        usleep(300_000)
        #expect(received.get() == ["0"])
        paused.get()?.resumeReading()
        #expect(eventually { received.get().count == 10 })
        #expect(received.get() == (0..<10).map { String($0) })
    }
}
