import Foundation
import Support
import Synchronization

/// A parsed `http`, `https`, `ws` or `wss` URL. The fragment is dropped: it never goes on the wire.
public struct NetURL: Sendable, Equatable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    public let port: UInt16
    /// Path and query as sent in the request line.
    public let target: String

    /// Whether the scheme uses TLS.
    public var isSecure: Bool { scheme == "https" || scheme == "wss" }

    public init(_ text: String) throws(NetError) {
        // A byte scan, not Foundation's `range(of:)` (which bridges to NSString) nor the standard
        // library's generic `firstRange(of:)` (0.6% of a joiner's CPU): a URL is parsed for
        // every request and connection a client makes.
        guard let schemeEnd = Self.schemeSeparator(in: text) else {
            throw NetError(.invalidURL, "URL \(text) has no scheme")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        let defaultPort: UInt16
        switch scheme {
        case "http", "ws": defaultPort = 80
        case "https", "wss": defaultPort = 443
        default: throw NetError(.invalidURL, "Unsupported URL scheme \(scheme)")
        }
        var rest = text[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        guard !authority.utf8.contains(UInt8(ascii: "@")) else {
            throw NetError(.invalidURL, "User info in URLs is not supported")
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw NetError(.invalidURL, "Malformed IPv6 host")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw NetError(.invalidURL, "Malformed authority \(authority)")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw NetError(.invalidURL, "URL \(text) has no host") }
        var port = defaultPort
        if let portText {
            guard let p = UInt16(portText), p > 0 else { throw NetError(.invalidURL, "Bad port in \(text)") }
            port = p
        }
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw NetError(.invalidURL, "URL path must be percent-encoded ASCII")
        }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.target = target
    }

    /// Where the first `://` in `text` is.
    private static func schemeSeparator(in text: String) -> Range<String.Index>? {
        let bytes = text.utf8
        var index = bytes.startIndex
        while index != bytes.endIndex {
            defer { index = bytes.index(after: index) }
            guard bytes[index] == UInt8(ascii: ":") else { continue }
            let slash = bytes.index(after: index)
            guard slash != bytes.endIndex, bytes[slash] == UInt8(ascii: "/") else { continue }
            let second = bytes.index(after: slash)
            guard second != bytes.endIndex, bytes[second] == UInt8(ascii: "/") else { continue }
            return index..<bytes.index(after: second)
        }
        return nil
    }

    /// The `Host` header value.
    var hostHeader: String {
        let h = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? h : "\(h):\(port)"
    }

    public var description: String { "\(scheme)://\(hostHeader)\(target)" }
}

/// Client TLS contexts are costly to build (the CA store); share one per configuration.
private let clientContexts = Locked<[String: TLSContext]>([:])

func clientContext(_ config: TLSClientConfiguration) throws(NetError) -> TLSContext {
    let key = "\(config.caFile ?? "<system>")|\(config.verifyPeer)"
    if let cached = clientContexts.withLock({ $0[key] }) { return cached }
    let context = try TLSContext.client(config)
    clientContexts.withLock { $0[key] = context }
    return context
}

/// A client-side connection: HTTP requests one at a time (kept alive between them in
/// ``HTTPConnectionPool`` when it has a pool key), or a WebSocket handshake.
final class ClientConnection: Connection, @unchecked Sendable {
    enum Purpose {
        /// `done` also says whether the failure is a stale reuse: on a connection that had
        /// served an earlier request, before any byte of the answer came (the peer had closed
        /// it, or was closing it as the request went out).
        case http(
            request: [UInt8], headOnly: Bool, limits: HTTPParserLimits,
            (Result<HTTPResponse, NetError>, _ staleReuse: Bool) -> Void)
        case webSocket(
            request: [UInt8], key: String, url: NetURL, options: WebSocketOptions,
            (Result<WebSocket, NetError>) -> Void)
    }

    private var purpose: Purpose?
    private var timer: LoopTimer?
    let remote: SocketAddress
    /// Where this connection parks between requests; nil: one request, then close.
    private let poolKey: String?
    private let pool: HTTPConnectionPool
    /// Serving a request after an earlier one (``Purpose/http`` explains stale reuse).
    private var reused = false
    /// Some byte of the current answer has arrived.
    private var answerStarted = false

