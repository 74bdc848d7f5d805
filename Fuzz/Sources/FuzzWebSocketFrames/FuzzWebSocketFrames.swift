import Net

/// Feeds arbitrary bytes to the frame parser (both masking roles) and the frames it yields to
/// the session state machine, as a server and as a client would. Must never crash; frames must
/// re-encode to bytes that parse back to the same frame.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebSocketFrames(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let all = UnsafeRawBufferPointer(start: start, count: count)
    for role in [WebSocketSession.Role.server, .client] {
        var session = WebSocketSession(role: role, maxMessageBytes: 8192)
        var offset = 0
        while offset < count {
            let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
            guard
                let (frame, used) = try? WebSocketFrameCodec.parse(
                    rest, expectMasked: session.expectsMaskedFrames, maxPayload: 4096)
            else { break }
            precondition(used > 0 && used <= rest.count, "consumed out of range")
            offset += used
            var wire: [UInt8] = []
            WebSocketFrameCodec.encode(
                opcode: frame.opcode, payload: frame.payload, fin: frame.fin,
                maskKey: role == .server ? 0x0102_0304 : nil, into: &wire)
            let back = try? WebSocketFrameCodec.parse(wire, expectMasked: role == .server, maxPayload: 4096)
            precondition(back?.frame == frame, "re-encoding changed the frame")
            do {
                for action in try session.receive(frame) {
                    if case .deliver(.text(let text)) = action {
                        precondition(
                            String(validating: Array(text.utf8), as: UTF8.self) != nil,
                            "invalid text delivered")
                    }
                }
            } catch {
                precondition(error.closeCode.isValidOnWire, "close code not sendable")
                break
            }
        }
    }
    return 0
}
