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
    /// Run with large frames, whose echoes are written at once, and with small ones, whose
    /// echoes wait for the end of the loop turn to go out together.
    @Test(arguments: [64 << 10, 4 << 10])
    func aPeerThatNeverReadsIsReadNoFurtherThenDropped(frameBytes: Int) throws {
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

        // 16 MB in masked binary frames, until a send does not go through.
        let frame = RawClient.frame(0x2, [UInt8](repeating: 0x41, count: frameBytes))
        let count = (16 << 20) / frameBytes
        var sent = 0
        for _ in 0..<count {
            let n = frame.withUnsafeBytes {
                Glibc.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard n == frame.count else { break }
            sent += 1
        }
        #expect(eventually { server.statistics.slowConsumersDropped == 1 }, "never dropped")
        print(
            "never-reader: \(sent) frames of \(frameBytes) B went out, \(answered.get()) answered before the drop"
        )
        #expect(sent < count, "the server read everything")
        #expect(answered.get() < count / 2, "\(answered.get()) answered")
        try MalformedInputTests.assertStillServing(server)
    }
}