    init(
        fd: Int32, loop: EventLoop, tls: TLSStream?, remote: SocketAddress, purpose: Purpose,
        timeout: Duration, poolKey: String? = nil, pool: HTTPConnectionPool = .shared
    ) {
        self.purpose = purpose
        self.remote = remote
        self.poolKey = poolKey
        self.pool = pool
        super.init(fd: fd, loop: loop, tls: tls, maxOutboundBytes: 64 << 20)
        armTimer(timeout)
        loop.addTick(self) { [self] in tick(now: monotonicNanos()) }
    }

    private func armTimer(_ timeout: Duration) {
        let remote = self.remote
        timer = loop.scheduleInLoop(after: timeout.nanoseconds) { [self] in
            if self.purpose != nil {
                abort(NetError(.timedOut, "No answer from \(remote) within \(timeout)"))
            }
        }
    }

    /// Sends another request on this parked connection (on its loop, after
    /// ``HTTPConnectionPool/take(_:on:)``). False, with the connection closed, when it turns
    /// out dead before anything was sent: the peer closed it or sent bytes unasked. The
    /// request then never reached the server.
    func reuse(_ next: Purpose, timeout: Duration) -> Bool {
        guard !isClosed, purpose == nil, case .http(let request, _, _, _) = next else { return false }
        if !Sockets.peerStillOpen(fd, tls: tls != nil) {
            abort(NetError(.connectionClosed, "Idle connection closed by the peer"))
            return false
        }
        purpose = next
        reused = true
        answerStarted = false
        deadline = .max
        armTimer(timeout)
        write(request)
        return true
    }

    /// After a complete answer: park for the next request if the exchange left the
    /// connection clean, else close it.
    private func finishExchange(_ response: HTTPResponse, unread: Int) {
        if let poolKey, unread == 0, pendingOutputCount == 0,
            response.allowsReuse, response.status.code >= 200
        {
            deadline = monotonicNanos() &+ pool.idleNanos
            if pool.park(self, key: poolKey) { return }
        }
        closeAfterFlush()
    }

    private func complete(_ failure: NetError) {
        guard let p = purpose else { return }
        purpose = nil
        timer?.cancel()
        switch p {
        case .http(_, _, _, let done):
            done(.failure(failure), reused && !answerStarted && failure.code != .timedOut)
        case .webSocket(_, _, _, _, let done): done(.failure(failure))
        }
    }

    override func transportReady() {
        switch purpose {
        case .http(let request, _, _, _): write(request)
        case .webSocket(let request, _, _, _, _): write(request)
        case nil: break
        }
    }

    override func didClose(error: NetError?) {
        loop.removeTick(self)
        if purpose == nil, let poolKey { _ = pool.remove(self, key: poolKey) }
        complete(error ?? NetError(.connectionClosed, "Connection closed"))
    }

    override func deadlineExpired() {
        guard purpose == nil, let poolKey else {
            super.deadlineExpired()
            return
        }
        // Idle too long. If it is no longer parked, a request took it and is on its way here.
        if pool.remove(self, key: poolKey) {
            closeAfterFlush()
        } else {
            deadline = .max
        }
    }

    override func inputEnded(buffered: UnsafeRawBufferPointer) {
        guard case .http(_, let headOnly, let limits, let done) = purpose else { return }
        if buffered.isEmpty {
            complete(NetError(.connectionClosed, "Connection closed before a response"))
            return
        }
        do throws(HTTPParseError) {
            if let (response, _) = try HTTPResponseParser.parse(
                buffered, limits: limits, atEOF: true, headOnly: headOnly)
            {
                purpose = nil
                timer?.cancel()
                closeAfterFlush()
                done(.success(response), false)
            }
        } catch {
            complete(NetError(.protocolError, "Malformed HTTP response: \(error.message)"))
            abort(NetError(.protocolError, error.message))
        }
    }

