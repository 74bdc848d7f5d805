import COpenSSL
import Foundation

/// A client WebSocket read and written by the thread that uses it (``WebSocketClient/connectBlocking(url:headers:options:tls:timeout:)``):
/// no event loop, no thread hand-off. ``receive(timeout:)`` reads frames from the socket itself
/// (answering pings and the peer's close on the way), ``send(text:)`` writes the frame at once.
/// Same rules as the loop-driven ``WebSocket``: masking, frame and message limits (1009),
/// UTF-8 validation (1007), the close handshake, pings after ``WebSocketOptions/pingInterval``
/// of silence while a thread waits in `receive`. Not `Sendable`: use it from one thread at a
/// time; for callbacks or several threads, use ``WebSocketClient/connect(url:headers:options:tls:timeout:loop:completion:)``.
public final class BlockingWebSocket: CustomStringConvertible {
    /// The TCP peer.
    public var remoteAddress: SocketAddress { transport.remote }
    /// The request path.
    public let path: String

    private let transport: DirectTransport
    private let options: WebSocketOptions
    private var session: WebSocketSession
    /// Bytes read and not yet parsed, from `inboundStart`.
    private var inbound: [UInt8]
    private var inboundStart = 0
    /// Where reads land before they join `inbound`.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16384, alignment: 16)
    private var closeEvent: (code: WebSocketCloseCode, reason: String)?
    private var lastReceive = monotonicNanos()
    private var pingSentAt: UInt64?
    /// Masking keys for 16 frames per refill: a short rendezvous sends about ten.
    private var masks = RandomPool(byteCount: 64)
    /// With ``WebSocketOptions/skipOversizedMessages``: called with the size of each message
    /// that was too large and dropped.
    public var onOversizedMessage: ((Int) -> Void)?

    init(transport: DirectTransport, path: String, options: WebSocketOptions, leftover: [UInt8]) {
        self.transport = transport
        self.path = path
        self.options = options
        session = WebSocketSession(
            role: .client, maxMessageBytes: options.maxMessageBytes,
            skipsOversizedMessages: options.skipOversizedMessages)
        inbound = leftover
    }

    deinit {
        transport.close()
        scratch.deallocate()
    }

    public var description: String { "BlockingWebSocket(\(remoteAddress)\(path))" }

    // MARK: Sending

    /// Sends a text message. Dropped if the socket is closing or closed.
    public func send(text: String) {
        var text = text
        text.withUTF8 { sendMessage(.text, UnsafeRawBufferPointer($0)) }
    }

    /// Sends text messages back to back in one write. The messages one protocol step sends (a
    /// rendezvous client's `bind`, `claim`, `open` and `add`) then cost one system call here and
    /// one read at the peer, not one each; all are written before this returns, as `send(text:)`
    /// writes its one. Dropped if the socket is closing or closed.
    public func send(texts: [String]) {
        guard session.state == .open, !transport.isClosed, !texts.isEmpty else { return }
        var frames: [UInt8] = []
        for text in texts {
            var text = text
            text.withUTF8 { appendFrame(.text, UnsafeRawBufferPointer($0), to: &frames) }
        }
        write(frames)
    }

    /// Sends a binary message. Dropped if the socket is closing or closed.
    public func send(binary: [UInt8]) { binary.withUnsafeBytes { sendMessage(.binary, $0) } }

    /// Sends a message.
    public func send(_ message: WebSocketMessage) {
        switch message {
        case .text(let text): send(text: text)
        case .binary(let bytes): send(binary: bytes)
        }
    }

    /// Sends a ping (pongs are answered while receiving; this only proves liveness).
    public func ping() { sendMessage(.ping, UnsafeRawBufferPointer(start: nil, count: 0)) }

    private func sendMessage(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        guard session.state == .open else { return }
        sendFrame(opcode, payload)
    }

    /// Writes one masked frame.
    private func sendFrame(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        guard !transport.isClosed else { return }
        var frame: [UInt8] = []
        appendFrame(opcode, payload, to: &frame)
        write(frame)
    }

