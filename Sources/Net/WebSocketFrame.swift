/// A WebSocket opcode (RFC 6455 §5.2).
public struct WebSocketOpcode: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let continuation = WebSocketOpcode(rawValue: 0x0)
    public static let text = WebSocketOpcode(rawValue: 0x1)
    public static let binary = WebSocketOpcode(rawValue: 0x2)
    public static let close = WebSocketOpcode(rawValue: 0x8)
    public static let ping = WebSocketOpcode(rawValue: 0x9)
    public static let pong = WebSocketOpcode(rawValue: 0xA)
    /// Close, ping and pong (and the reserved 0xB–0xF).
    public var isControl: Bool { rawValue & 0x8 != 0 }
    var isKnown: Bool { [0, 1, 2, 8, 9, 10].contains(rawValue) }
}

/// A WebSocket close status code (RFC 6455 §7.4).
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let normal = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// Never sent: reported when a close frame carried no code.
    public static let noStatus = WebSocketCloseCode(rawValue: 1005)
    /// Never sent: reported when the connection dropped without a close frame.
    public static let abnormal = WebSocketCloseCode(rawValue: 1006)
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let internalError = WebSocketCloseCode(rawValue: 1011)
    public static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)

    /// Whether a peer may put this code on the wire.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }
    public var description: String { String(rawValue) }
}

/// One frame, payload already unmasked.
public struct WebSocketFrame: Sendable, Equatable {
    public var fin: Bool
    /// RSV1–3 as the top three bits of the first byte (must be 0: we negotiate no extension).
    public var rsv: UInt8
    public var opcode: WebSocketOpcode
    public var payload: [UInt8]

    public init(fin: Bool = true, rsv: UInt8 = 0, opcode: WebSocketOpcode, payload: [UInt8]) {
        self.fin = fin
        self.rsv = rsv
        self.opcode = opcode
        self.payload = payload
    }
}

/// A protocol violation by the peer, with the close code to fail the connection with.
public struct WebSocketProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    public let closeCode: WebSocketCloseCode
    public let message: String
    init(_ code: WebSocketCloseCode, _ message: String) {
        closeCode = code
        self.message = message
    }
    public var description: String { "\(closeCode.rawValue): \(message)" }
}

/// Parses and writes frames. Stateless; no I/O.
public enum WebSocketFrameCodec {
    /// The fixed part of a frame: everything before the payload.
    public struct Header: Sendable, Equatable {
        public var fin: Bool
        public var rsv: UInt8
        public var opcode: WebSocketOpcode
        /// The payload length the header announces.
        public var payloadLength: UInt64
        /// Bytes of header, the mask key included.
        public var headerBytes: Int
        /// The mask key, big-endian (0 when unmasked).
        public var maskKey: UInt32

        public init(
            fin: Bool, rsv: UInt8, opcode: WebSocketOpcode, payloadLength: UInt64, headerBytes: Int,
            maskKey: UInt32
        ) {
            self.fin = fin
            self.rsv = rsv
            self.opcode = opcode
            self.payloadLength = payloadLength
            self.headerBytes = headerBytes
            self.maskKey = maskKey
        }
    }