    override func processBytes(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch purpose {
        case nil:
            // Bytes nobody asked for: the stream is out of step; never reuse it.
            if poolKey != nil { abort(NetError(.protocolError, "Unrequested bytes on an idle connection")) }
            return bytes.count
        case .http(_, let headOnly, let limits, let done):
            if !bytes.isEmpty { answerStarted = true }
            do throws(HTTPParseError) {
                guard
                    let (response, used) = try HTTPResponseParser.parse(
                        bytes, limits: limits, headOnly: headOnly)
                else { return 0 }
                purpose = nil
                timer?.cancel()
                finishExchange(response, unread: bytes.count - used)
                done(.success(response), false)
                return bytes.count
            } catch {
                complete(NetError(.protocolError, "Malformed HTTP response: \(error.message)"))
                abort(NetError(.protocolError, error.message))
                return bytes.count
            }
        case .webSocket(_, let key, let url, let options, let done):
            let parsed: (response: HTTPResponse, consumed: Int)?
            do throws(HTTPParseError) {
                parsed = try HTTPResponseParser.parse(bytes, headOnly: true)
            } catch {
                complete(NetError(.handshakeFailed, "Malformed handshake response: \(error.message)"))
                abort(NetError(.handshakeFailed, error.message))
                return bytes.count
            }
            guard let (response, used) = parsed else { return 0 }
            if let refusal = WebSocketHandshake.check(response, key: key) {
                complete(refusal)
                abort(
                    NetError(.handshakeFailed, response.status.code == 101 ? "invalid handshake" : "refused"))
                return bytes.count
            }
            purpose = nil
            timer?.cancel()
            let socket = WebSocket(
                loop: loop, path: url.target, remoteAddress: remote, clientAddress: remote.ip)
            socket.connection = self
            becomeWebSocket(role: .client, socket: socket, options: options)
            done(.success(socket))
            return used
        }
    }
}

/// Opens a client connection to `url`, trying each resolved address in turn.
private func openClient(
    url: NetURL, tls: TLSClientConfiguration, timeout: Duration, loop: EventLoop, poolKey: String? = nil,
    pool: HTTPConnectionPool = .shared,
    makePurpose: @escaping @Sendable (@escaping @Sendable (NetError) -> Void) -> ClientConnection.Purpose,
    fail: @escaping @Sendable (NetError) -> Void
) {
    let context: TLSContext?
    do throws(NetError) {
        context = url.isSecure ? try clientContext(tls) : nil
    } catch {
        fail(error)
        return
    }
    let host = url.host
    let port = url.port
    @Sendable func attempt(_ addresses: [SocketAddress], _ index: Int) {
        guard index < addresses.count else { return }
        let address = addresses[index]
        let isLast = index == addresses.count - 1
        let onFailure: @Sendable (NetError) -> Void = { error in
            if error.code == .connectFailed && !isLast { attempt(addresses, index + 1) } else { fail(error) }
        }
        let fd: Int32
        do throws(NetError) {
            fd = try Sockets.startConnect(to: address)
        } catch {
            onFailure(error)
            return
        }
        var stream: TLSStream?
        if let context {
            do throws(NetError) {
                stream = try TLSStream(context: context, fd: fd, hostName: host)
            } catch {
                Glibc.close(fd)
                fail(error)
                return
            }
        }
        let purpose = makePurpose(onFailure)
        let connection = ClientConnection(
            fd: fd, loop: loop, tls: stream, remote: address, purpose: purpose, timeout: timeout,
            poolKey: poolKey, pool: pool)
        _ = connection.startConnecting()
    }
    if let numeric = SocketAddress(numericHost: host, port: port) {
        loop.execute { attempt([numeric], 0) }
    } else {
        let resolve: @Sendable () throws -> [SocketAddress] = {
            try SocketAddress.resolve(host: host, port: port)
        }
        let resolved: @Sendable (Result<[SocketAddress], any Error>) -> Void = { result in
            switch result {
            case .success(let addresses): attempt(addresses, 0)
            case .failure(let error): fail(error as? NetError ?? NetError(.resolveFailed, "\(error)"))
            }
        }
        loop.runBlocking(resolve, then: resolved)
    }
}

/// A blocking call on a loop thread would stall every connection of the loop (or wait for the
/// loop itself, forever).
private let blockingOnLoop = NetError(
    .invalidState, "Blocking network call on an event loop thread; use the callback or async API")

