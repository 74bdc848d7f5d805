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
        /// A path segment: matched literally, or captured under a name.
        enum Segment {
            case literal(Substring)
            case capture(String)
        }

        let method: HTTPMethod
        let segments: [Segment]
        let handler: Handler

        /// Whether `parts` (as many as ``segments``) fit, without building the captures: most
        /// routes a request is tried against do not.
        func accepts(_ parts: ArraySlice<Substring>) -> Bool {
            for (segment, part) in zip(segments, parts) {
                switch segment {
                case .literal(let literal): if literal != part { return false }
                case .capture: if part.isEmpty { return false }
                }
            }
            return true
        }

        func captures(_ parts: ArraySlice<Substring>) -> [String: String] {
            var parameters: [String: String] = [:]
            for case (.capture(let name), let part) in zip(segments, parts) {
                // Foundation's decoding is slow; most parts have nothing to decode. (Bytes, not
                // `contains("%")`: that is Foundation's string search.)
                parameters[name] =
                    part.utf8.contains(UInt8(ascii: "%"))
                    ? String(part).removingPercentEncoding ?? String(part) : String(part)
            }
            return parameters
        }
    }

    private let routes = Locked<[Route]>([])

    public init() {}

    /// Adds a route.
    public func add(_ method: HTTPMethod, _ path: String, handler: Handler) {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            $0.hasPrefix(":") ? Route.Segment.capture(String($0.dropFirst())) : .literal($0)
        }
        routes.withLock { $0.append(Route(method: method, segments: segments, handler: handler)) }
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
        let parts = ArraySlice(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst())
        let lookup = method == .head ? HTTPMethod.get : method
        return routes.withLock { routes in
            var allowed: [HTTPMethod] = []
            for route in routes where route.segments.count == parts.count && route.accepts(parts) {
                if route.method == lookup { return .found(route.handler, route.captures(parts)) }
                allowed.append(route.method)
            }
            return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
        }
    }
}
