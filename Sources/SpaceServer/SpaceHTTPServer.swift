import Foundation
import Net
import Support

/// Everything `eleven-server` needs to run: where to listen, the database, TLS, limits.
public struct SpaceHTTPConfiguration: Sendable {
    /// Addresses to listen on; loopback by default.
    public var listenAddresses: [SocketAddress] = [SocketAddress(numericHost: "127.0.0.1", port: 8711)!]
    /// The SQLite database file.
    public var databasePath: String
    /// The URL clients use to reach this server (shown in logs; defaults to the first address).
    public var publicURL: String?
    /// Serve HTTPS with these files (reloaded by ``SpaceHTTPServer/reloadCertificates()``).
    public var tls: TLSServerConfiguration?
    /// Limits and policy of the API.
    public var api = SpaceServerConfiguration()
    /// The longest long-poll a client may ask for (`wait=` seconds).
    public var maximumWaitSeconds = 60
    /// Event loop threads.
    public var loopCount = 2
    /// Where JSON log lines go.
    public var log = ServerLog.silent
    /// `/.well-known/apple-app-site-association` (JSON); 404 when nil.
    public var appleAppSiteAssociation: [UInt8]?
    /// `/.well-known/assetlinks.json`; 404 when nil.
    public var assetLinks: [UInt8]?
    /// The time the API goes by (tests move a ``ManualClock`` to expire what they issued).
    public var clock: any WallClock = SystemClock()

    public init(databasePath: String) {
        self.databasePath = databasePath
    }
}

/// The space server on HTTP: maps Net's requests onto ``SpaceAPI`` (SQLite work runs on the
/// blocking pool, never on a loop thread), answers `/healthz`, and delivers new messages to
/// long-polls (`GET …/messages?since=C&wait=S`) as soon as they are committed.
public final class SpaceHTTPServer: Sendable {
    /// The request handling behind the HTTP layer.
    public let api: SpaceAPI
    private let server: Server
    private let waits: MessageWaits
    /// Runs long-poll timeouts.
    private let timers: EventLoopGroup
    private let configuration: SpaceHTTPConfiguration

    /// Opens the database and prepares the routes; nothing listens until ``start()``.
    public init(configuration: SpaceHTTPConfiguration) throws {
        let waits = MessageWaits()
        self.waits = waits
        self.configuration = configuration
        var apiConfiguration = configuration.api
        apiConfiguration.homeMail?.log = configuration.log
        api = try SpaceAPI(
            databasePath: configuration.databasePath, configuration: apiConfiguration,
            clock: configuration.clock,
            observer: { change in
                if case .message(let space, let thread, _) = change {
                    waits.notify(MessageWaits.key(space: space.base64URL, thread: thread.base64URL))
                }
            })
        timers = EventLoopGroup(loopCount: 1, name: "space-waits")
        var serverConfiguration = ServerConfiguration(listenAddresses: configuration.listenAddresses)
        serverConfiguration.tls = configuration.tls
        serverConfiguration.loopCount = configuration.loopCount
        // The parser refuses a larger body from its Content-Length, before reading it.
        serverConfiguration.limits.http.maxBodyBytes = configuration.api.maximumBodyBytes
        let router = HTTPRouter()
        server = Server(configuration: serverConfiguration, router: router)
        // A real read of the database (and a write while writes fail): on the blocking pool.
        router.add(
            .get, "/healthz",
            deferred: { [api] _, responder in
                BlockingPool.shared.submit { responder.respond(Self.httpResponse(api.health())) }
            })
        // The welcome page of invite links and its files: static, compiled in (WelcomePage).
        let log = configuration.log
        for path in WelcomePage.pagePaths + [WelcomePage.scriptPath, WelcomePage.stylePath] {
            let response = WelcomePage.response(for: path)!
            router.add(.get, path) { request in
                // The path only: browsers never send the fragment, and the query is not logged.
                log.log("request", ["method": "GET", "path": request.path, "status": 200])
                return response
            }
        }
        let wellKnown = zip(
            WelcomePage.wellKnownPaths, [configuration.appleAppSiteAssociation, configuration.assetLinks])
        for (path, body) in wellKnown {
            let response = WelcomePage.wellKnown(body)
            router.add(.get, path) { _ in response }
        }
        // Every /api path of up to seven segments goes to the API, which routes it.
        for depth in 1...7 {
            let path = "/api" + (1...depth).map { "/:p\($0)" }.joined()
            for method in [HTTPMethod.get, .post, .put, .delete] {
                router.add(method, path) { [self] request, responder in
                    handle(request, responder)
                }
            }
        }
    }

    /// Binds and starts serving.
    public func start() throws(NetError) {
        try server.start()
        configuration.log.log(
            "listening",
            [
                "addresses": server.localAddresses.map { "\($0)" },
                "publicURL": configuration.publicURL ?? baseURL,
                "database": configuration.databasePath,
                "tls": configuration.tls != nil,
            ])
    }

    /// The bound addresses (after ``start()``).
    public var localAddresses: [SocketAddress] { server.localAddresses }

    /// `http(s)://address:port` of the first bound address.
    public var baseURL: String {
        let scheme = configuration.tls == nil ? "http" : "https"
        return "\(scheme)://\(server.localAddresses.first.map { "\($0)" } ?? "?")"
    }

    /// Clients waiting in long-polls right now.
    public var waitingClients: Int { waits.waiterCount }

    /// Re-reads the TLS certificate and key (new connections use them).
    public func reloadCertificates() throws(NetError) {
        try server.reloadCertificates()
        configuration.log.log("certificates_reloaded")
    }