/// Blocks the calling thread on a callback-style operation.
private func waitFor<T: Sendable>(_ start: (@escaping @Sendable (Result<T, NetError>) -> Void) -> Void)
    throws(NetError)
    -> T
{
    if EventLoop.currentThreadIsLoop { throw blockingOnLoop }
    let box = Locked<Result<T, NetError>?>(nil)
    let semaphore = DispatchSemaphore(value: 0)
    start { result in
        box.withLock { $0 = result }
        semaphore.signal()
    }
    semaphore.wait()
    return try box.withLock { $0! }.get()
}

/// A minimal HTTP/1.1 client. Connections are kept alive and reused (``HTTPConnectionPool``)
/// unless the request sets its own `Connection` header. A request that fails on a reused
/// connection before any byte of the answer came (the server had closed the idle connection)
/// is sent again once on a new connection when that is safe: always if it was never sent
/// (the connection was found closed first), otherwise only for idempotent methods, since a
/// POST the server did receive must not be done twice.
public enum HTTPClient {
    /// Sends a request; `completion` runs on a client loop (`loop` if given: then only
    /// connections on that loop are reused).
    public static func request(
        _ method: HTTPMethod, url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(30),
        limits: HTTPParserLimits = HTTPParserLimits(), loop: EventLoop? = nil,
        completion: @escaping @Sendable (Result<HTTPResponse, NetError>) -> Void
    ) {
        request(
            method, url: url, headers: headers, body: body, tls: tls, timeout: timeout, limits: limits,
            loop: loop, pool: .shared, completion: completion)
    }

    static func request(
        _ method: HTTPMethod, url: String, headers: HTTPHeaders, body: [UInt8],
        tls: TLSClientConfiguration, timeout: Duration, limits: HTTPParserLimits, loop: EventLoop?,
        pool: HTTPConnectionPool, completion: @escaping @Sendable (Result<HTTPResponse, NetError>) -> Void
    ) {
        let parsed: NetURL
        do throws(NetError) {
            parsed = try httpURL(url)
        } catch {
            completion(.failure(error))
            return
        }
        let bytes = requestBytes(method, parsed, headers: headers, body: body)
        let poolKey = poolKey(parsed, headers: headers, tls: tls)
        let once = Atomic<Bool>(false)
        let finish: @Sendable (Result<HTTPResponse, NetError>) -> Void = { result in
            if !once.exchange(true, ordering: .acquiringAndReleasing) { completion(result) }
        }
        let headOnly = method == .head
        @Sendable func fresh() {
            openClient(
                url: parsed, tls: tls, timeout: timeout, loop: loop ?? EventLoopGroup.clients.nextLoop(),
                poolKey: poolKey, pool: pool,
                makePurpose: { onFailure in
                    .http(request: bytes, headOnly: headOnly, limits: limits) { result, _ in
                        switch result {
                        case .success: finish(result)
                        case .failure(let error): onFailure(error)
                        }
                    }
                }, fail: { finish(.failure($0)) })
        }
        @Sendable func attempt() {
            guard let poolKey, let connection = pool.take(poolKey, on: loop) else {
                fresh()
                return
            }
            connection.loop.execute {
                let purpose = ClientConnection.Purpose.http(
                    request: bytes, headOnly: headOnly, limits: limits
                ) { result, staleReuse in
                    if case .failure = result, staleReuse, method.isIdempotent {
                        fresh()
                    } else {
                        finish(result)
                    }
                }
                // Found dead before sending: the server never saw it; try the next one.
                if !connection.reuse(purpose, timeout: timeout) { attempt() }
            }
        }
        attempt()
    }

    /// Sends a request and waits for the response (blocking; not on a loop thread).
    public static func send(
        _ method: HTTPMethod, url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(30)
    ) throws(NetError) -> HTTPResponse {
        // On the calling thread (``DirectHTTP``): no loop to hand the request to and wait for.
        if EventLoop.currentThreadIsLoop { throw blockingOnLoop }
        return try send(
            method, url: url, headers: headers, body: body, tls: tls, timeout: timeout, pool: .shared)
    }

