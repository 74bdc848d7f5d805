import COpenSSL
import Foundation

/// A complete WebSocket message.
public enum WebSocketMessage: Sendable, Equatable {
    case text(String)
    case binary([UInt8])
}

/// What a WebSocket reports to the application.
public enum WebSocketEvent: Sendable, Equatable {
    case message(WebSocketMessage)
    /// The connection ended: the close code and reason from the peer's close frame (1005 when
    /// it carried none, 1006 when the connection dropped without one).
    case closed(WebSocketCloseCode, String)
}

/// The RFC 6455 receive-side rules as a pure state machine: frames in, actions out.
/// Handles fragmentation, incremental UTF-8 validation, control frames and the close handshake.
public struct WebSocketSession: Sendable {
    public enum Role: Sendable { case server, client }
    public enum State: Sendable, Equatable { case open, closeSent, closed }

    /// What to do after a frame.
    public enum Action: Sendable, Equatable {
        /// Hand a whole message to the application.
        case deliver(WebSocketMessage)
        /// Send this control frame (pong, or the close reply).
        case send(WebSocketOpcode, [UInt8])
        /// The close handshake finished (peer's code and reason); close the TCP connection.
        case finished(WebSocketCloseCode, String)
    }

    public let role: Role
    public let maxMessageBytes: Int
    /// Whether a data message over ``maxMessageBytes`` is read past (see ``startSkipping(_:)``)
    /// instead of failing the connection with 1009.
    public let skipsOversizedMessages: Bool
    public private(set) var state: State = .open
    private var fragmentOpcode: WebSocketOpcode?
    private var fragments: [UInt8] = []
    private var validator = UTF8Validator()
    /// The oversized message being dropped: payload bytes of the current frame still to come,
    /// the message's size so far, and whether the current frame ends it.
    private var oversized: (frameLeft: UInt64, size: UInt64, last: Bool)?

    public init(role: Role, maxMessageBytes: Int, skipsOversizedMessages: Bool = false) {
        self.role = role
        self.maxMessageBytes = maxMessageBytes
        self.skipsOversizedMessages = skipsOversizedMessages
    }

    // MARK: Oversized messages

    /// Whether payload bytes of an oversized message are being dropped (feed them to
    /// ``skip(_:)`` instead of parsing frames).
    public var isSkippingPayload: Bool { (oversized?.frameLeft ?? 0) > 0 }

    /// Looks at a frame header before its payload is read: true when the frame belongs to an
    /// oversized message, whose payload the caller then drops with ``skip(_:)`` without ever
    /// holding it. Nothing of such a message is delivered; its end is reported by `skip`. Control
    /// frames between its fragments are handled as usual.
    public mutating func startSkipping(_ header: WebSocketFrameCodec.Header) throws(WebSocketProtocolError)
        -> Bool
    {
        guard skipsOversizedMessages, state == .open, !header.opcode.isControl else { return false }
        let length = header.payloadLength
        if var current = oversized {
            guard header.opcode == .continuation else {
                throw WebSocketProtocolError(
                    .protocolError, "New data frame while a fragmented message is open")
            }
            current.frameLeft = length
            current.size = current.size &+ length
            current.last = header.fin
            oversized = current
            return true
        }
        let limit = UInt64(max(0, maxMessageBytes))
        if header.opcode == .continuation {
            guard fragmentOpcode != nil else { return false }
            let size = UInt64(fragments.count) + length
            guard size > limit else { return false }
            fragments = []
            fragmentOpcode = nil
            validator = UTF8Validator()
            oversized = (length, size, header.fin)
            return true
        }
        guard fragmentOpcode == nil, length > limit else { return false }
        oversized = (length, length, header.fin)
        return true
    }

    /// Drops up to `available` payload bytes of the oversized message. Returns how many it
    /// took and, once the message's last frame is over, the message's whole size.
    public mutating func skip(_ available: Int) -> (used: Int, finishedSize: UInt64?) {
        guard var current = oversized else { return (0, nil) }
        let used = Int(min(current.frameLeft, UInt64(max(0, available))))
        current.frameLeft -= UInt64(used)
        guard current.frameLeft == 0, current.last else {
            oversized = current
            return (used, nil)
        }
        oversized = nil
        return (used, current.size)
    }

    /// Whether received frames must be masked.
    public var expectsMaskedFrames: Bool { role == .server }

    /// Takes one received frame. Throws the violation to fail the connection with.
    public mutating func receive(_ frame: WebSocketFrame) throws(WebSocketProtocolError) -> [Action] {
        let actions = try receiveInline(frame)
        return [actions.first, actions.second].compactMap { $0 }
    }

    /// The actions after one frame: at most two (the close reply and the end), kept inline so
    /// the connection's hot path allocates no array.
    struct Actions {
        var first: Action?
        var second: Action?
        init(_ first: Action? = nil, _ second: Action? = nil) {
            self.first = first
            self.second = second
        }
    }

