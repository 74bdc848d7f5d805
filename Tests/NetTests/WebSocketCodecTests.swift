import Net
import Testing

@Suite("WebSocket codec and session")
struct WebSocketCodecTests {
    @Test func acceptValueFromRFCExample() {
        #expect(
            WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==")
                == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func roundTripWithAndWithoutMask() throws {
        for size in [0, 1, 125, 126, 65535, 65536, 70000] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
            for mask: UInt32? in [nil, 0xDEAD_BEEF] {
                var wire: [UInt8] = []
                WebSocketFrameCodec.encode(opcode: .binary, payload: payload, maskKey: mask, into: &wire)
                let parsed = try #require(
                    try WebSocketFrameCodec.parse(wire, expectMasked: mask != nil, maxPayload: 1 << 20))
                #expect(parsed.frame.payload == payload)
                #expect(parsed.consumed == wire.count)
                #expect(
                    try WebSocketFrameCodec.parse(
                        Array(wire.dropLast()), expectMasked: mask != nil, maxPayload: 1 << 20) == nil)
            }
        }
    }

    static let violations: [(String, [UInt8], UInt16)] = [
        ("unmasked client frame", RawClient.frame(1, [0x61], masked: false), 1002),
        ("rsv1", RawClient.frame(1, [0x61], rsv: 0x40), 1002),
        ("reserved opcode", RawClient.frame(3, []), 1002),
        ("reserved control opcode", RawClient.frame(0xB, []), 1002),
        ("fragmented ping", RawClient.frame(9, [], fin: false), 1002),
        ("long ping", RawClient.frame(9, Array(repeating: 0, count: 126)), 1002),
        ("64-bit high bit", [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4], 1002),
        ("too big", [0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4], 1009),
    ]

    @Test(arguments: violations)
    func frameViolations(_ item: (String, [UInt8], UInt16)) {
        do {
            _ = try WebSocketFrameCodec.parse(item.1, expectMasked: true, maxPayload: 1 << 20)
            Issue.record("\(item.0) accepted")
        } catch {
            #expect(error.closeCode.rawValue == item.2, "\(item.0)")
        }
    }

    @Test func fragmentationAndInterleavedControl() throws {
        var session = WebSocketSession(role: .server, maxMessageBytes: 100)
        #expect(
            try session.receive(WebSocketFrame(fin: false, opcode: .text, payload: Array("he".utf8))) == [])
        #expect(try session.receive(WebSocketFrame(opcode: .ping, payload: [1])) == [.send(.pong, [1])])
        #expect(
            try session.receive(WebSocketFrame(fin: false, opcode: .continuation, payload: Array("l".utf8)))
                == [])
        #expect(
            try session.receive(WebSocketFrame(opcode: .continuation, payload: Array("lo".utf8)))
                == [.deliver(.text("hello"))])
    }

    @Test func utf8SplitAcrossFragments() throws {
        // "é" = C3 A9 split across two frames is fine…
        var ok = WebSocketSession(role: .server, maxMessageBytes: 100)
        _ = try ok.receive(WebSocketFrame(fin: false, opcode: .text, payload: [0xC3]))
        #expect(
            try ok.receive(WebSocketFrame(opcode: .continuation, payload: [0xA9])) == [.deliver(.text("é"))])
        // …but C3 followed by an ASCII byte is not, and is caught at the second fragment.
        var bad = WebSocketSession(role: .server, maxMessageBytes: 100)
        _ = try bad.receive(WebSocketFrame(fin: false, opcode: .text, payload: [0x61, 0xC3]))
        #expect(throws: WebSocketProtocolError.self) {
            _ = try bad.receive(WebSocketFrame(fin: false, opcode: .continuation, payload: [0x61]))
        }
        // A message ending inside a character.
        var cut = WebSocketSession(role: .server, maxMessageBytes: 100)
        do {
            _ = try cut.receive(WebSocketFrame(opcode: .text, payload: [0xE2, 0x82]))
            Issue.record("accepted")
        } catch { #expect(error.closeCode == .invalidPayload) }
    }

    @Test func sequencingErrors() {
        var s1 = WebSocketSession(role: .server, maxMessageBytes: 100)
        #expect(throws: WebSocketProtocolError.self) {
            _ = try s1.receive(WebSocketFrame(opcode: .continuation, payload: []))
        }
        var s2 = WebSocketSession(role: .server, maxMessageBytes: 100)
        _ = try? s2.receive(WebSocketFrame(fin: false, opcode: .binary, payload: [1]))
        #expect(throws: WebSocketProtocolError.self) {
            _ = try s2.receive(WebSocketFrame(opcode: .binary, payload: [2]))
        }
        var s3 = WebSocketSession(role: .server, maxMessageBytes: 4)
        _ = try? s3.receive(WebSocketFrame(fin: false, opcode: .binary, payload: [1, 2, 3]))
        do {
            _ = try s3.receive(WebSocketFrame(opcode: .continuation, payload: [4, 5]))
            Issue.record("accepted")
        } catch { #expect(error.closeCode == .messageTooBig) }
    }

    static let closePayloads: [([UInt8], UInt16?)] = [
        ([], nil), ([0x03], 1002), ([0x03, 0xE8], nil), ([0x03, 0xED], 1002), ([0x03, 0xEE], 1002),
        ([0x03, 0xE7], 1002), ([0x0B, 0xB8], nil), ([0x13, 0x88], 1002), ([0x03, 0xE8, 0xFF], 1007),
    ]

    @Test(arguments: closePayloads)
    func closeCodes(_ payload: [UInt8], _ expected: UInt16?) {
        var session = WebSocketSession(role: .server, maxMessageBytes: 100)
        do {
            let actions = try session.receive(WebSocketFrame(opcode: .close, payload: payload))
            #expect(expected == nil, "accepted \(payload)")
            #expect(actions.count == 2)
            #expect(session.state == .closed)
        } catch {
            #expect(error.closeCode.rawValue == expected)
        }
    }

    @Test func utf8ValidatorAgreesWithStandardLibrary() {
        var rng = SystemRandomNumberGenerator()
        let interesting: [UInt8] = [
            0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF,
            0xA0, 0x9F, 0x90, 0x8F,
        ]
        for _ in 0..<400 {
            let length = Int.random(in: 0...8, using: &rng)
            let bytes = (0..<length).map { _ in interesting.randomElement(using: &rng)! }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(UTF8Validator.isValid(bytes) == expected, "\(bytes)")
            // Fed in two pieces at every split point, the answer is the same.
            for split in 0...length {
                var v = UTF8Validator()
                let ok = v.feed(bytes[0..<split]) && v.feed(bytes[split...]) && v.isComplete
                #expect(ok == expected)
            }
        }
        #expect(!UTF8Validator.isValid([0xED, 0xA0, 0x80]))  // surrogate
        #expect(!UTF8Validator.isValid([0xC0, 0x80]))  // overlong
        #expect(UTF8Validator.isValid(Array("κόσμε🙂".utf8)))
    }
}