    static func send(
        _ method: HTTPMethod, url: String, headers: HTTPHeaders, body: [UInt8], tls: TLSClientConfiguration,
        timeout: Duration, pool: DirectConnectionPool
    ) throws(NetError) -> HTTPResponse {
        let parsed = try httpURL(url)
        return try DirectHTTP.send(
            method, url: parsed, request: requestBytes(method, parsed, headers: headers, body: body),
            poolKey: poolKey(parsed, headers: headers, tls: tls), tls: tls, timeout: timeout, pool: pool)
    }

    /// An `http`/`https` URL.
    private static func httpURL(_ url: String) throws(NetError) -> NetURL {
        let parsed = try NetURL(url)
        guard parsed.scheme == "http" || parsed.scheme == "https" else {
            throw NetError(.invalidURL, "HTTP needs an http:// or https:// URL")
        }
        return parsed
    }

    /// The request's bytes on the wire: head, then body.
    private static func requestBytes(_ method: HTTPMethod, _ url: NetURL, headers: HTTPHeaders, body: [UInt8])
        -> [UInt8]
    {
        var head = "\(method.rawValue) \(url.target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\n"
        var fields = headers
        if !body.isEmpty || method == .post || method == .put || method == .patch {
            fields.set("Content-Length", String(body.count))
        }
        for (name, value) in fields { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }

    /// Where the connection is kept alive between requests; nil when the request sets its own
    /// `Connection` header (one request, then close).
    private static func poolKey(_ url: NetURL, headers: HTTPHeaders, tls: TLSClientConfiguration) -> String? {
        headers["Connection"] == nil ? HTTPConnectionPool.key(url, tls) : nil
    }

    /// Sends a request and awaits the response.
    public static func request(
        _ method: HTTPMethod, url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(30)
    ) async throws -> HTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            request(method, url: url, headers: headers, body: body, tls: tls, timeout: timeout) { result in
                continuation.resume(with: result)
            }
        }
    }

    /// Sends a JSON body (`Content-Type: application/json`) and awaits the response.
    public static func request<T: Encodable>(
        _ method: HTTPMethod, url: String, json: T, headers: HTTPHeaders = HTTPHeaders(),
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(30)
    ) async throws -> HTTPResponse {
        var fields = headers
        fields.set("Content-Type", "application/json")
        let body = Array(try JSONEncoder().encode(json))
        return try await request(method, url: url, headers: fields, body: body, tls: tls, timeout: timeout)
    }

    /// Sends a JSON body (`Content-Type: application/json`) and waits (blocking).
    public static func send<T: Encodable>(
        _ method: HTTPMethod, url: String, json: T, headers: HTTPHeaders = HTTPHeaders(),
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(30)
    ) throws(NetError) -> HTTPResponse {
        var fields = headers
        fields.set("Content-Type", "application/json")
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(json))
        } catch {
            throw NetError(.invalidState, "Cannot encode JSON: \(error)")
        }
        return try send(method, url: url, headers: fields, body: body, tls: tls, timeout: timeout)
    }
}

/// WebSocket client (`ws://`, `wss://`). Reconnecting is the caller's business.
public enum WebSocketClient {
    /// Connects; `completion` runs on `loop` with the open socket, before any message is read
    /// (set handlers there, or use the queue/stream/receive API later).
    public static func connect(
        url: String, headers: HTTPHeaders = HTTPHeaders(), options: WebSocketOptions = WebSocketOptions(),
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(10),
        loop: EventLoop = EventLoopGroup.clients.nextLoop(),
        completion: @escaping @Sendable (Result<WebSocket, NetError>) -> Void
    ) {
        let parsed: NetURL
        do throws(NetError) {
            parsed = try webSocketURL(url)
        } catch {
            completion(.failure(error))
            return
        }
        let key = WebSocketHandshake.makeKey()
        let request = WebSocketHandshake.request(parsed, key: key, headers: headers)
        let once = Atomic<Bool>(false)
        let finish: @Sendable (Result<WebSocket, NetError>) -> Void = { result in
            if !once.exchange(true, ordering: .acquiringAndReleasing) { completion(result) }
        }
        openClient(
            url: parsed, tls: tls, timeout: timeout, loop: loop,
            makePurpose: { onFailure in
                .webSocket(request: request, key: key, url: parsed, options: options) { result in
                    switch result {
                    case .success: finish(result)
                    case .failure(let error): onFailure(error)
                    }
                }
            }, fail: { finish(.failure($0)) })
    }

