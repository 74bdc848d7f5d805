import Foundation
import Support
import Synchronization

private let nextWebSocketID = Atomic<UInt64>(1)

/// One open WebSocket, server or client side. `Sendable`: every method works from any thread
/// (sends enqueue on the connection's loop and wake it).
///
/// Events reach the application in one of three ways, chosen once per socket:
/// callbacks (``onMessage(_:)`` / ``onClose(_:)``, run on the loop thread), the ``messages``
/// stream, or blocking ``receive(timeout:)``. Events that arrive before a handler is set are
/// queued. On the server, set handlers inside the `onOpen` callback.
public final class WebSocket: @unchecked Sendable, CustomStringConvertible {
    /// A process-unique id.
    public let id: UInt64
    /// The loop this socket lives on; callbacks run on its thread.
    public let loop: EventLoop
    /// The request path (server side: the upgrade request's path).
    public let path: String
    /// The TCP peer.
    public let remoteAddress: SocketAddress?
    /// The client's address as far as it can be trusted (see `ServerConfiguration.trustedProxies`).
    public let clientAddress: IPAddress?

    /// Loop-confined.
    weak var connection: Connection?

    private struct Inbox {
        var onMessage: (@Sendable (WebSocket, WebSocketMessage) -> Void)?
        var onClose: (@Sendable (WebSocket, WebSocketCloseCode, String) -> Void)?
        var onOversized: (@Sendable (WebSocket, Int) -> Void)?
        var onDrained: (@Sendable (WebSocket) -> Void)?
        var queue: [WebSocketEvent] = []
        var continuation: AsyncStream<WebSocketEvent>.Continuation?
        var closeEvent: (WebSocketCloseCode, String)?
        /// Allocated only when a thread blocks in `receive`/`waitUntilClosed`.
        var waiter: NSCondition?
    }

    private let inbox = Locked(Inbox())

    init(loop: EventLoop, path: String, remoteAddress: SocketAddress?, clientAddress: IPAddress?) {
        id = nextWebSocketID.add(1, ordering: .relaxed).oldValue
        self.loop = loop
        self.path = path
        self.remoteAddress = remoteAddress
        self.clientAddress = clientAddress
    }

    public var description: String { "WebSocket#\(id)(\(remoteAddress.map { "\($0)" } ?? "?")\(path))" }

    // MARK: Sending

    /// Sends a text message. Dropped if the socket is closing or closed.
    public func send(text: String) {
        // The string's own UTF-8 storage goes to the frame encoder: no copy on the loop.
        if loop.inLoop {
            var text = text
            text.withUTF8 { connection?.sendMessage(.text, UnsafeRawBufferPointer($0)) }
        } else {
            loop.execute { [self] in
                var text = text
                text.withUTF8 { connection?.sendMessage(.text, UnsafeRawBufferPointer($0)) }
            }
        }
    }

    /// Sends a text message given as its UTF-8 bytes, which the caller vouches for (they are
    /// not checked): a sender that writes JSON as bytes (the relay, every frame it sends) makes
    /// no `String` that this would only turn back into bytes. Dropped if the socket is closing
    /// or closed.
    public func send(utf8Text: [UInt8]) { enqueue(.text, utf8Text) }

    /// Sends a binary message. Dropped if the socket is closing or closed.
    public func send(binary: [UInt8]) { enqueue(.binary, binary) }

    /// Sends a message.
    public func send(_ message: WebSocketMessage) {
        switch message {
        case .text(let text): send(text: text)
        case .binary(let bytes): send(binary: bytes)
        }
    }

    /// Sends a ping (pongs are handled for you; this only proves liveness).
    public func ping() { enqueue(.ping, []) }

    /// Starts the close handshake. The close event follows when the peer answers (or times out).
    public func close(code: WebSocketCloseCode = .normal, reason: String = "") {
        if loop.inLoop {
            connection?.startWebSocketClose(code, reason)
        } else {
            loop.execute { [self] in connection?.startWebSocketClose(code, reason) }
        }
    }

    private func enqueue(_ opcode: WebSocketOpcode, _ payload: [UInt8]) {
        if loop.inLoop {
            payload.withUnsafeBytes { connection?.sendMessage(opcode, $0) }
        } else {
            loop.execute { [self] in payload.withUnsafeBytes { connection?.sendMessage(opcode, $0) } }
        }
    }

    // MARK: Receiving

    /// Calls `handler` on the loop thread for every message (queued ones first).
    public func onMessage(_ handler: @escaping @Sendable (WebSocket, WebSocketMessage) -> Void) {
        onLoop { [self] in
            let pending = inbox.withLock { box -> [WebSocketMessage] in
                box.onMessage = handler
                let messages = box.queue.compactMap { event -> WebSocketMessage? in
                    if case .message(let m) = event { return m }
                    return nil
                }
                box.queue.removeAll { if case .message = $0 { return true } else { return false } }
                return messages
            }
            for message in pending { handler(self, message) }
        }
    }

    /// Calls `handler` on the loop thread once, when the socket has closed.
    public func onClose(_ handler: @escaping @Sendable (WebSocket, WebSocketCloseCode, String) -> Void) {
        onLoop { [self] in
            let already = inbox.withLock { box -> (WebSocketCloseCode, String)? in
                box.onClose = handler
                let queued = box.queue.contains { if case .closed = $0 { return true } else { return false } }
                guard queued else { return nil }
                box.queue.removeAll { if case .closed = $0 { return true } else { return false } }
                return box.closeEvent
            }
            if let already { handler(self, already.0, already.1) }
        }
    }