    /// Stops accepting, lets running requests finish, and closes the loops.
    public func shutdown() {
        configuration.log.log("stopping")
        waits.wakeAll()
        server.shutdown()
        timers.shutdown()
        configuration.log.log("stopped")
    }

    // MARK: Requests

    /// Threads that run long-polls: a request waits on one while its batch is committed
    /// (``SpaceAPI/handle(_:)``). Shared by every server of the process.
    private static let pool = BlockingPool(threads: 16)

    private func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        let started = DispatchTime.now().uptimeNanoseconds
        var headers: [String: String] = [:]
        for (name, value) in request.headers { headers[name] = value }
        let apiRequest = APIRequest(
            method: request.method.rawValue, target: request.target, headers: headers, body: request.body,
            remoteAddress: request.clientAddress.map { "\($0)" } ?? "")
        let log = configuration.log
        let respond: @Sendable (APIResponse) -> Void = { response in
            responder.respond(Self.httpResponse(response))
            log.log(
                "request",
                [
                    "method": request.method.rawValue, "path": request.path, "status": response.status,
                    "ms": Double((DispatchTime.now().uptimeNanoseconds - started) / 1000) / 1000,
                    "client": apiRequest.remoteAddress,
                ])
        }
        let wait: Int
        switch longPollWait(request) {
        case .none: wait = 0
        case .seconds(let seconds): wait = seconds
        case .invalid(let error):
            respond(error.response)
            return
        }
        guard wait > 0, let key = Self.waitKey(request.path) else {
            // Queued from the loop; answered by the thread that commits its batch.
            api.handle(apiRequest, answer: respond)
            return
        }
        Self.pool.submit { [self] in
            let seen = waits.version(key)
            let first = api.handle(apiRequest)
            guard first.status == 200, Self.isEmptyMessageList(first.body) else {
                respond(first)
                return
            }
            let timer = LoopTimerBox()
            let id = waits.register(key, seen: seen) { [api] in
                timer.cancel()
                Self.pool.submit { respond(api.handle(apiRequest)) }
            }
            guard let id else {
                // A message arrived meanwhile: read again at once.
                respond(api.handle(apiRequest))
                return
            }
            timer.set(
                timers.nextLoop().schedule(after: .seconds(wait)) { [waits] in
                    if waits.cancel(key, id: id) { respond(first) }
                })
        }
    }

    static func httpResponse(_ response: APIResponse) -> HTTPResponse {
        var http = HTTPResponse(status: HTTPStatus(response.status, Self.reason(response.status)))
        http.headers.set("Content-Type", response.contentType)
        http.headers.set("Cache-Control", "no-store")
        for (name, value) in response.headers { http.headers.set(name, value) }
        http.body = response.body
        return http
    }

    private enum Wait {
        case none
        case seconds(Int)
        case invalid(APIError)
    }

    /// The `wait` query parameter of a message listing.
    private func longPollWait(_ request: HTTPRequest) -> Wait {
        // Most requests have no query, or one without `wait` (`from=`): decoding it into a
        // dictionary cost about 1% of the server's CPU. A key can only decode to `wait` if it
        // says so or is percent-encoded.
        guard request.method == .get, let query = request.query, Self.mayName("wait", query),
            let text = request.queryParameters["wait"]
        else { return .none }
        guard let seconds = Int(text), seconds >= 0, seconds <= configuration.maximumWaitSeconds else {
            return .invalid(
                .badRequest(
                    .invalidQuery,
                    "Query parameter wait must be between 0 and \(configuration.maximumWaitSeconds) seconds.")
            )
        }
        return .seconds(seconds)
    }

    /// Whether a query may have a parameter called `name`: it says it, or has percent-encoding.
    /// (Bytes, not Foundation's `contains`, which bridges to `NSString`.)
    static func mayName(_ name: StaticString, _ query: String) -> Bool {
        var query = query
        return query.withUTF8 { bytes in
            let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            if bytes.contains(UInt8(ascii: "%")) { return true }
            guard bytes.count >= wanted.count else { return false }
            return (0...(bytes.count - wanted.count)).contains { start in
                bytes[start..<start + wanted.count].elementsEqual(wanted)
            }
        }
    }

    /// `space/thread` for `/api/spaces/{space}/threads/{thread}/messages`, else nil.
    static func waitKey(_ path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 7, parts[1] == "api", parts[2] == "spaces", parts[4] == "threads",
            parts[6] == "messages"
        else { return nil }
        return MessageWaits.key(space: String(parts[3]), thread: String(parts[5]))
    }

    /// Whether a message listing is empty. The API encodes with sorted keys, so an empty list
    /// starts with exactly these bytes.
    static func isEmptyMessageList(_ body: [UInt8]) -> Bool {
        body.starts(with: Array(#"{"messages":[],"#.utf8))
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 503: "Service Unavailable"
        default: status >= 500 ? "Server Error" : "Status"
        }
    }
}

/// Holds a long-poll's timer so a wake-up can cancel it, whichever comes first. (A timer that
/// still fires finds its waiter gone and does nothing.)
private final class LoopTimerBox: Sendable {
    private let state = Locked<(timer: LoopTimer?, cancelled: Bool)>((nil, false))

    func set(_ timer: LoopTimer) {
        let cancelled = state.withLock { state in
            state.timer = timer
            return state.cancelled
        }
        if cancelled { timer.cancel() }
    }

    func cancel() {
        let timer = state.withLock { state in
            state.cancelled = true
            return state.timer
        }
        timer?.cancel()
    }
}