    /// ``receive(_:)`` without the array.
    mutating func receiveInline(_ frame: WebSocketFrame) throws(WebSocketProtocolError) -> Actions {
        if state == .closed { return Actions() }
        switch frame.opcode {
        case .ping:
            return state == .open ? Actions(.send(.pong, frame.payload)) : Actions()
        case .pong:
            return Actions()
        case .close:
            let (code, reason) = try Self.parseClose(frame.payload)
            if state == .open {
                state = .closed
                let reply = WebSocketFrameCodec.closePayload(code: code == .noStatus ? nil : code, reason: "")
                return Actions(.send(.close, reply), .finished(code, reason))
            }
            state = .closed
            return Actions(.finished(code, reason))
        case .text, .binary:
            if fragmentOpcode != nil {
                throw WebSocketProtocolError(
                    .protocolError, "New data frame while a fragmented message is open")
            }
            if state != .open { return Actions() }
            if frame.payload.count > maxMessageBytes {
                throw WebSocketProtocolError(.messageTooBig, "Message larger than \(maxMessageBytes) bytes")
            }
            if frame.opcode == .text && !validator.feed(frame.payload) {
                validator = UTF8Validator()
                throw WebSocketProtocolError(.invalidPayload, "Text message is not valid UTF-8")
            }
            if frame.fin {
                return Actions(.deliver(try finish(frame.opcode, frame.payload)))
            }
            fragmentOpcode = frame.opcode
            fragments = frame.payload
            return Actions()
        case .continuation:
            guard let opcode = fragmentOpcode else {
                throw WebSocketProtocolError(
                    .protocolError, "Continuation frame without a message to continue")
            }
            if fragments.count + frame.payload.count > maxMessageBytes {
                throw WebSocketProtocolError(.messageTooBig, "Message larger than \(maxMessageBytes) bytes")
            }
            if opcode == .text && !validator.feed(frame.payload) {
                throw WebSocketProtocolError(.invalidPayload, "Text message is not valid UTF-8")
            }
            fragments.append(contentsOf: frame.payload)
            if !frame.fin { return Actions() }
            let whole = fragments
            fragments = []
            fragmentOpcode = nil
            if state != .open { return Actions() }
            return Actions(.deliver(try finish(opcode, whole)))
        default:
            throw WebSocketProtocolError(.protocolError, "Reserved opcode \(frame.opcode.rawValue)")
        }
    }

    private mutating func finish(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws(WebSocketProtocolError)
        -> WebSocketMessage
    {
        if opcode == .text {
            let complete = validator.isComplete
            validator = UTF8Validator()
            guard complete else {
                throw WebSocketProtocolError(.invalidPayload, "Text message ends inside a character")
            }
            return .text(String(decoding: payload, as: UTF8.self))
        }
        return .binary(payload)
    }

    /// Marks our close frame as sent; false if a close was already sent or received.
    public mutating func startClosing() -> Bool {
        guard state == .open else { return false }
        state = .closeSent
        return true
    }

    /// Marks the session dead (TCP gone or failed).
    public mutating func markClosed() { state = .closed }

    static func parseClose(_ payload: [UInt8]) throws(WebSocketProtocolError) -> (WebSocketCloseCode, String)
    {
        if payload.isEmpty { return (.noStatus, "") }
        if payload.count == 1 {
            throw WebSocketProtocolError(.protocolError, "Close frame with a 1-byte payload")
        }
        let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnWire else {
            throw WebSocketProtocolError(.protocolError, "Invalid close code \(code.rawValue)")
        }
        let reason = payload[2...]
        guard UTF8Validator.isValid(reason) else {
            throw WebSocketProtocolError(.invalidPayload, "Close reason is not valid UTF-8")
        }
        return (code, String(decoding: reason, as: UTF8.self))
    }
}

/// The opening handshake (RFC 6455 §4).
public enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a key: base64(SHA-1(key + GUID)).
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        _ = EVP_Digest(input, input.count, &digest, &length, EVP_sha1(), nil)
        return Data(digest).base64EncodedString()
    }

    /// The outcome of checking an upgrade request.
    public enum Decision: Sendable {
        /// Accept, answering with this `Sec-WebSocket-Accept` value.
        case accept(String)
        /// Refuse with this response.
        case refuse(HTTPResponse)
    }

    /// Checks an upgrade request; returns the accept value or the response to refuse it with.
    public static func validate(_ request: HTTPRequest) -> Decision {
        func refuse(_ message: String, _ status: HTTPStatus = .badRequest) -> Decision {
            .refuse(HTTPResponse.error(status, code: "bad_websocket_handshake", message: message))
        }
        guard request.method == .get else {
            return refuse("WebSocket upgrade must use GET", .methodNotAllowed)
        }
        guard request.minorVersion == 1 else { return refuse("WebSocket upgrade needs HTTP/1.1") }
        guard request.headers.containsToken("Upgrade", "websocket") else {
            return refuse("Missing Upgrade: websocket", .upgradeRequired)
        }
        guard request.headers.containsToken("Connection", "upgrade") else {
            return refuse("Missing Connection: Upgrade")
        }
        guard request.headers.values("Sec-WebSocket-Version") == ["13"] else {
            var response = HTTPResponse.error(
                .upgradeRequired, code: "bad_websocket_version",
                message: "Only WebSocket version 13 is supported")
            response.headers.add("Sec-WebSocket-Version", "13")
            return .refuse(response)
        }
        let keys = request.headers.values("Sec-WebSocket-Key")
        guard keys.count == 1, let decoded = Data(base64Encoded: keys[0]), decoded.count == 16 else {
            return refuse("Sec-WebSocket-Key must be 16 bytes in base64")
        }
        return .accept(acceptValue(forKey: keys[0]))
    }

    /// The 101 response for an accepted upgrade (no subprotocol, no extension).
    static func response(accept: String) -> [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(accept)\r\n\r\n").utf8)
    }

    /// A fresh random client key.
    static func makeKey() -> String {
        // One call for the 16 bytes: a byte at a time from the system generator was 16
        // `getrandom` system calls per connection.
        var bytes = [UInt8](repeating: 0, count: 16)
        RandomPool.fill(&bytes)
        return Data(bytes).base64EncodedString()
    }
}