    /// With `WebSocketOptions.skipOversizedMessages`: calls `handler` on the loop thread with
    /// the size of each message that was too large and dropped. Set it when the socket opens
    /// (a server's `onOpen`, before any frame is read): one reported earlier is not kept.
    public func onOversizedMessage(_ handler: @escaping @Sendable (WebSocket, Int) -> Void) {
        inbox.withLock { $0.onOversized = handler }
    }

    /// Bytes queued and not yet taken by the kernel (on the loop thread).
    public var pendingOutputBytes: Int { connection?.pendingOutputCount ?? 0 }

    /// Stops reading frames until ``resumeReading()`` (a relay slowing a sender down).
    public func pauseReading() { onLoop { [self] in connection?.pauseReading() } }
    public func resumeReading() { onLoop { [self] in connection?.resumeReading() } }

    /// Calls `handler` on the loop thread whenever everything queued has been written.
    public func onDrained(_ handler: @escaping @Sendable (WebSocket) -> Void) {
        inbox.withLock { $0.onDrained = handler }
    }

    /// From the connection, on the loop: the output queue is empty.
    func drained() {
        let handler = inbox.withLock { $0.onDrained }
        handler?(self)
    }

    /// From the connection, on the loop: an oversized message was dropped.
    func reportOversized(_ size: Int) {
        let handler = inbox.withLock { $0.onOversized }
        handler?(self, size)
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inLoop { body() } else { loop.execute(body) }
    }

    /// Every event as an async sequence, ending after `.closed`. Use instead of callbacks.
    public var messages: AsyncStream<WebSocketEvent> {
        let (stream, continuation) = AsyncStream<WebSocketEvent>.makeStream()
        inbox.withLock { box in
            for event in box.queue { continuation.yield(event) }
            let closedQueued = box.queue.contains {
                if case .closed = $0 { return true } else { return false }
            }
            box.queue.removeAll()
            if closedQueued {
                continuation.finish()
            } else {
                box.continuation = continuation
            }
        }
        return stream
    }

    /// Blocks until `ready` returns a value (checked under the inbox lock) or the deadline.
    private func wait<T>(until deadline: Date, _ ready: (inout Inbox) -> T?) -> T? {
        let condition = inbox.withLock { box -> NSCondition in
            if let waiter = box.waiter { return waiter }
            let waiter = NSCondition()
            box.waiter = waiter
            return waiter
        }
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let value = inbox.withLock({ ready(&$0) }) { return value }
            if !condition.wait(until: deadline) {
                return inbox.withLock { ready(&$0) }
            }
        }
    }

    /// Waits for the next message. Throws `connectionClosed` (with the close code in the message)
    /// once the socket has closed, or `timedOut`.
    public func receive(timeout: Duration = .seconds(30)) throws(NetError) -> WebSocketMessage {
        let deadline = Date().addingTimeInterval(Double(timeout.nanoseconds) / 1e9)
        let outcome = wait(until: deadline) { box -> Result<WebSocketMessage, NetError>? in
            if let first = box.queue.first {
                switch first {
                case .message(let m):
                    box.queue.removeFirst()
                    return .success(m)
                case .closed(let code, let reason):
                    return .failure(
                        NetError(.connectionClosed, "WebSocket closed with \(code.rawValue) \(reason)"))
                }
            }
            if let (code, reason) = box.closeEvent {
                return .failure(
                    NetError(.connectionClosed, "WebSocket closed with \(code.rawValue) \(reason)"))
            }
            return nil
        }
        guard let outcome else { throw NetError(.timedOut, "No WebSocket message within \(timeout)") }
        return try outcome.get()
    }

    /// The close code and reason, once closed.
    public var closeStatus: (code: WebSocketCloseCode, reason: String)? {
        inbox.withLock { $0.closeEvent.map { (code: $0.0, reason: $0.1) } }
    }

    /// Waits until the socket has closed; returns its close code and reason.
    @discardableResult
    public func waitUntilClosed(timeout: Duration = .seconds(30)) throws(NetError) -> (
        code: WebSocketCloseCode, reason: String
    ) {
        let deadline = Date().addingTimeInterval(Double(timeout.nanoseconds) / 1e9)
        guard let event = wait(until: deadline, { $0.closeEvent }) else {
            throw NetError(.timedOut, "WebSocket did not close within \(timeout)")
        }
        return (event.0, event.1)
    }

    /// From the connection, on the loop.
    func dispatch(_ event: WebSocketEvent) {
        enum Next {
            case none
            case message(@Sendable (WebSocket, WebSocketMessage) -> Void, WebSocketMessage)
            case closed(@Sendable (WebSocket, WebSocketCloseCode, String) -> Void, WebSocketCloseCode, String)
        }
        var waiter: NSCondition?
        let next = inbox.withLock { box -> Next in
            if case .closed(let code, let reason) = event {
                if box.closeEvent != nil { return .none }
                box.closeEvent = (code, reason)
            }
            waiter = box.waiter
            if let continuation = box.continuation {
                continuation.yield(event)
                if case .closed = event { continuation.finish() }
                return .none
            }
            switch event {
            case .message(let message):
                if let handler = box.onMessage { return .message(handler, message) }
            case .closed(let code, let reason):
                if let handler = box.onClose { return .closed(handler, code, reason) }
            }
            box.queue.append(event)
            return .none
        }
        if let waiter {
            waiter.lock()
            waiter.broadcast()
            waiter.unlock()
        }
        switch next {
        case .none: break
        case .message(let handler, let message): handler(self, message)
        case .closed(let handler, let code, let reason): handler(self, code, reason)
        }
    }
}
