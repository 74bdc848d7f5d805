import CNet
import Foundation

/// Limits and timers of a WebSocket connection.
public struct WebSocketOptions: Sendable {
    /// Largest single frame payload accepted; larger closes with 1009.
    public var maxFrameBytes = 1 << 20
    /// Largest reassembled message accepted; larger closes with 1009 (unless skipped).
    public var maxMessageBytes = 1 << 20
    /// Read past a data message larger than ``maxMessageBytes`` (its bytes dropped as they
    /// arrive, never held) and report it to ``WebSocket/onOversizedMessage(_:)``, instead of
    /// failing the connection with 1009: a server can then answer in its own protocol, which
    /// clients show, where they would reconnect and resend after a close. Frames larger than
    /// ``maxFrameBytes`` but within ``maxMessageBytes`` still close with 1009.
    public var skipOversizedMessages = false
    /// Send a ping after this long without hearing from the peer.
    public var pingInterval: Duration = .seconds(30)
    /// Drop the connection if nothing arrives this long after a ping.
    public var pingTimeout: Duration = .seconds(20)
    /// How long to wait for the peer's close frame after sending ours.
    public var closeTimeout: Duration = .seconds(5)
    public init() {}
}

/// The per-connection WebSocket state (allocated only when a connection upgrades).
final class WebSocketState {
    var session: WebSocketSession
    let socket: WebSocket
    let options: WebSocketOptions
    var pingSentAt: UInt64?
    var reported = false

    init(role: WebSocketSession.Role, socket: WebSocket, options: WebSocketOptions) {
        session = WebSocketSession(
            role: role, maxMessageBytes: options.maxMessageBytes,
            skipsOversizedMessages: options.skipOversizedMessages)
        self.socket = socket
        self.options = options
    }
}

/// A socket on a loop: reads into the loop's shared buffer, keeps only leftover input and
/// unsent output (both allocated lazily), optional TLS, deadlines, and the WebSocket framing
/// shared by server and client. Subclasses parse the bytes before the upgrade.
/// Loop-confined; `@unchecked Sendable` only so closures can carry it back to its own loop.
class Connection: LoopHandler, @unchecked Sendable {
    let fd: Int32
    let loop: EventLoop
    var tls: TLSStream?
    private var inbound: [UInt8] = []
    private var outbound: [UInt8] = []
    private var outboundOffset = 0
    let maxOutboundBytes: Int
    private var interest: UInt32 = EPOLLIN.rawValue
    private(set) var isClosed = false
    private var closeWhenFlushed = false
    private var writeShut = false
    private var readPaused = false
    /// Back-pressure: unsent output above which reading stops until half of it is sent, so a
    /// peer that sends but does not read cannot make us queue more for it.
    var outputHighWater = Int.max
    /// Drop the connection when queued output has not moved for this long (nanoseconds).
    var outputStallNanos = UInt64.max
    /// Reading stopped because output is above ``outputHighWater``.
    private var outputBlocked = false
    /// When queued output last moved (or started to queue).
    private var outputMoved: UInt64 = 0
    var lastReceive: UInt64
    /// Close (via ``deadlineExpired()``) when the monotonic clock passes this.
    var deadline: UInt64 = .max
    var webSocket: WebSocketState?
    /// Set at close: the TLS handshake had not finished.
    private(set) var closedDuringTLSHandshake = false

    init(fd: Int32, loop: EventLoop, tls: TLSStream?, maxOutboundBytes: Int) {
        self.fd = fd
        self.loop = loop
        self.tls = tls
        self.maxOutboundBytes = maxOutboundBytes
        lastReceive = monotonicNanos()
    }

    // MARK: Hooks for subclasses

    /// Consumes protocol bytes before any WebSocket upgrade; returns how many were used
    /// (0 = need more or busy).
    func processBytes(_ bytes: UnsafeRawBufferPointer) -> Int { bytes.count }
    /// The transport is ready: TCP connected (clients) and the TLS handshake done, if any.
    func transportReady() {}
    /// The peer closed its side; `buffered` is input not yet consumed (a response running to
    /// the end of the connection).
    func inputEnded(buffered: UnsafeRawBufferPointer) {}
    /// The socket is gone; called once.
    func didClose(error: NetError?) {}
    /// Everything queued has been written.
    func outputDrained() {}
    /// The peer broke the WebSocket protocol (the connection is being failed).
    func webSocketViolation() {}
    /// The deadline passed.
    func deadlineExpired() { abort(NetError(.timedOut, "Connection timed out")) }
    /// Periodic check (about four times a second).
    func tick(now: UInt64) {
        if outboundOffset < outbound.count, now &- outputMoved > outputStallNanos {
            abort(NetError(.messageTooLarge, "Peer is not reading: its output has not moved"))
            return
        }
        if now >= deadline {
            // After our half-close the deadline only bounds the wait for the peer's FIN.
            if writeShut { close(error: nil) } else { deadlineExpired() }
            return
        }
        if let ws = webSocket, ws.session.state == .open { checkLiveness(ws, now: now) }
    }