    /// Appends one frame, masked with a fresh key, to `out`.
    private func appendFrame(
        _ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer, to out: inout [UInt8]
    ) {
        let mask = masks.nextUInt32()
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: payload.count + WebSocketFrameCodec.maxHeaderBytes))
        let length = out.withUnsafeMutableBytes {
            WebSocketFrameCodec.encode(
                opcode: opcode, payload: payload, maskKey: mask,
                into: UnsafeMutableRawBufferPointer(rebasing: $0[start...]))
        }
        out.removeLast(payload.count + WebSocketFrameCodec.maxHeaderBytes - length)
    }

    /// Writes encoded frames whole. A peer that takes nothing for a ping interval and timeout is
    /// dropped, as the loop-driven socket drops one that does not answer a ping.
    private func write(_ frames: [UInt8]) {
        guard !transport.isClosed else { return }
        let stall = (options.pingInterval + options.pingTimeout).nanoseconds
        do throws(NetError) {
            if try !transport.write(frames, until: monotonicNanos() &+ stall) {
                drop(NetError(.messageTooLarge, "Peer is not reading: its output has not moved"))
            }
        } catch {
            drop(error)
        }
    }

    private func sendFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8]) {
        payload.withUnsafeBytes { sendFrame(opcode, $0) }
    }

    // MARK: Closing

    /// Starts the close handshake and waits (up to ``WebSocketOptions/closeTimeout``) for the
    /// peer's close frame, dropping messages that arrive meanwhile, then closes the connection.
    /// Waiting keeps the peer's reply from resetting a socket already closed.
    public func close(code: WebSocketCloseCode = .normal, reason: String = "") {
        guard !transport.isClosed, session.startClosing() else { return }
        sendFrame(.close, WebSocketFrameCodec.closePayload(code: code, reason: reason))
        let deadline = monotonicNanos() &+ options.closeTimeout.nanoseconds
        while closeEvent == nil && !transport.isClosed {
            if readMore(until: deadline) == nil {
                drop(NetError(.timedOut, "Connection timed out"))
            } else {
                _ = parseBuffered()
            }
        }
        transport.close()
    }

    /// The close code and reason, once closed.
    public var closeStatus: (code: WebSocketCloseCode, reason: String)? { closeEvent }

    // MARK: Receiving

    /// Waits for the next message. Throws `connectionClosed` (with the close code in the message)
    /// once the socket has closed, or `timedOut` (the socket stays open).
    public func receive(timeout: Duration = .seconds(30)) throws(NetError) -> WebSocketMessage {
        let deadline = monotonicNanos() &+ timeout.nanoseconds
        while true {
            if let message = parseBuffered() { return message }
            if let (code, reason) = closeEvent {
                throw NetError(.connectionClosed, "WebSocket closed with \(code.rawValue) \(reason)")
            }
            // Wake for the liveness check too: a ping after a silent interval, a drop when it
            // goes unanswered.
            let check =
                pingSentAt.map { $0 &+ options.pingTimeout.nanoseconds }
                ?? lastReceive &+ options.pingInterval.nanoseconds
            if readMore(until: min(deadline, check)) == nil {
                let now = monotonicNanos()
                if now >= check { checkLiveness(now) }
                if closeEvent == nil && now >= deadline {
                    throw NetError(.timedOut, "No WebSocket message within \(timeout)")
                }
            }
        }
    }

    /// Waits until the socket has closed (dropping messages); returns its close code and reason.
    @discardableResult
    public func waitUntilClosed(timeout: Duration = .seconds(30)) throws(NetError) -> (
        code: WebSocketCloseCode, reason: String
    ) {
        let deadline = monotonicNanos() &+ timeout.nanoseconds
        while true {
            do {
                _ = try receive(
                    timeout: .nanoseconds(Int64(clamping: deadline &- min(deadline, monotonicNanos()))))
            } catch  where error.code == .connectionClosed {
                if let closeEvent { return closeEvent }
            } catch  where error.code == .timedOut {
                throw NetError(.timedOut, "WebSocket did not close within \(timeout)")
            }
        }
    }

    private func checkLiveness(_ now: UInt64) {
        if pingSentAt != nil {
            drop(NetError(.timedOut, "Peer did not answer a ping"))
        } else {
            pingSentAt = now
            sendFrame(.ping, [UInt8]())
        }
    }

    /// Reads what the socket has into `inbound`, waiting up to `deadline`: false at the end
    /// of the stream or on an error (the socket is then closed), nil when the deadline passed.
    private func readMore(until deadline: UInt64) -> Bool? {
        guard !transport.isClosed else { return false }
        let count: Int?
        do throws(NetError) {
            count = try transport.read(into: scratch, until: deadline)
        } catch {
            drop(error)
            return false
        }
        guard let count else { return nil }
        guard count > 0 else {
            drop(NetError(.connectionClosed, "Connection closed without a close frame"))
            return false
        }
        if inboundStart >= inbound.count {
            inbound.removeAll(keepingCapacity: true)
            inboundStart = 0
        } else if inboundStart > 0 && inboundStart >= inbound.count / 2 {
            inbound.removeFirst(inboundStart)
            inboundStart = 0
        }
        inbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        lastReceive = monotonicNanos()
        pingSentAt = nil
        return true
    }

    /// Handles the frames buffered, up to the first whole message (returned).
    private func parseBuffered() -> WebSocketMessage? {
        while inboundStart < inbound.count && !transport.isClosed {
            let result: (used: Int, message: WebSocketMessage?)? = inbound.withUnsafeBytes { all in
                parseOne(UnsafeRawBufferPointer(rebasing: all[inboundStart...]))
            }
            guard let (used, message) = result else { return nil }
            inboundStart += used
            if let message { return message }
        }
        return nil
    }

    /// One frame (or the oversized message's bytes being dropped) from the start of `bytes`;
    /// nil when more bytes are needed.
    private func parseOne(_ bytes: UnsafeRawBufferPointer) -> (used: Int, message: WebSocketMessage?)? {
        if session.isSkippingPayload { return (skipOversized(bytes.count), nil) }
        do throws(WebSocketProtocolError) {
            if options.skipOversizedMessages,
                let header = try WebSocketFrameCodec.parseHeader(bytes, expectMasked: false),
                try session.startSkipping(header)
            {
                return (header.headerBytes + skipOversized(bytes.count - header.headerBytes), nil)
            }
            guard
                let (frame, used) = try WebSocketFrameCodec.parse(
                    bytes, expectMasked: false, maxPayload: options.maxFrameBytes)
            else { return nil }
            var message: WebSocketMessage?
            let actions = try session.receiveInline(frame)
            for action in [actions.first, actions.second] {
                switch action {
                case .deliver(let m): message = m
                case .send(let opcode, let payload): sendFrame(opcode, payload)
                case .finished(let code, let reason): finish(code, reason)
                case nil: break
                }
            }
            return (used, message)
        } catch {
            // Fail the connection: our close frame with the violation's code, then close.
            if session.startClosing() {
                sendFrame(
                    .close, WebSocketFrameCodec.closePayload(code: error.closeCode, reason: error.message))
            }
            finish(error.closeCode, error.message)
            return (bytes.count, nil)
        }
    }

    private func skipOversized(_ available: Int) -> Int {
        let (used, finished) = session.skip(available)
        if let finished { onOversizedMessage?(Int(clamping: finished)) }
        return used
    }

    /// The connection is over: the close event is `code`, `reason`.
    private func finish(_ code: WebSocketCloseCode, _ reason: String) {
        session.markClosed()
        if closeEvent == nil { closeEvent = (code, reason) }
        transport.close()
        inbound = []
        inboundStart = 0
    }

    /// The connection failed: closes it, reported as 1006 with the error's message.
    private func drop(_ error: NetError) {
        finish(.abnormal, error.message)
    }
}
