import Foundation
import Net
import Testing

/// The receive path's shortcuts (UTF-8 checked eight ASCII bytes at a time, payloads unmasked
/// on the stack or the heap by size) give the same verdicts and bytes as the plain rules.
@Suite("WebSocket receive fast paths")
struct ReceiveFastPathTests {
    /// Pieces that make valid and invalid UTF-8: ASCII runs of several lengths, two-, three- and
    /// four-byte characters, and bad sequences (stray byte, overlong, surrogate, cut character).
    static let pieces: [[UInt8]] = [
        Array("a".utf8), Array("abcdefg".utf8), Array("0123456789abcdefXYZ".utf8), Array("é".utf8),
        Array("€".utf8), Array("🙂".utf8), [0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF0, 0x9F],
        [0x80], [0xF4, 0x90, 0x80, 0x80],
    ]

    @Test func inMemoryValidatorAgreesWithTheTable() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(bound))
        }
        for _ in 0..<400 {
            var bytes: [UInt8] = []
            for _ in 0..<next(12) {
                // Mostly valid pieces, so that long valid messages are common.
                let piece = next(4) == 0 ? Self.pieces[next(Self.pieces.count)] : Self.pieces[next(6)]
                bytes += piece
            }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(UTF8Validator.isValid(bytes) == expected, "\(bytes)")
            // Fed from memory in up to three pieces cut anywhere, as frames and reads cut it.
            let cuts = [next(bytes.count + 1), next(bytes.count + 1)].sorted()
            var validator = UTF8Validator()
            var ok = true
            for range in [0..<cuts[0], cuts[0]..<cuts[1], cuts[1]..<bytes.count] {
                let part = Array(bytes[range])
                ok = part.withUnsafeBytes { validator.feed($0) } && ok
            }
            #expect((ok && validator.isComplete) == expected, "\(bytes) cut at \(cuts)")
        }
    }

    @Test func maskedTextOfEverySizeClassEchoes() throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let ws = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        defer { ws.close() }
        // Around the eight-byte steps and the stack/heap boundary (4 KiB) of unmasking.
        for size in [1, 7, 8, 9, 31, 4095, 4096, 4097, 20_000] {
            let text = String((0..<size).map { $0 % 37 == 36 ? "é" : "a" })
            ws.send(text: text)
            #expect(try ws.receive(timeout: .seconds(5)) == .text(text), "size \(size)")
        }
        let binary = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        ws.send(binary: binary)
        #expect(try ws.receive(timeout: .seconds(5)) == .binary(binary))
    }

    /// A message of many full reads: the loop stops reading after four and comes back on the
    /// next iteration (edge-triggered, no new event would come), while a second socket on the
    /// same server keeps being answered.
    @Test func longMessageIsReadAcrossIterations() throws {
        let server = try makeEchoServer { $0.loopCount = 1 }
        defer { server.shutdown() }
        let big = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        let small = try WebSocketClient.connect(url: "ws://127.0.0.1:\(server.port)/echo")
        defer {
            big.close()
            small.close()
        }
        let payload = (0..<900_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        for round in 0..<3 {
            big.send(binary: payload)
            small.send(text: "ping \(round)")
            #expect(try small.receive(timeout: .seconds(5)) == .text("ping \(round)"))
            #expect(try big.receive(timeout: .seconds(10)) == .binary(payload), "round \(round)")
        }
    }

    static let invalidAfterASCII: [(String, [UInt8])] = [
        (
            "stray byte after 40 ASCII",
            Array(repeating: 0x61, count: 40) + [0xFF] + Array(repeating: 0x61, count: 8)
        ),
        ("surrogate after 5000 ASCII", Array(repeating: 0x61, count: 5000) + [0xED, 0xA0, 0x80]),
        ("cut character at the end", Array(repeating: 0x61, count: 16) + [0xE2, 0x82]),
    ]

    @Test(arguments: invalidAfterASCII)
    func invalidTextAfterASCIIRunsIsRefused(_ item: (String, [UInt8])) throws {
        let server = try makeEchoServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        #expect(client.upgrade().hasPrefix("HTTP/1.1 101 "))
        client.send(RawClient.frame(1, item.1))
        #expect(client.readCloseCode() == 1007, "\(item.0)")
    }
}
