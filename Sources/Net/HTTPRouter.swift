import Support
import Synchronization

/// Answers a request later, from any thread, exactly once (further calls are ignored).
public final class HTTPResponder: Sendable {
    private let body: @Sendable (HTTPResponse) -> Void
    private let used = Atomic<Bool>(false)
    init(_ body: @escaping @Sendable (HTTPResponse) -> Void) { self.body = body }

    /// Sends the response.
    public func respond(_ response: HTTPResponse) {
        guard !used.exchange(true, ordering: .acquiringAndReleasing) else { return }
        body(response)
    }
}

/// Routes requests by method and path to handlers, for small JSON APIs.
/// Paths are literal segments or `:name` captures (`/v1/spaces/:id/members`).
public final class HTTPRouter: Sendable {
    /// How a route answers.
    public enum Handler: Sendable {
        /// Runs on the loop thread; must not block.
        case immediate(@Sendable (HTTPRequest) -> HTTPResponse)
        /// Runs on the loop thread and answers through the responder, from any thread, later.
        case deferred(@Sendable (HTTPRequest, HTTPResponder) -> Void)
        /// Runs as a Swift task.
        case async(@Sendable (HTTPRequest) async -> HTTPResponse)
    }

    struct Route {
        let method: HTTPMethod
        let segments: [Substring]
        let handler: Handler
    }

    private let routes = Locked<[Route]>([])

    public init() {}

    /// Adds a route.
    public func add(_ method: HTTPMethod, _ path: String, handler: Handler) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        routes.withLock { $0.append(Route(method: method, segments: Array(segments), handler: handler)) }
    }

    /// Adds a route answered on the loop thread.
    public func add(
        _ method: HTTPMethod, _ path: String, _ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) {
        add(method, path, handler: .immediate(handler))
    }

    /// Adds a route answered later through a responder (e.g. after ``EventLoop/runBlocking(_:then:)``).
    public func add(
        _ method: HTTPMethod, _ path: String,
        deferred: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void
    ) {
        add(method, path, handler: .deferred(deferred))
    }

    /// Adds a route answered by an async function.
    public func add(
        _ method: HTTPMethod, _ path: String,
        async handler: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        add(method, path, handler: .async(handler))
    }

    /// `GET` route answered on the loop thread.
    public func get(_ path: String, _ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        add(.get, path, handler)
    }

    /// `POST` route answered on the loop thread.
    public func post(_ path: String, _ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        add(.post, path, handler)
    }

    /// The outcome of matching a request.
    enum Match {
        case found(Handler, [String: String])
        case methodNotAllowed([HTTPMethod])
        case notFound
    }

    func match(method: HTTPMethod, path: String) -> Match {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let lookup = method == .head ? HTTPMethod.get : method
        return routes.withLock { routes in
            var allowed: [HTTPMethod] = []
            for route in routes where route.segments.count == parts.count {
                var parameters: [String: String] = [:]
                var matched = true
                for (pattern, part) in zip(route.segments, parts) {
                    if pattern.hasPrefix(":") {
                        if part.isEmpty {
                            matched = false
                            break
                        }
                        // Foundation's decoding is slow; most parts have nothing to decode.
                        parameters[String(pattern.dropFirst())] =
                            part.contains("%")
                            ? String(part).removingPercentEncoding ?? String(part) : String(part)
                    } else if pattern != part {
                        matched = false
                        break
                    }
                }
                guard matched else { continue }
                if route.method == lookup { return .found(route.handler, parameters) }
                allowed.append(route.method)
            }
            return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
        }
    }
}