    // MARK: Registration

    func start() -> Bool {
        guard loop.register(fd, self, events: interest) else {
            abort(NetError(.connectFailed, "Cannot register the socket"))
            return false
        }
        if let tls, !tls.handshakeComplete { continueTLSHandshake() }
        return true
    }

    private var connecting = false

    /// Registers a socket whose non-blocking `connect` is in progress.
    func startConnecting() -> Bool {
        connecting = true
        interest = EPOLLOUT.rawValue
        guard loop.register(fd, self, events: interest) else {
            abort(NetError(.connectFailed, "Cannot register the socket"))
            return false
        }
        return true
    }

    private func finishConnecting() {
        connecting = false
        let error = Sockets.pendingError(fd)
        if error != 0 {
            abort(NetError.system(.connectFailed, "connect", error))
            return
        }
        if tls != nil {
            continueTLSHandshake()
        } else {
            updateInterest()
            transportReady()
        }
    }

    private func setInterest(_ events: UInt32) {
        guard events != interest, !isClosed else { return }
        interest = events
        loop.modify(fd, events: events)
    }

    private func updateInterest(wantWrite: Bool? = nil) {
        var events: UInt32 = 0
        if !readPaused && !outputBlocked { events |= EPOLLIN.rawValue }
        // Output gathered for the end of the turn needs no writability event: the loop sends
        // it then (and asks for one only if the kernel does not take it all).
        let pendingOut = outboundOffset < outbound.count && !flushScheduled
        if pendingOut || wantWrite == true { events |= EPOLLOUT.rawValue }
        setInterest(events)
    }

    // MARK: Events