    /// Connects and waits (blocking; not on a loop thread).
    public static func connect(
        url: String, headers: HTTPHeaders = HTTPHeaders(), options: WebSocketOptions = WebSocketOptions(),
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(10)
    ) throws(NetError) -> WebSocket {
        try waitFor { done in
            connect(
                url: url, headers: headers, options: options, tls: tls, timeout: timeout, completion: done)
        }
    }

    /// Connects and returns a socket read and written by the calling thread (blocking; see
    /// ``BlockingWebSocket``): for a client that waits for each message anyway, without the
    /// event loop's thread between it and the socket.
    public static func connectBlocking(
        url: String, headers: HTTPHeaders = HTTPHeaders(), options: WebSocketOptions = WebSocketOptions(),
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(10)
    ) throws(NetError) -> BlockingWebSocket {
        if EventLoop.currentThreadIsLoop { throw blockingOnLoop }
        let parsed = try webSocketURL(url)
        let deadline = monotonicNanos() &+ timeout.nanoseconds
        let transport = try DirectTransport.open(parsed, tls: tls, deadline: deadline, timeout: timeout)
        let timedOut = NetError(.timedOut, "No answer from \(transport.remote) within \(timeout)")
        let key = WebSocketHandshake.makeKey()
        guard
            try transport.write(
                WebSocketHandshake.request(parsed, key: key, headers: headers), until: deadline)
        else { throw timedOut }
        var answer: [UInt8] = []
        while true {
            guard let count = try transport.read(appendingTo: &answer, until: deadline) else {
                throw timedOut
            }
            guard count > 0 else { throw NetError(.connectionClosed, "Peer closed the connection") }
            let reply: (response: HTTPResponse, consumed: Int)?
            do throws(HTTPParseError) {
                reply = try HTTPResponseParser.parse(answer, headOnly: true)
            } catch {
                throw NetError(.handshakeFailed, "Malformed handshake response: \(error.message)")
            }
            guard let (response, used) = reply else { continue }
            if let refusal = WebSocketHandshake.check(response, key: key) { throw refusal }
            return BlockingWebSocket(
                transport: transport, path: parsed.target, options: options, leftover: Array(answer[used...]))
        }
    }

    /// A `ws`/`wss` URL.
    private static func webSocketURL(_ url: String) throws(NetError) -> NetURL {
        let parsed = try NetURL(url)
        guard parsed.scheme == "ws" || parsed.scheme == "wss" else {
            throw NetError(.invalidURL, "WebSocket needs a ws:// or wss:// URL")
        }
        return parsed
    }

    /// Connects and awaits the open socket.
    public static func open(
        url: String, headers: HTTPHeaders = HTTPHeaders(), options: WebSocketOptions = WebSocketOptions(),
        tls: TLSClientConfiguration = TLSClientConfiguration(), timeout: Duration = .seconds(10)
    ) async throws -> WebSocket {
        try await withCheckedThrowingContinuation { continuation in
            connect(url: url, headers: headers, options: options, tls: tls, timeout: timeout) { result in
                continuation.resume(with: result)
            }
        }
    }
}

extension WebSocketHandshake {
    /// A client's upgrade request for `url` with `key`.
    static func request(_ url: NetURL, key: String, headers: HTTPHeaders) -> [UInt8] {
        var head =
            "GET \(url.target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\nUpgrade: websocket\r\n"
            + "Connection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    /// Why the server's answer to an upgrade request with `key` does not open a WebSocket; nil
    /// when it does (no extension and no subprotocol: we ask for none).
    static func check(_ response: HTTPResponse, key: String) -> NetError? {
        guard response.status.code == 101 else {
            return NetError(.handshakeFailed, "Server refused the WebSocket upgrade: \(response.status)")
        }
        let headers = response.headers
        guard headers.containsToken("Upgrade", "websocket"), headers.containsToken("Connection", "upgrade"),
            headers["Sec-WebSocket-Accept"] == acceptValue(forKey: key),
            headers["Sec-WebSocket-Extensions"] == nil, headers["Sec-WebSocket-Protocol"] == nil
        else { return NetError(.handshakeFailed, "Invalid WebSocket handshake response") }
        return nil
    }
}
