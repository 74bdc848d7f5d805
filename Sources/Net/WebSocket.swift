import Foundation
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
    /// The upgrade request's headers (server side) or the response's (client side).
    public let headers: HTTPHeaders
    /// The TCP peer.
    public let remoteAddress: SocketAddress?
    /// The client's address as far as it can be trusted (see `ServerConfiguration.trustedProxies`).
    public let clientAddress: IPAddress?

    /// Loop-confined.
    weak var connection: Connection?

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var onMessageHandler: (@Sendable (WebSocket, WebSocketMessage) -> Void)?
    private var onCloseHandler: (@Sendable (WebSocket, WebSocketCloseCode, String) -> Void)?
    private var queue: [WebSocketEvent] = []
    private var continuation: AsyncStream<WebSocketEvent>.Continuation?
    private var closeEvent: (WebSocketCloseCode, String)?

    init(
        loop: EventLoop, path: String, headers: HTTPHeaders, remoteAddress: SocketAddress?,
        clientAddress: IPAddress?
    ) {
        id = nextWebSocketID.add(1, ordering: .relaxed).oldValue
        self.loop = loop
        self.path = path
        self.headers = headers
        self.remoteAddress = remoteAddress
        self.clientAddress = clientAddress
    }

    public var description: String { "WebSocket#\(id)(\(remoteAddress.map { "\($0)" } ?? "?")\(path))" }

    // MARK: Sending

    /// Sends a text message. Dropped if the socket is closing or closed.
    public func send(text: String) { enqueue(.text, Array(text.utf8)) }

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
            connection?.sendMessage(opcode, payload)
        } else {
            loop.execute { [self] in connection?.sendMessage(opcode, payload) }
        }
    }

    // MARK: Receiving

    /// Calls `handler` on the loop thread for every message (queued ones first).
    public func onMessage(_ handler: @escaping @Sendable (WebSocket, WebSocketMessage) -> Void) {
        onLoop { [self] in
            condition.lock()
            onMessageHandler = handler
            let pending = queue.compactMap { event -> WebSocketMessage? in
                if case .message(let m) = event { return m }
                return nil
            }
            queue.removeAll { if case .message = $0 { return true } else { return false } }
            condition.unlock()
            for message in pending { handler(self, message) }
        }
    }

    /// Calls `handler` on the loop thread once, when the socket has closed.
    public func onClose(_ handler: @escaping @Sendable (WebSocket, WebSocketCloseCode, String) -> Void) {
        onLoop { [self] in
            condition.lock()
            onCloseHandler = handler
            let closed = queue.contains { if case .closed = $0 { return true } else { return false } }
            if closed { queue.removeAll { if case .closed = $0 { return true } else { return false } } }
            let event = closeEvent
            condition.unlock()
            if closed, let event { handler(self, event.0, event.1) }
        }
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inLoop { body() } else { loop.execute(body) }
    }

    /// Every event as an async sequence, ending after `.closed`. Use instead of callbacks.
    public var messages: AsyncStream<WebSocketEvent> {
        let (stream, continuation) = AsyncStream<WebSocketEvent>.makeStream()
        condition.lock()
        for event in queue { continuation.yield(event) }
        queue.removeAll()
        if closeEvent != nil && onCloseHandler == nil {
            continuation.finish()
        } else {
            self.continuation = continuation
        }
        condition.unlock()
        return stream
    }

    /// Waits for the next message. Throws `connectionClosed` (with the close code in the message)
    /// once the socket has closed, or `timedOut`.
    public func receive(timeout: Duration = .seconds(30)) throws(NetError) -> WebSocketMessage {
        let deadline = Date().addingTimeInterval(Double(timeout.nanoseconds) / 1e9)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let first = queue.first {
                switch first {
                case .message(let m):
                    queue.removeFirst()
                    return m
                case .closed(let code, let reason):
                    throw NetError(.connectionClosed, "WebSocket closed with \(code.rawValue) \(reason)")
                }
            }
            if let (code, reason) = closeEvent {
                throw NetError(.connectionClosed, "WebSocket closed with \(code.rawValue) \(reason)")
            }
            if !condition.wait(until: deadline) && queue.isEmpty {
                throw NetError(.timedOut, "No WebSocket message within \(timeout)")
            }
        }
    }

    /// The close code and reason, once closed.
    public var closeStatus: (code: WebSocketCloseCode, reason: String)? {
        condition.lock()
        defer { condition.unlock() }
        return closeEvent.map { (code: $0.0, reason: $0.1) }
    }

    /// Waits until the socket has closed; returns its close code and reason.
    @discardableResult
    public func waitUntilClosed(timeout: Duration = .seconds(30)) throws(NetError) -> (
        code: WebSocketCloseCode, reason: String
    ) {
        let deadline = Date().addingTimeInterval(Double(timeout.nanoseconds) / 1e9)
        condition.lock()
        defer { condition.unlock() }
        while closeEvent == nil {
            if !condition.wait(until: deadline) && closeEvent == nil {
                throw NetError(.timedOut, "WebSocket did not close within \(timeout)")
            }
        }
        return (closeEvent!.0, closeEvent!.1)
    }

    /// From the connection, on the loop.
    func dispatch(_ event: WebSocketEvent) {
        condition.lock()
        if case .closed(let code, let reason) = event {
            guard closeEvent == nil else {
                condition.unlock()
                return
            }
            closeEvent = (code, reason)
        }
        if let continuation {
            continuation.yield(event)
            if case .closed = event { continuation.finish() }
            condition.broadcast()
            condition.unlock()
            return
        }
        switch event {
        case .message(let message):
            if let handler = onMessageHandler {
                condition.unlock()
                handler(self, message)
                return
            }
        case .closed(let code, let reason):
            if let handler = onCloseHandler {
                condition.broadcast()
                condition.unlock()
                handler(self, code, reason)
                return
            }
        }
        queue.append(event)
        condition.broadcast()
        condition.unlock()
    }
}