    func handleEvents(_ events: UInt32) {
        if isClosed { return }
        if connecting {
            finishConnecting()
            return
        }
        if let tls, !tls.handshakeComplete {
            continueTLSHandshake()
            return
        }
        if events & EPOLLOUT.rawValue != 0 { flush() }
        if isClosed { return }
        // TLS: a read may have waited for writability (WANT_WRITE), so always retry it.
        if tls != nil || events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            readAvailable()
        }
    }

    private func continueTLSHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .done:
            updateInterest(wantWrite: false)
            transportReady()
            if !isClosed && outboundOffset < outbound.count { flush() }
            if !isClosed { readAvailable() }
        case .wantRead: updateInterest(wantWrite: false)
        case .wantWrite: updateInterest(wantWrite: true)
        case .eof: abort(NetError(.handshakeFailed, "Connection closed during the TLS handshake"))
        case .failed(let message): abort(NetError(.tlsError, "TLS handshake failed: \(message)"))
        }
    }

    private enum ReadResult {
        case data(Int)
        case wouldBlock
        case eof
        case failed(NetError)
    }

    private func readOnce(_ buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if let tls {
            switch tls.read(into: buffer) {
            case .done(let n): return .data(n)
            case .wantRead: return .wouldBlock
            case .wantWrite:
                updateInterest(wantWrite: true)
                return .wouldBlock
            case .eof: return .eof
            case .failed(let message): return .failed(NetError(.tlsError, message))
            }
        }
        let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
        if n > 0 { return .data(n) }
        if n == 0 { return .eof }
        let e = errno
        if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return .wouldBlock }
        return .failed(NetError.system(.connectionClosed, "read", e))
    }

    private func readAvailable() {
        // Reading was paused with the interest left on (``pauseReading()``): input arrived
        // meanwhile, so stop epoll reporting it until reading resumes.
        if readPaused || outputBlocked {
            updateInterest()
            return
        }
        let buffer = loop.readBuffer
        var rounds = 0
        while !isClosed && !readPaused && !outputBlocked {
            rounds += 1
            switch readOnce(buffer) {
            case .data(let n):
                lastReceive = loop.iterationTime
                received(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                // Plain sockets: a short read means the kernel buffer is empty; bound the
                // rounds so one busy peer cannot starve the others. TLS must drain fully
                // because decrypted bytes buffered inside OpenSSL do not wake epoll.
                if tls == nil && (n < buffer.count || rounds >= 4) { return }
            case .wouldBlock:
                return
            case .eof:
                peerClosed()
                return
            case .failed(let error):
                abort(error)
                return
            }
        }
    }

    private func received(_ chunk: UnsafeRawBufferPointer) {
        if writeShut { return }  // draining after our close: discard
        if inbound.isEmpty {
            let used = process(chunk)
            if !isClosed && used < chunk.count { inbound = Array(chunk[used...]) }
        } else {
            inbound.append(contentsOf: chunk)
            reprocessInbound()
        }
    }

    private func reprocessInbound() {
        guard !inbound.isEmpty else { return }
        let used = inbound.withUnsafeBytes { process($0) }
        if isClosed { return }
        if used >= inbound.count {
            inbound = []
        } else if used > 0 {
            inbound.removeFirst(used)
        }
    }

    /// Bytes buffered but not yet consumed.
    var bufferedInputCount: Int { inbound.count }

    private func process(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count && !isClosed && !writeShut {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            let used = webSocket != nil ? processWebSocket(rest) : processBytes(rest)
            if used == 0 { break }
            offset += used
        }
        return offset
    }

    /// Stops reading (e.g. while a request is being answered); input stays in the kernel.
    /// The interest in input is dropped only if input arrives while paused (``readAvailable()``):
    /// an HTTP client sends nothing while its request is answered, and dropping it here and
    /// taking it back in ``resumeReading()`` cost two `epoll_ctl` per request.
    func pauseReading() {
        readPaused = true
    }

    /// Resumes reading, first handling anything already buffered.
    func resumeReading() {
        guard readPaused, !isClosed else { return }
        readPaused = false
        updateInterest()
        reprocessInbound()
        // Decrypted bytes may be waiting inside OpenSSL, where epoll cannot see them.
        if tls != nil && !isClosed { readAvailable() }
    }

    private func peerClosed() {
        if writeShut {
            close(error: nil)
            return
        }
        if webSocket == nil {
            inbound.withUnsafeBytes { inputEnded(buffered: $0) }
            if isClosed { return }
        }
        if let ws = webSocket, !ws.reported {
            reportWebSocketClosed(.abnormal, "Connection closed without a close frame")
        }
        close(error: NetError(.connectionClosed, "Peer closed the connection"))
    }

    // MARK: Writing

    /// Writes below this size wait for the end of the loop turn (see ``write(_:)``); larger
    /// ones go to the kernel at once when nothing is queued, since copying them would cost
    /// more than the system call it saves.
    static let coalescedWriteLimit = 16384

    /// Queues bytes for sending. Small writes are gathered and sent together at the end of the
    /// loop's turn, so the frames one turn makes for a connection (a relay's `ack` and its
    /// answer, an upgrade response and the welcome) cost one `send` instead of one each; a
    /// large write with nothing queued goes out at once. Exceeding the output cap (a peer that
    /// does not read) drops the connection.
    func write(_ bytes: UnsafeRawBufferPointer) {
        if isClosed || closeWhenFlushed || bytes.isEmpty { return }
        var start = 0
        let handshakeDone = tls?.handshakeComplete ?? true
        let wasEmpty = outboundOffset >= outbound.count
        let coalesce =
            handshakeDone && (flushScheduled || (wasEmpty && bytes.count < Self.coalescedWriteLimit))
        if wasEmpty && handshakeDone && !coalesce {
            switch writeOnce(bytes) {
            case .wrote(let n): start = n
            case .wouldBlock: break
            case .failed(let error):
                abort(error)
                return
            }
            if start == bytes.count { return }
        }
        if outboundOffset > 0 && outboundOffset >= outbound.count / 2 {
            outbound.removeFirst(outboundOffset)
            outboundOffset = 0
        }
        outbound.append(contentsOf: bytes[start...])
        if outbound.count - outboundOffset > maxOutboundBytes {
            abort(
                NetError(
                    .messageTooLarge, "Peer is not reading: output buffer exceeded \(maxOutboundBytes) bytes")
            )
            return
        }
        if wasEmpty { outputMoved = monotonicNanos() }
        if outbound.count - outboundOffset > outputHighWater { outputBlocked = true }
        if coalesce {
            if !flushScheduled {
                flushScheduled = true
                loop.flushAtEndOfTurn(self)
            }
        } else if handshakeDone {
            updateInterest()
        }
    }

    /// Output written this turn and not yet offered to the kernel.
    private var flushScheduled = false

    /// From the loop at the end of its turn: sends what this turn's writes gathered.
    func flushCoalesced() {
        guard flushScheduled else { return }
        flushScheduled = false
        guard !isClosed, !connecting, outboundOffset < outbound.count else { return }
        flush()
    }

    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    private enum WriteResult {
        case wrote(Int)
        case wouldBlock
        case failed(NetError)
    }

    private func writeOnce(_ bytes: UnsafeRawBufferPointer) -> WriteResult {
        if let tls {
            switch tls.write(bytes) {
            case .done(let n): return .wrote(n)
            case .wantWrite, .wantRead: return .wouldBlock
            case .eof: return .failed(NetError(.connectionClosed, "TLS session closed"))
            case .failed(let message): return .failed(NetError(.tlsError, message))
            }
        }
        let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        if n >= 0 { return .wrote(n) }
        let e = errno
        if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return .wouldBlock }
        return .failed(NetError.system(.connectionClosed, "send", e))
    }

    private func flush() {
        while outboundOffset < outbound.count {
            let result = outbound.withUnsafeBytes {
                writeOnce(UnsafeRawBufferPointer(rebasing: $0[outboundOffset...]))
            }
            switch result {
            case .wrote(let n):
                outboundOffset += n
                if n > 0 { outputMoved = loop.iterationTime }
                if outputBlocked && outbound.count - outboundOffset <= outputHighWater / 2 {
                    outputBlocked = false
                }
            case .wouldBlock:
                updateInterest()
                return
            case .failed(let error):
                abort(error)
                return
            }
        }
        outbound = []
        outboundOffset = 0
        updateInterest()
        if closeWhenFlushed { shutWrite() }
        if !isClosed { outputDrained() }
    }

    /// Bytes queued and not yet accepted by the kernel.
    var pendingOutputCount: Int { outbound.count - outboundOffset }

    // MARK: Closing

    /// Sends what is queued, then half-closes and waits briefly for the peer to close, so the
    /// last response is not lost to a reset.
    func closeAfterFlush() {
        if isClosed || closeWhenFlushed { return }
        closeWhenFlushed = true
        if outboundOffset >= outbound.count { shutWrite() }
    }

    private func shutWrite() {
        guard !writeShut, !isClosed else { return }
        writeShut = true
        tls?.shutdown()
        Glibc.shutdown(fd, Int32(SHUT_WR))
        inbound = []
        deadline = min(deadline, monotonicNanos() &+ 2_000_000_000)
        if readPaused {
            readPaused = false
            updateInterest()
        }
    }

    /// Closes at once (errors, timeouts, limits).
    func abort(_ error: NetError) {
        if let ws = webSocket, !ws.reported {
            reportWebSocketClosed(.abnormal, error.message)
        }
        close(error: error)
    }

    private func close(error: NetError?) {
        guard !isClosed else { return }
        // Output gathered this turn was never offered to the kernel; offer it once, as an
        // immediate write would have (an error response written just before an abort).
        if flushScheduled && !writeShut && !connecting && outboundOffset < outbound.count {
            _ = outbound.withUnsafeBytes {
                writeOnce(UnsafeRawBufferPointer(rebasing: $0[outboundOffset...]))
            }
        }
        flushScheduled = false
        isClosed = true
        loop.deregister(fd)
        Glibc.close(fd)
        closedDuringTLSHandshake = tls.map { !$0.handshakeComplete } ?? false
        tls = nil
        inbound = []
        outbound = []
        outboundOffset = 0
        webSocket?.session.markClosed()
        didClose(error: error)
    }

    // MARK: WebSocket

    /// Switches this connection to WebSocket framing.
    func becomeWebSocket(role: WebSocketSession.Role, socket: WebSocket, options: WebSocketOptions) {
        webSocket = WebSocketState(role: role, socket: socket, options: options)
        deadline = .max
    }

    private func processWebSocket(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let ws = webSocket else { return 0 }
        if ws.session.isSkippingPayload { return skipOversized(bytes.count, ws) }
        do throws(WebSocketProtocolError) {
            if ws.options.skipOversizedMessages,
                let header = try WebSocketFrameCodec.parseHeader(
                    bytes, expectMasked: ws.session.expectsMaskedFrames),
                try ws.session.startSkipping(header)
            {
                return header.headerBytes + skipOversized(bytes.count - header.headerBytes, ws)
            }
            guard
                let (frame, used) = try WebSocketFrameCodec.parse(
                    bytes, expectMasked: ws.session.expectsMaskedFrames, maxPayload: ws.options.maxFrameBytes)
            else { return 0 }
            let actions = try ws.session.receiveInline(frame)
            if let first = actions.first { perform(first, ws) }
            if !isClosed, let second = actions.second { perform(second, ws) }
            return used
        } catch {
            webSocketViolation()
            failWebSocket(error.closeCode, error.message)
            return bytes.count
        }
    }

    /// Drops payload bytes of an oversized message; reports the message once it is over.
    private func skipOversized(_ available: Int, _ ws: WebSocketState) -> Int {
        let (used, finished) = ws.session.skip(available)
        if let finished { ws.socket.reportOversized(Int(clamping: finished)) }
        return used
    }

    private func perform(_ action: WebSocketSession.Action, _ ws: WebSocketState) {
        switch action {
        case .deliver(let message): ws.socket.dispatch(.message(message))
        case .send(let opcode, let payload): sendFrame(opcode, payload)
        case .finished(let code, let reason):
            reportWebSocketClosed(code, reason)
            closeAfterFlush()
        }
    }

    /// Fails the connection: close frame with `code`, then close.
    func failWebSocket(_ code: WebSocketCloseCode, _ reason: String) {
        guard let ws = webSocket else { return }
        if ws.session.startClosing() {
            sendFrame(.close, WebSocketFrameCodec.closePayload(code: code, reason: reason))
        }
        ws.session.markClosed()
        reportWebSocketClosed(code, reason)
        closeAfterFlush()
    }

    private func reportWebSocketClosed(_ code: WebSocketCloseCode, _ reason: String) {
        guard let ws = webSocket, !ws.reported else { return }
        ws.reported = true
        ws.socket.dispatch(.closed(code, reason))
    }

    /// Sends one frame (masked on the client side). Small frames are encoded in the loop's
    /// scratch buffer and written from there: no allocation when the kernel takes them whole.
    func sendFrame(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        guard let ws = webSocket else { return }
        let mask: UInt32? = ws.session.role == .client ? loop.randomUInt32() : nil
        let scratch = loop.frameBuffer
        if payload.count + WebSocketFrameCodec.maxHeaderBytes <= scratch.count {
            let length = WebSocketFrameCodec.encode(
                opcode: opcode, payload: payload, maskKey: mask, into: scratch)
            write(UnsafeRawBufferPointer(rebasing: scratch[0..<length]))
            return
        }
        var frame = [UInt8](repeating: 0, count: payload.count + WebSocketFrameCodec.maxHeaderBytes)
        let length = frame.withUnsafeMutableBytes {
            WebSocketFrameCodec.encode(opcode: opcode, payload: payload, maskKey: mask, into: $0)
        }
        frame.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
    }

    func sendFrame(_ opcode: WebSocketOpcode, _ payload: [UInt8]) {
        payload.withUnsafeBytes { sendFrame(opcode, $0) }
    }

    /// Application data from the public ``WebSocket`` (on the loop).
    func sendMessage(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        guard let ws = webSocket, ws.session.state == .open else { return }
        sendFrame(opcode, payload)
    }

    /// Starts the close handshake from our side.
    func startWebSocketClose(_ code: WebSocketCloseCode, _ reason: String) {
        guard let ws = webSocket, !isClosed else { return }
        if ws.session.startClosing() {
            sendFrame(.close, WebSocketFrameCodec.closePayload(code: code, reason: reason))
            deadline = min(deadline, monotonicNanos() &+ ws.options.closeTimeout.nanoseconds)
        }
    }

    private func checkLiveness(_ ws: WebSocketState, now: UInt64) {
        if let sent = ws.pingSentAt {
            if lastReceive > sent {
                ws.pingSentAt = nil
            } else if now &- sent > ws.options.pingTimeout.nanoseconds {
                abort(NetError(.timedOut, "Peer did not answer a ping"))
            }
            return
        }
        if now &- lastReceive > ws.options.pingInterval.nanoseconds {
            ws.pingSentAt = now
            sendFrame(.ping, [UInt8]())
        }
    }
}
