import Foundation

/// # Net: HTTP/1.1 and WebSocket (RFC 6455) on epoll, with TLS through OpenSSL 3
///
/// Everything runs on ``EventLoop``s: one thread each, blocked in `epoll_wait` on non-blocking
/// sockets, with timers (``EventLoop/schedule(after:_:)``), a cross-thread task queue woken by an
/// `eventfd` (``EventLoop/execute(_:)``) and ``EventLoop/runBlocking(_:then:)`` to run blocking work
/// (SQLite, libpq, heavy crypto) on a worker pool and hop back. Callbacks the module makes
/// (routes, WebSocket events) run on the connection's loop thread: never block in them.
///
/// ## Server
/// ```swift
/// let router = HTTPRouter()
/// router.get("/healthz") { request in .json(["ok": true]) }
/// router.post("/v1/items/:id") { request in
///     .json(["id": request.pathParameters["id"] ?? ""], status: .created)
/// }
/// var config = ServerConfiguration(host: "127.0.0.1", port: 8080)
/// config.trustedProxies = [IPNetwork("10.0.0.0/8")!]
/// let server = Server(configuration: config, router: router)
/// server.webSocket(path: "/v1", accept: { request in nil /* or a refusal, e.g. 429 */ }) {
///     socket, request in                       // on the loop thread, before any message
///     socket.onMessage { socket, message in socket.send(message) }      // echo
///     socket.onClose { socket, code, reason in }
/// }
/// try server.start()              // binds; `server.localAddresses` tells the chosen ports
/// server.reloadCertificates()     // e.g. on SIGHUP: new TLS connections use the new files
/// server.shutdown()               // stop accepting, close WebSockets with 1001, drain
///
/// // In the executable:
/// let hup = SignalWatcher(signal: SIGHUP) { try? server.reloadCertificates() }
/// let term = SignalWatcher(signal: SIGTERM) { server.shutdown(); exit(0) }
/// ```
/// A ``WebSocket`` is `Sendable`: `send(text:)`, `send(binary:)` and `close(code:reason:)` work
/// from any thread (they enqueue and wake the loop). For `async` code, ``WebSocket/messages``
/// is an `AsyncStream` of the same events. Routes may also be `async`
/// (``HTTPRouter/add(_:_:async:)``); plain routes run on the loop and must not block (use
/// ``HTTPRouter/add(_:_:deferred:)`` with ``EventLoop/runBlocking(_:then:)``).
///
/// ## Clients (tests, CLI, bot)
/// ```swift
/// let response = try HTTPClient.send(.get, url: "http://127.0.0.1:8080/healthz")   // blocking
/// let response = try await HTTPClient.request(.post, url: url, json: body)         // async
/// let ws = try WebSocketClient.connect(url: "wss://relay.example/v1", timeout: .seconds(5))
/// ws.send(text: "{}")                                      // never blocks; from any thread
/// let message = try ws.receive(timeout: .seconds(5))        // or: for await m in ws.messages
/// ws.close()
/// ```
/// URLs: `http://`, `https://`, `ws://`, `wss://`. TLS clients verify against the system CA
/// store with hostname checks, or against ``TLSClientConfiguration/caFile`` (a pinned CA).
/// Reconnecting is left to the caller. The blocking calls above wait on an event loop's
/// thread, except `HTTPClient.send` and ``WebSocketClient/connectBlocking(url:headers:options:tls:timeout:)``
/// (a ``BlockingWebSocket``: `send`, `receive`, `close` as above), which read and write the
/// socket on the calling thread with `poll` up to its deadline: for a thread that waits for
/// each answer anyway, that saves the loop's wakeup and the hand-off back (a futex and a
/// context switch each way per message). HTTP connections are kept alive and reused, per scheme,
/// host, port and trust settings (at most 16 idle ones for 4 s each, ``HTTPConnectionPool``);
/// a request on a reused connection that the server had closed is sent again on a new one
/// only when that cannot do it twice (it never left, or its method is idempotent).
///
/// ## Threads
/// One loop per core by default (`ServerConfiguration.loopCount`; measured faster than one loop
/// on this 2-core machine); the kernel spreads accepted connections over the loops
/// (`SO_REUSEPORT`). A connection stays on its loop. Server loops busy poll for up to 50 µs after
/// handling events, only while the machine has cores to spare (``BusyPoll``,
/// `ServerConfiguration.busyPoll`): on a virtual machine whose idle cores halt, that saves a
/// sleep and a wakeup of tens of microseconds per message; an idle loop blocks at once. Blocking client calls (`HTTPClient.send`,
/// `WebSocketClient.connect(url:)`, `WebSocketClient.connectBlocking`, `WebSocket.receive`) must
/// not run on a loop thread; all but the last refuse with `invalidState`. ``Server/shutdown(timeout:)`` must not be called from a loop.
/// `async` routes and ``WebSocket/messages`` consumers run on Swift's cooperative pool (one
/// thread per core): code that blocks those threads (e.g. blocking `receive` in a test) can
/// starve them.
///
/// ## Limits, errors, statistics
/// ``ServerLimits`` bounds request lines, headers, bodies, frames, messages, buffered output,
/// connections (total and per source address) and handshake/idle time. Errors are ``NetError``
/// values with a human message and a stable ``NetError/Code``. ``Server/statistics`` counts
/// accepted and rejected connections, requests, bad requests, protocol violations, timeouts,
/// dropped slow consumers and failed TLS handshakes (for `/metrics`).
public enum Net {
}

/// An error from the networking layer: a stable code and a human message.
public struct NetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable, machine-readable error cases.
    public enum Code: String, Sendable {
        case resolveFailed = "resolve_failed"
        case connectFailed = "connect_failed"
        case listenFailed = "listen_failed"
        case timedOut = "timed_out"
        case connectionClosed = "connection_closed"
        case invalidURL = "invalid_url"
        case protocolError = "protocol_error"
        case handshakeFailed = "handshake_failed"
        case tlsError = "tls_error"
        case messageTooLarge = "message_too_large"
        case invalidState = "invalid_state"
    }

    /// What went wrong, for code.
    public let code: Code
    /// What went wrong, for people.
    public let message: String
    /// The `errno` of the system call that failed, when one did: callers that tell causes apart
    /// (a refused connection from an unreachable host) match this, never the message's text.
    public let systemError: Int32?

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        self.systemError = nil
    }

    private init(_ code: Code, _ message: String, systemError: Int32) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    static func system(_ code: Code, _ call: String, _ err: Int32) -> NetError {
        NetError(code, "\(call) failed: \(String(cString: strerror(err)))", systemError: err)
    }

    /// Nothing listened at the address: the peer's host answered the connection with a refusal.
    public var isConnectionRefused: Bool { code == .connectFailed && systemError == ECONNREFUSED }

    public var description: String { "\(message) [\(code.rawValue)]" }
}