    /// Parses the header at the start of `bytes` and checks it against the protocol (masking,
    /// control frame rules); nil when more bytes are needed. The payload length is not limited.
    public static func parseHeader(
        _ bytes: UnsafeRawBufferPointer, expectMasked: Bool
    ) throws(WebSocketProtocolError) -> Header? {
        guard bytes.count >= 2 else { return nil }
        let b0 = bytes[0]
        let b1 = bytes[1]
        let fin = b0 & 0x80 != 0
        let rsv = b0 & 0x70
        let opcode = WebSocketOpcode(rawValue: b0 & 0x0F)
        let masked = b1 & 0x80 != 0
        if rsv != 0 { throw WebSocketProtocolError(.protocolError, "Reserved bits set without an extension") }
        if !opcode.isKnown {
            throw WebSocketProtocolError(.protocolError, "Reserved opcode \(opcode.rawValue)")
        }
        if masked != expectMasked {
            throw WebSocketProtocolError(
                .protocolError, expectMasked ? "Client frame is not masked" : "Server frame is masked")
        }
        var length = UInt64(b1 & 0x7F)
        var offset = 2
        if opcode.isControl {
            if !fin { throw WebSocketProtocolError(.protocolError, "Fragmented control frame") }
            if length > 125 {
                throw WebSocketProtocolError(.protocolError, "Control frame longer than 125 bytes")
            }
        }
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = UInt64(bytes[2]) << 8 | UInt64(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(bytes[i]) }
            if length & (1 << 63) != 0 {
                throw WebSocketProtocolError(
                    .protocolError, "64-bit length with the most significant bit set")
            }
            offset = 10
        }
        var maskKey: UInt32 = 0
        if masked {
            guard bytes.count >= offset + 4 else { return nil }
            maskKey =
                UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
                | UInt32(bytes[offset + 3])
            offset += 4
        }
        return Header(
            fin: fin, rsv: rsv, opcode: opcode, payloadLength: length, headerBytes: offset, maskKey: maskKey)
    }

    /// Parses one frame from the start of `bytes`. `expectMasked`: true on the server (client
    /// frames must be masked), false on the client (server frames must not be). Returns nil when
    /// more bytes are needed.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, expectMasked: Bool, maxPayload: Int
    ) throws(WebSocketProtocolError) -> (frame: WebSocketFrame, consumed: Int)? {
        guard let header = try parseHeader(bytes, expectMasked: expectMasked) else { return nil }
        if header.payloadLength > UInt64(maxPayload) {
            throw WebSocketProtocolError(.messageTooBig, "Frame larger than \(maxPayload) bytes")
        }
        let masked = expectMasked
        let offset = header.headerBytes
        let maskKey = header.maskKey
        let n = Int(header.payloadLength)
        guard bytes.count - offset >= n else { return nil }
        let payload = [UInt8](unsafeUninitializedCapacity: n) { buffer, initialized in
            if n > 0 {
                let source = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)])
                let target = UnsafeMutableRawBufferPointer(buffer)
                if masked {
                    xorMask(source, maskKey, into: target)
                } else {
                    target.copyMemory(from: source)
                }
            }
            initialized = n
        }
        return (
            WebSocketFrame(fin: header.fin, rsv: header.rsv, opcode: header.opcode, payload: payload),
            offset + n
        )
    }

    /// Convenience for arrays.
    public static func parse(
        _ bytes: [UInt8], expectMasked: Bool, maxPayload: Int
    ) throws(WebSocketProtocolError) -> (frame: WebSocketFrame, consumed: Int)? {
        let result: Result<(frame: WebSocketFrame, consumed: Int)?, WebSocketProtocolError> =
            bytes.withUnsafeBytes { raw in
                do throws(WebSocketProtocolError) {
                    return .success(try parse(raw, expectMasked: expectMasked, maxPayload: maxPayload))
                } catch {
                    return .failure(error)
                }
            }
        return try result.get()
    }

    /// Copies `source` to `target` (at least as long), XORed with the big-endian 4-byte mask
    /// `maskKey` (RFC 6455 §5.3), eight bytes at a time.
    static func xorMask(
        _ source: UnsafeRawBufferPointer, _ maskKey: UInt32, into target: UnsafeMutableRawBufferPointer
    ) {
        let n = source.count
        precondition(target.count >= n)
        guard n > 0, let from = source.baseAddress, let to = target.baseAddress else { return }
        // The mask bytes in wire order, repeated to fill a word.
        let key32 = maskKey.bigEndian
        let key64 = UInt64(key32) | UInt64(key32) << 32
        var i = 0
        while i + 8 <= n {
            let word = from.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            to.storeBytes(of: word ^ key64, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < n {
            let keyByte = UInt8(truncatingIfNeeded: maskKey >> UInt32(24 - 8 * (i & 3)))
            to.storeBytes(
                of: from.load(fromByteOffset: i, as: UInt8.self) ^ keyByte, toByteOffset: i, as: UInt8.self)
            i += 1
        }
    }

    /// Longest frame header: 2 bytes, an 8-byte length and a 4-byte mask.
    static let maxHeaderBytes = 14

    /// Writes the wire form of a frame to the start of `out`, which must hold
    /// `payload.count + maxHeaderBytes` bytes; returns the frame's length. A `maskKey` masks it.
    static func encode(
        opcode: WebSocketOpcode, payload: UnsafeRawBufferPointer, fin: Bool = true, maskKey: UInt32?,
        into out: UnsafeMutableRawBufferPointer
    ) -> Int {
        let n = payload.count
        precondition(out.count >= n + maxHeaderBytes)
        out[0] = (fin ? 0x80 : 0) | opcode.rawValue
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        var offset: Int
        if n < 126 {
            out[1] = maskBit | UInt8(n)
            offset = 2
        } else if n <= 0xFFFF {
            out[1] = maskBit | 126
            out[2] = UInt8(n >> 8)
            out[3] = UInt8(n & 0xFF)
            offset = 4
        } else {
            out[1] = maskBit | 127
            for i in 0..<8 { out[2 + i] = UInt8((UInt64(n) >> UInt64(56 - 8 * i)) & 0xFF) }
            offset = 10
        }
        let body = UnsafeMutableRawBufferPointer(rebasing: out[(offset + (maskKey == nil ? 0 : 4))...])
        if let maskKey {
            for i in 0..<4 { out[offset + i] = UInt8(truncatingIfNeeded: maskKey >> UInt32(24 - 8 * i)) }
            offset += 4
            xorMask(payload, maskKey, into: body)
        } else if n > 0 {
            body.copyMemory(from: payload)
        }
        return offset + n
    }

    /// Appends the wire form of a frame to `out`. A `maskKey` masks it (clients must).
    public static func encode(
        opcode: WebSocketOpcode, payload: some Collection<UInt8>, fin: Bool = true, maskKey: UInt32? = nil,
        into out: inout [UInt8]
    ) {
        let bytes = Array(payload)
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: bytes.count + maxHeaderBytes))
        let length = bytes.withUnsafeBytes { source in
            out.withUnsafeMutableBytes { target in
                encode(
                    opcode: opcode, payload: source, fin: fin, maskKey: maskKey,
                    into: UnsafeMutableRawBufferPointer(rebasing: target[start...]))
            }
        }
        out.removeLast(bytes.count + maxHeaderBytes - length)
    }

    /// The payload of a close frame.
    public static func closePayload(code: WebSocketCloseCode?, reason: String) -> [UInt8] {
        guard let code else { return [] }
        var out = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        // Keep the whole control frame within 125 bytes, cutting on a character boundary.
        var reasonBytes = Array(reason.utf8)
        while reasonBytes.count > 123 || !UTF8Validator.isValid(reasonBytes) { reasonBytes.removeLast() }
        out += reasonBytes
        return out
    }
}
