import Net
import Testing

/// The masking fast path (eight bytes at a time, then the tail) against the rule written out
/// byte by byte: payload byte i is XORed with mask byte i mod 4, in wire order (RFC 6455 §5.3).
@Suite("WebSocket frame masking")
struct FrameMaskingTests {
    @Test(arguments: [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 125, 126, 1000])
    func maskedBytesFollowTheRule(size: Int) throws {
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let mask: UInt32 = 0x0102_03F4
        let maskBytes: [UInt8] = [0x01, 0x02, 0x03, 0xF4]
        var wire: [UInt8] = []
        WebSocketFrameCodec.encode(opcode: .binary, payload: payload, maskKey: mask, into: &wire)
        let header = size < 126 ? 2 : 4
        #expect(wire.count == header + 4 + size)
        #expect(Array(wire[header..<(header + 4)]) == maskBytes)
        let expected = payload.enumerated().map { $0.element ^ maskBytes[$0.offset % 4] }
        #expect(Array(wire[(header + 4)...]) == expected)
        // And the server side reads it back.
        let parsed = try #require(
            try WebSocketFrameCodec.parse(wire, expectMasked: true, maxPayload: 1 << 20))
        #expect(parsed.frame.payload == payload)
    }

    @Test func unmaskedFrameCarriesThePayloadAsIs() {
        let payload = Array("hello, echo".utf8)
        var wire: [UInt8] = []
        WebSocketFrameCodec.encode(opcode: .text, payload: payload, maskKey: nil, into: &wire)
        #expect(wire == [0x81, UInt8(payload.count)] + payload)
    }
}
